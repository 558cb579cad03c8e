// WebhookNotifier: POSTs each finding as JSON to an HTTP(S) URL. The body is the finding's JSON
// (finding.h) plus a Slack-compatible "text" (DescribeFinding and the recommendation), "trial"
// when known, and "source": "trainscope", so a Slack or Mattermost incoming webhook shows a
// readable message and other receivers get structured fields.
//
// Never blocks the caller: Notify() queues (bounded; a full queue drops and counts) and a worker
// thread sends, retrying 5xx, 429 and connection errors/timeouts with exponential backoff.
// 4xx other than 429 are permanent failures. Redirects are not followed.
//
// Thread safety: all methods may be called from any thread. Destroying the notifier cancels
// pending work at once; call Close(timeout) first to let it finish.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "trainscope/action.h"
#include "trainscope/finding.h"
#include "trainscope/status.h"

namespace trainscope {

struct WebhookOptions {
  std::string url;  // http:// or https://
  std::chrono::milliseconds connect_timeout{3000};
  std::chrono::milliseconds request_timeout{10000};  // whole request, per attempt
  int max_attempts = 4;                              // 1 try + 3 retries
  std::chrono::milliseconds initial_backoff{500};    // doubled after each retry ...
  std::chrono::milliseconds max_backoff{10000};      // ... up to this
  size_t queue_capacity = 100;
  std::vector<std::string> headers;  // extra "Name: value" headers (e.g. Authorization)
  std::string trial;                 // the trial folder, sent as "trial" when non-empty
};

class WebhookNotifier final : public Action {
 public:
  // InvalidArgument for a URL that is not http(s)://HOST..., a bad header or a zero capacity.
  static Result<std::unique_ptr<WebhookNotifier>> Create(WebhookOptions options,
                                                         OutcomeCallback on_outcome = {});
  ~WebhookNotifier() override;

  std::string_view kind() const override { return "webhook"; }
  std::string target() const override;  // the URL, credentials redacted
  Status Notify(const RuleFinding& finding) override;
  bool Flush(std::chrono::milliseconds timeout) override;
  // Stops accepting, lets queued work finish for up to `drain`, then cancels the rest.
  void Close(std::chrono::milliseconds drain);

  uint64_t delivered() const;
  uint64_t failed() const;
  uint64_t dropped() const;

  // The request body for `finding`.
  static std::string Payload(const RuleFinding& finding, const std::string& trial);

 private:
  struct Impl;
  explicit WebhookNotifier(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainscope
