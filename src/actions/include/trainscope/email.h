// EmailNotifier: sends each finding as a plain-text email over SMTP (libcurl; smtp:// or
// smtps://, optional STARTTLS and login). The subject names the rule, its status and the step;
// the body gives the explanation, the recommendation and the finding's fields.
//
// Never blocks the caller: Notify() queues (bounded; a full queue drops and counts) and a worker
// thread sends, retrying connection errors, timeouts and SMTP 4xx replies with exponential
// backoff; SMTP 5xx replies (e.g. an unknown mailbox) are permanent failures.
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

struct EmailOptions {
  std::string smtp_url;         // smtp://HOST[:PORT] or smtps://HOST[:PORT]
  std::string from;             // empty: "trainscope@<hostname>"
  std::vector<std::string> to;  // at least one address
  std::string username;         // SMTP login; empty for none
  std::string password;
  bool require_starttls = false;  // smtp:// only: fail unless the server offers STARTTLS
  std::string subject_prefix = "[trainscope]";
  std::string trial;  // the trial folder, named in the body when non-empty
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds request_timeout{20000};  // whole conversation, per attempt
  int max_attempts = 4;
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{30000};
  size_t queue_capacity = 100;
};

class EmailNotifier final : public Action {
 public:
  // InvalidArgument for a URL that is not smtp(s)://HOST..., no or malformed addresses.
  static Result<std::unique_ptr<EmailNotifier>> Create(EmailOptions options,
                                                       OutcomeCallback on_outcome = {});
  ~EmailNotifier() override;

  std::string_view kind() const override { return "email"; }
  std::string target() const override;  // "a@b, c@d via smtp://host:port"
  Status Notify(const RuleFinding& finding) override;
  bool Flush(std::chrono::milliseconds timeout) override;
  void Close(std::chrono::milliseconds drain);

  uint64_t delivered() const;
  uint64_t failed() const;
  uint64_t dropped() const;

  // The whole message (headers, blank line, body; CRLF line ends) for `finding`.
  static std::string FormatMessage(const EmailOptions& options, const RuleFinding& finding,
                                   int64_t now_micros);

 private:
  struct Impl;
  explicit EmailNotifier(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainscope
