#include "trainscope/status.h"

#include <cstring>

namespace trainscope {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kCorruption:
      return "Corruption";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kIOError:
      return "IOError";
    case StatusCode::kNotSupported:
      return "NotSupported";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kOutOfRange:
      return "OutOfRange";
    case StatusCode::kAborted:
      return "Aborted";
    case StatusCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

std::string_view ErrorDetailName(ErrorDetail detail) {
  switch (detail) {
    case ErrorDetail::kNone:
      return "None";
    case ErrorDetail::kTensorUnavailable:
      return "TensorUnavailable";
    case ErrorDetail::kTensorUnavailableForStep:
      return "TensorUnavailableForStep";
    case ErrorDetail::kShapeUnavailableForStep:
      return "ShapeUnavailableForStep";
    case ErrorDetail::kStepUnavailable:
      return "StepUnavailable";
    case ErrorDetail::kStepNotYetAvailable:
      return "StepNotYetAvailable";
    case ErrorDetail::kNoMoreData:
      return "NoMoreData";
    case ErrorDetail::kInvalidWorker:
      return "InvalidWorker";
    case ErrorDetail::kMissingCollectionFiles:
      return "MissingCollectionFiles";
  }
  return "Unknown";
}

Status::Status(StatusCode code, std::string message) {
  if (code != StatusCode::kOk) {
    rep_ = std::make_shared<const Rep>(Rep{code, 0, std::move(message)});
  }
}

Status Status::FromErrno(std::string_view op, std::string_view path, int errno_value) {
  char buf[256];
  // GNU strerror_r returns the message pointer (which may not be buf).
  const char* text = strerror_r(errno_value, buf, sizeof(buf));
  Status s;
  std::string msg;
  msg.append(op).append(" ").append(path).append(": ").append(text);
  msg.append(" (errno ").append(std::to_string(errno_value)).append(")");
  s.rep_ = std::make_shared<const Rep>(Rep{StatusCode::kIOError, errno_value, std::move(msg)});
  return s;
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return rep_ ? rep_->message : kEmpty;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(rep_->code));
  out.append(": ").append(rep_->message);
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  Status s;
  std::string msg(context);
  msg.append(": ").append(rep_->message);
  s.rep_ = std::make_shared<const Rep>(
      Rep{rep_->code, rep_->os_errno, std::move(msg), rep_->detail, rep_->subject});
  return s;
}

Status Status::WithDetail(ErrorDetail detail, ErrorSubject subject) const {
  if (ok()) return *this;
  Status s;
  s.rep_ = std::make_shared<const Rep>(
      Rep{rep_->code, rep_->os_errno, rep_->message, detail, std::move(subject)});
  return s;
}

const ErrorSubject& Status::subject() const {
  static const ErrorSubject kNoSubject;
  return rep_ ? rep_->subject : kNoSubject;
}

}  // namespace trainscope
