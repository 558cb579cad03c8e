// Private: libcurl helpers shared by the webhook and email notifiers.
#pragma once

#include <curl/curl.h>

#include <atomic>
#include <memory>
#include <string>

#include "actions/async_sender.h"

namespace trainscope::actions_internal {

// curl_global_init, once per process, thread-safe.
void EnsureCurlInit();

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
using CurlHandle = std::unique_ptr<CURL, CurlDeleter>;

struct CurlSlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using CurlList = std::unique_ptr<curl_slist, CurlSlistDeleter>;

// Appends `item` to the list (curl copies it).
void CurlListAppend(CurlList* list, const std::string& item);

// Installs a progress callback on `curl` that aborts the transfer once *cancel is true.
void SetCancelFlag(CURL* curl, const std::atomic<bool>* cancel);

// Network failures worth another try: refused or reset connections, timeouts, empty replies.
bool IsTransientCurlError(CURLcode code);

// "Couldn't connect to server: <errbuf>" style detail.
std::string CurlErrorDetail(CURLcode code, const char* errbuf);

// The URL without "user:password@", for logs.
std::string RedactUrl(const std::string& url);

// The server's Retry-After, if it sent one (seconds -> milliseconds).
std::chrono::milliseconds RetryAfter(CURL* curl);

}  // namespace trainscope::actions_internal
