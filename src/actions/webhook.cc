#include "trainscope/webhook.h"

#include <nlohmann/json.hpp>

#include "actions/async_sender.h"
#include "actions/curl_util.h"

namespace trainscope {

using actions_internal::AsyncSender;
using actions_internal::AttemptResult;
using actions_internal::CurlHandle;
using actions_internal::CurlList;

namespace {

constexpr size_t kMaxBodyKept = 200;  // bytes of a response body kept for the outcome detail

size_t KeepBody(char* data, size_t size, size_t nmemb, void* userp) {
  auto* body = static_cast<std::string*>(userp);
  size_t n = size * nmemb;
  if (body->size() < kMaxBodyKept) body->append(data, std::min(n, kMaxBodyKept - body->size()));
  return n;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

struct WebhookNotifier::Impl {
  WebhookOptions options;
  std::string target;
  std::unique_ptr<AsyncSender> sender;

  // Worker thread only.
  AttemptResult Send(const std::string& payload, const std::atomic<bool>& cancel) {
    CurlHandle curl(curl_easy_init());
    if (!curl) return {false, true, "curl_easy_init failed", {}};
    char errbuf[CURL_ERROR_SIZE] = {0};
    std::string body;
    CurlList headers;
    actions_internal::CurlListAppend(&headers, "Content-Type: application/json");
    actions_internal::CurlListAppend(&headers, "Expect:");  // no 100-continue round trip
    for (const auto& h : options.headers) actions_internal::CurlListAppend(&headers, h);
    CURL* c = curl.get();
    curl_easy_setopt(c, CURLOPT_URL, options.url.c_str());
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(payload.size()));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(c, CURLOPT_USERAGENT, "trainscope/0.1");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options.connect_timeout.count()));
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options.request_timeout.count()));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &KeepBody);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    actions_internal::SetCancelFlag(c, &cancel);
    CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK) {
      return {false,
              actions_internal::IsTransientCurlError(rc),
              actions_internal::CurlErrorDetail(rc, errbuf),
              {}};
    }
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    std::string detail = "HTTP " + std::to_string(code);
    if (code >= 200 && code < 300) return {true, false, detail, {}};
    if (!body.empty()) detail += ": " + body;
    const bool retryable = code >= 500 || code == 429 || code == 408;
    return {false, retryable, detail, actions_internal::RetryAfter(c)};
  }
};

WebhookNotifier::WebhookNotifier(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

WebhookNotifier::~WebhookNotifier() { impl_->sender->Close(std::chrono::milliseconds(0)); }

Result<std::unique_ptr<WebhookNotifier>> WebhookNotifier::Create(WebhookOptions options,
                                                                 OutcomeCallback on_outcome) {
  const std::string& url = options.url;
  if (!(StartsWith(url, "http://") || StartsWith(url, "https://")) ||
      url.find_first_of(" \r\n\t") != std::string::npos || url.size() <= url.find("://") + 3) {
    return Status::InvalidArgument("webhook: url \"" + actions_internal::RedactUrl(url) +
                                   "\" is not http://HOST[:PORT]/PATH or https://...");
  }
  for (const auto& h : options.headers) {
    size_t colon = h.find(':');
    if (colon == std::string::npos || colon == 0 || h.find_first_of("\r\n") != std::string::npos) {
      return Status::InvalidArgument("webhook: header \"" + h +
                                     "\" is not \"Name: value\" on one line");
    }
  }
  if (options.queue_capacity == 0) {
    return Status::InvalidArgument("webhook: queue_capacity must be at least 1");
  }
  if (options.max_attempts < 1) {
    return Status::InvalidArgument("webhook: max_attempts must be at least 1");
  }
  actions_internal::EnsureCurlInit();
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->target = actions_internal::RedactUrl(impl->options.url);
  Impl* raw = impl.get();
  actions_internal::RetryPolicy policy{raw->options.max_attempts, raw->options.initial_backoff,
                                       raw->options.max_backoff};
  impl->sender = std::make_unique<AsyncSender>(
      "webhook", impl->target, impl->options.queue_capacity, policy,
      [raw](const std::string& payload, const std::atomic<bool>& cancel) {
        return raw->Send(payload, cancel);
      },
      std::move(on_outcome));
  return std::unique_ptr<WebhookNotifier>(new WebhookNotifier(std::move(impl)));
}

std::string WebhookNotifier::target() const { return impl_->target; }

std::string WebhookNotifier::Payload(const RuleFinding& finding, const std::string& trial) {
  nlohmann::json j = nlohmann::json::parse(RuleFindingToJson(finding, FindingKeys::kActions));
  std::string text = "[trainscope] " + DescribeFinding(finding);
  if (!finding.recommendation.empty()) text += "\nRecommendation: " + finding.recommendation;
  if (!trial.empty()) text += "\nTrial: " + trial;
  j["text"] = text;
  j["source"] = "trainscope";
  if (!trial.empty()) j["trial"] = trial;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Status WebhookNotifier::Notify(const RuleFinding& finding) {
  return impl_->sender->Enqueue(finding, Payload(finding, impl_->options.trial));
}

bool WebhookNotifier::Flush(std::chrono::milliseconds timeout) {
  return impl_->sender->Flush(timeout);
}

void WebhookNotifier::Close(std::chrono::milliseconds drain) { impl_->sender->Close(drain); }

uint64_t WebhookNotifier::delivered() const { return impl_->sender->delivered(); }
uint64_t WebhookNotifier::failed() const { return impl_->sender->failed(); }
uint64_t WebhookNotifier::dropped() const { return impl_->sender->dropped(); }

}  // namespace trainscope
