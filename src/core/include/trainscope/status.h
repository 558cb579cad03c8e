// Status and Result<T>: how every fallible trainscope call reports failure.
//
// A Status is OK (cheap: no allocation) or carries a code and a message that names the thing that
// failed (a path, a byte offset, a tensor) and says what to do. Result<T> holds either a value or a
// non-OK Status. Neither throws; exceptions never cross a module API (they become Python
// exceptions in the bindings and exit codes in the CLI).
//
// A failure that smdebug reports with an exception class of its own (a step not saved, training
// ended...) also carries an ErrorDetail and its ErrorSubject (the tensor, step and mode it is
// about): the bindings raise smdebug's class from these, never from the message, which is for
// people. Both types are [[nodiscard]]: ignoring one is a bug unless a `(void)` cast says why.
//
// Thread safety: Status and Result are values; distinct objects may be used from distinct threads.
#pragma once

#include <cassert>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "trainscope/modes.h"

namespace trainscope {

enum class StatusCode : int {
  kOk = 0,
  kNotFound = 1,         // a file, tensor, step or worker that does not exist
  kCorruption = 2,       // bytes on disk that do not parse or fail a checksum
  kInvalidArgument = 3,  // a bad parameter or configuration
  kIOError = 4,          // the OS refused an operation (carries errno in the message)
  kNotSupported = 5,     // a valid request this build or format cannot serve
  kUnavailable = 6,      // not yet there (a step still being written); try again later
  kOutOfRange = 7,       // past the end of the data (training finished before the step)
  kAborted = 8,          // stopped on purpose (a closed writer, a stop signal)
  kInternal = 9,         // a bug in trainscope
};

// Name of a code, e.g. "Corruption".
std::string_view StatusCodeName(StatusCode code);

// Which of smdebug's exceptions (smdebug.exceptions) a failure is, beside its code; kNone for
// every failure smdebug has no class of its own for. Set where the condition arises (the store's
// Trial); the bindings raise the class of that name. Values are stable (the bindings pass names).
enum class ErrorDetail : int {
  kNone = 0,
  kTensorUnavailable = 1,         // NotFound: the tensor was never saved (subject: tensor)
  kTensorUnavailableForStep = 2,  // NotFound: the step exists, the tensor (or its value) was not
                                  // saved there (tensor, step, mode, has_reductions)
  kShapeUnavailableForStep = 3,   // NotFound: neither shape nor value saved (tensor, step, mode)
  kStepUnavailable = 4,           // NotFound: the step was skipped (step, mode)
  kStepNotYetAvailable = 5,       // Unavailable: the step may still come (step, mode)
  kNoMoreData = 6,                // OutOfRange: training ended before the step (step, mode,
                                  // last_step)
  kInvalidWorker = 7,             // InvalidArgument: that worker did not save it (worker, ...)
  kMissingCollectionFiles = 8,    // NotFound: the job ended without a collections file
};

// smdebug's class name of a detail, e.g. "StepUnavailable"; "None" for kNone.
std::string_view ErrorDetailName(ErrorDetail detail);

// What a detailed failure is about: the fields of smdebug's exception. Only those the detail
// lists (above) are meaningful; the others keep their defaults.
struct ErrorSubject {
  std::string tensor;
  int64_t step = -1;          // as queried: a step of `mode` (a global step for kGlobal)
  Mode mode = Mode::kGlobal;  // the mode of `step`
  std::string worker;
  bool has_reductions = false;  // kTensorUnavailableForStep: reductions were saved at the step
  int64_t last_step = -1;       // kNoMoreData: the last step of `mode`, -1 if none
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);

  static Status OK() { return Status(); }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status Corruption(std::string msg) { return {StatusCode::kCorruption, std::move(msg)}; }
  static Status InvalidArgument(std::string msg) {
    return {StatusCode::kInvalidArgument, std::move(msg)};
  }
  static Status IOError(std::string msg) { return {StatusCode::kIOError, std::move(msg)}; }
  // IOError whose message is "<op> <path>: <strerror(errno_value)> (errno N)".
  static Status FromErrno(std::string_view op, std::string_view path, int errno_value);
  static Status NotSupported(std::string msg) {
    return {StatusCode::kNotSupported, std::move(msg)};
  }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status OutOfRange(std::string msg) { return {StatusCode::kOutOfRange, std::move(msg)}; }
  static Status Aborted(std::string msg) { return {StatusCode::kAborted, std::move(msg)}; }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  // Empty for OK.
  const std::string& message() const;
  // Errno captured by FromErrno, else 0.
  int os_errno() const { return rep_ ? rep_->os_errno : 0; }
  // "OK" or "<CodeName>: <message>".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>" (code and detail kept). OK stays OK.
  Status WithContext(std::string_view context) const;

  // Returns a copy that carries `detail` about `subject`. OK stays OK.
  Status WithDetail(ErrorDetail detail, ErrorSubject subject = {}) const;
  // kNone unless set by WithDetail.
  ErrorDetail detail() const { return rep_ ? rep_->detail : ErrorDetail::kNone; }
  // The subject given to WithDetail; all defaults otherwise.
  const ErrorSubject& subject() const;

  // Compares code and message (a detail follows from them where it is set).
  bool operator==(const Status& other) const {
    return code() == other.code() && message() == other.message();
  }

 private:
  struct Rep {
    StatusCode code;
    int os_errno;
    std::string message;
    ErrorDetail detail = ErrorDetail::kNone;
    ErrorSubject subject;
  };
  std::shared_ptr<const Rep> rep_;  // null == OK; shared so copies are cheap
};

// Result<T>: a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok() && "Result from an OK Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  // REQUIRES: ok()
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace trainscope

#define TS_CONCAT_INNER_(a, b) a##b
#define TS_CONCAT_(a, b) TS_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function if it is not OK.
#define TS_RETURN_IF_ERROR(expr)              \
  do {                                        \
    ::trainscope::Status ts_status_ = (expr); \
    if (!ts_status_.ok()) return ts_status_;  \
  } while (0)

// `lhs = value of Result expr`, or return its Status.
#define TS_ASSIGN_OR_RETURN(lhs, expr) \
  TS_ASSIGN_OR_RETURN_IMPL_(TS_CONCAT_(ts_result_, __LINE__), lhs, expr)
#define TS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
