#include "trainscope/email.h"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <ctime>

#include "actions/async_sender.h"
#include "actions/curl_util.h"

namespace trainscope {

using actions_internal::AsyncSender;
using actions_internal::AttemptResult;
using actions_internal::CurlHandle;
using actions_internal::CurlList;

namespace {

constexpr size_t kWrapColumn = 76;

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// One header line's value: CR, LF and other control characters become spaces.
std::string HeaderSafe(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return out;
}

bool IsAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

std::string Base64(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (static_cast<uint8_t>(in[i]) << 16) | (static_cast<uint8_t>(in[i + 1]) << 8) |
                 static_cast<uint8_t>(in[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (static_cast<uint8_t>(in[i]) << 16) | (static_cast<uint8_t>(in[i + 1]) << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

// RFC 2047 "encoded word" when the text is not plain ASCII.
std::string EncodeHeaderText(std::string_view text) {
  std::string safe = HeaderSafe(text);
  if (IsAscii(safe)) return safe;
  return "=?UTF-8?B?" + Base64(safe) + "?=";
}

// RFC 5322 date, in UTC: "Sat, 21 Nov 2026 10:00:00 +0000".
std::string RfcDate(int64_t micros) {
  time_t t = static_cast<time_t>(micros / 1000000);
  struct tm tm_utc;
  gmtime_r(&t, &tm_utc);
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%s, %02d %s %04d %02d:%02d:%02d +0000", kDays[tm_utc.tm_wday],
                tm_utc.tm_mday, kMonths[tm_utc.tm_mon], tm_utc.tm_year + 1900, tm_utc.tm_hour,
                tm_utc.tm_min, tm_utc.tm_sec);
  return buf;
}

// Word-wraps `text` at kWrapColumn, each line starting with `indent`, lines ending in CRLF.
std::string Wrap(std::string_view text, std::string_view indent) {
  std::string out, line(indent);
  size_t pos = 0;
  while (pos < text.size()) {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\n' || text[pos] == '\r')) {
      if (text[pos] == '\n') {  // keep the author's line breaks
        out += line + "\r\n";
        line = std::string(indent);
      }
      ++pos;
    }
    size_t end = text.find_first_of(" \r\n", pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view word = text.substr(pos, end - pos);
    if (word.empty()) break;
    if (line.size() > indent.size() && line.size() + 1 + word.size() > kWrapColumn) {
      out += line + "\r\n";
      line = std::string(indent);
    }
    if (line.size() > indent.size()) line += ' ';
    line += word;
    pos = end;
  }
  if (line.size() > indent.size()) out += line + "\r\n";
  return out;
}

bool ValidAddress(std::string_view a) {
  size_t at = a.find('@');
  return !a.empty() && at != std::string_view::npos && at > 0 && at + 1 < a.size() &&
         a.find('@', at + 1) == std::string_view::npos &&
         a.find_first_of(" \t\r\n<>,;\"") == std::string_view::npos;
}

struct ReadState {
  const std::string* data;
  size_t pos;
};

size_t ReadMessage(char* buffer, size_t size, size_t nitems, void* userp) {
  auto* st = static_cast<ReadState*>(userp);
  size_t n = std::min(size * nitems, st->data->size() - st->pos);
  // curl's read buffer takes bytes, not a string: no terminator wanted.
  // NOLINTNEXTLINE(bugprone-not-null-terminated-result)
  std::memcpy(buffer, st->data->data() + st->pos, n);
  st->pos += n;
  return n;
}

}  // namespace

std::string EmailNotifier::FormatMessage(const EmailOptions& options, const RuleFinding& f,
                                         int64_t now_micros) {
  static std::atomic<uint64_t> counter{0};
  const std::string host = HostName();
  std::string to;
  for (const auto& addr : options.to) {
    if (!to.empty()) to += ", ";
    to += HeaderSafe(addr);
  }
  std::string subject = options.subject_prefix.empty() ? "" : options.subject_prefix + " ";
  subject += f.rule + ": " + std::string(RuleEvaluationStatusName(f.status));
  if (f.step >= 0) subject += " at step " + std::to_string(f.step);

  std::string m;
  m += "Date: " + RfcDate(now_micros) + "\r\n";
  m += "From: " + HeaderSafe(options.from) + "\r\n";
  m += "To: " + to + "\r\n";
  m += "Subject: " + EncodeHeaderText(subject) + "\r\n";
  m += "Message-ID: <" + std::to_string(now_micros) + "." + std::to_string(::getpid()) + "." +
       std::to_string(counter.fetch_add(1)) + "@" + HeaderSafe(host) + ">\r\n";
  m += "MIME-Version: 1.0\r\n";
  m += "Content-Type: text/plain; charset=utf-8\r\n";
  m += "Content-Transfer-Encoding: 8bit\r\n";
  m += "X-Trainscope-Rule: " + EncodeHeaderText(f.rule) + "\r\n";
  m += "X-Trainscope-Status: " + std::string(RuleEvaluationStatusName(f.status)) + "\r\n";
  m += "\r\n";
  m += Wrap(DescribeFinding(f), "");
  if (!f.explanation.empty()) {
    m += "\r\nWhat was found:\r\n" + Wrap(f.explanation, "  ");
  }
  if (!f.recommendation.empty()) {
    m += "\r\nWhat to do:\r\n" + Wrap(f.recommendation, "  ");
  }
  m += "\r\nDetails:\r\n";
  m += "  Rule:      " + f.rule + "\r\n";
  m += "  Status:    " + std::string(RuleEvaluationStatusName(f.status)) + "\r\n";
  if (f.step >= 0) {
    m += "  Step:      " + std::to_string(f.step);
    if (f.mode) m += " (" + std::string(ModeName(*f.mode)) + ")";
    m += "\r\n";
  }
  if (!f.tensor.empty()) m += "  Tensor:    " + f.tensor + "\r\n";
  if (f.value) m += "  Value:     " + FindingNumber(*f.value) + "\r\n";
  if (f.threshold) m += "  Threshold: " + FindingNumber(*f.threshold) + "\r\n";
  if (f.time_micros != 0) m += "  Time:      " + FormatTimeUtc(f.time_micros) + "\r\n";
  if (!options.trial.empty()) m += "  Trial:     " + options.trial + "\r\n";
  m += "\r\n-- \r\nSent by trainscope on " + host + ".\r\n";
  return m;
}

struct EmailNotifier::Impl {
  EmailOptions options;
  std::string target;
  std::unique_ptr<AsyncSender> sender;

  // Worker thread only.
  AttemptResult Send(const std::string& message, const std::atomic<bool>& cancel) {
    CurlHandle curl(curl_easy_init());
    if (!curl) return {false, true, "curl_easy_init failed", {}};
    char errbuf[CURL_ERROR_SIZE] = {0};
    CurlList rcpt;
    for (const auto& addr : options.to) actions_internal::CurlListAppend(&rcpt, "<" + addr + ">");
    const std::string mail_from = "<" + options.from + ">";
    ReadState state{&message, 0};
    CURL* c = curl.get();
    curl_easy_setopt(c, CURLOPT_URL, options.smtp_url.c_str());
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_MAIL_FROM, mail_from.c_str());
    curl_easy_setopt(c, CURLOPT_MAIL_RCPT, rcpt.get());
    curl_easy_setopt(c, CURLOPT_READFUNCTION, &ReadMessage);
    curl_easy_setopt(c, CURLOPT_READDATA, &state);
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options.connect_timeout.count()));
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options.request_timeout.count()));
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    if (options.require_starttls)
      curl_easy_setopt(c, CURLOPT_USE_SSL, static_cast<long>(CURLUSESSL_ALL));
    if (!options.username.empty()) {
      curl_easy_setopt(c, CURLOPT_USERNAME, options.username.c_str());
      curl_easy_setopt(c, CURLOPT_PASSWORD, options.password.c_str());
    }
    actions_internal::SetCancelFlag(c, &cancel);
    CURLcode rc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    if (rc == CURLE_OK) return {true, false, "SMTP " + std::to_string(code), {}};
    std::string detail = actions_internal::CurlErrorDetail(rc, errbuf);
    if (code > 0) detail += " (last SMTP reply " + std::to_string(code) + ")";
    bool retryable;
    if (code >= 500) {
      retryable = false;  // permanent: unknown mailbox, policy rejection, bad login
    } else if (code >= 400) {
      retryable = true;  // transient: greylisting, mailbox busy, server shutting down
    } else {
      retryable = actions_internal::IsTransientCurlError(rc);
    }
    return {false, retryable, detail, {}};
  }
};

