#include "actions/curl_util.h"

#include <mutex>

namespace trainscope::actions_internal {
namespace {

int XferInfo(void* clientp, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* cancel = static_cast<const std::atomic<bool>*>(clientp);
  return cancel != nullptr && cancel->load() ? 1 : 0;
}

}  // namespace

void EnsureCurlInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

void CurlListAppend(CurlList* list, const std::string& item) {
  curl_slist* grown = curl_slist_append(list->get(), item.c_str());
  if (grown != nullptr) {
    // `grown` is the same list, one item longer (or a new one when it was empty): ownership
    // moves to it, nothing is freed.
    (void)list->release();
    list->reset(grown);
  }
}

void SetCancelFlag(CURL* curl, const std::atomic<bool>* cancel) {
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &XferInfo);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(cancel));
}

bool IsTransientCurlError(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

std::string CurlErrorDetail(CURLcode code, const char* errbuf) {
  std::string detail = curl_easy_strerror(code);
  if (errbuf != nullptr && errbuf[0] != '\0') {
    detail += ": ";
    detail += errbuf;
  }
  return detail;
}

std::string RedactUrl(const std::string& url) {
  size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  size_t host_start = scheme + 3;
  size_t host_end = url.find_first_of("/?#", host_start);
  size_t at = url.rfind('@', host_end == std::string::npos ? url.size() : host_end);
  if (at == std::string::npos || at < host_start) return url;
  return url.substr(0, host_start) + "***@" + url.substr(at + 1);
}

std::chrono::milliseconds RetryAfter(CURL* curl) {
  curl_off_t secs = 0;
  if (curl_easy_getinfo(curl, CURLINFO_RETRY_AFTER, &secs) == CURLE_OK && secs > 0) {
    return std::chrono::milliseconds(static_cast<int64_t>(secs) * 1000);
  }
  return std::chrono::milliseconds(0);
}

}  // namespace trainscope::actions_internal