EmailNotifier::EmailNotifier(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

EmailNotifier::~EmailNotifier() { impl_->sender->Close(std::chrono::milliseconds(0)); }

Result<std::unique_ptr<EmailNotifier>> EmailNotifier::Create(EmailOptions options,
                                                             OutcomeCallback on_outcome) {
  const std::string& url = options.smtp_url;
  if (!(StartsWith(url, "smtp://") || StartsWith(url, "smtps://")) ||
      url.find_first_of(" \r\n\t") != std::string::npos || url.size() <= url.find("://") + 3) {
    return Status::InvalidArgument("email: smtp url \"" + actions_internal::RedactUrl(url) +
                                   "\" is not smtp://HOST[:PORT] or smtps://HOST[:PORT]");
  }
  if (options.to.empty()) {
    return Status::InvalidArgument("email: no recipient; give at least one to=ADDRESS");
  }
  for (const auto& addr : options.to) {
    if (!ValidAddress(addr)) {
      return Status::InvalidArgument("email: recipient \"" + addr +
                                     "\" is not an address like name@example.com");
    }
  }
  if (options.from.empty()) options.from = "trainscope@" + HostName();
  if (!ValidAddress(options.from)) {
    return Status::InvalidArgument("email: sender \"" + options.from +
                                   "\" is not an address like name@example.com");
  }
  if (options.queue_capacity == 0 || options.max_attempts < 1) {
    return Status::InvalidArgument("email: queue_capacity and max_attempts must be at least 1");
  }
  actions_internal::EnsureCurlInit();
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  std::string to;
  for (const auto& addr : impl->options.to) to += (to.empty() ? "" : ", ") + addr;
  impl->target = to + " via " + actions_internal::RedactUrl(impl->options.smtp_url);
  Impl* raw = impl.get();
  actions_internal::RetryPolicy policy{raw->options.max_attempts, raw->options.initial_backoff,
                                       raw->options.max_backoff};
  impl->sender = std::make_unique<AsyncSender>(
      "email", impl->target, impl->options.queue_capacity, policy,
      [raw](const std::string& message, const std::atomic<bool>& cancel) {
        return raw->Send(message, cancel);
      },
      std::move(on_outcome));
  return std::unique_ptr<EmailNotifier>(new EmailNotifier(std::move(impl)));
}

std::string EmailNotifier::target() const { return impl_->target; }

Status EmailNotifier::Notify(const RuleFinding& finding) {
  return impl_->sender->Enqueue(
      finding, FormatMessage(impl_->options, finding, actions_internal::WallMicros()));
}

bool EmailNotifier::Flush(std::chrono::milliseconds timeout) {
  return impl_->sender->Flush(timeout);
}

void EmailNotifier::Close(std::chrono::milliseconds drain) { impl_->sender->Close(drain); }

uint64_t EmailNotifier::delivered() const { return impl_->sender->delivered(); }
uint64_t EmailNotifier::failed() const { return impl_->sender->failed(); }
uint64_t EmailNotifier::dropped() const { return impl_->sender->dropped(); }

}  // namespace trainscope
