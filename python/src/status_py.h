// Status -> Python exceptions for trainscope._core.
//
// Every non-OK Status raised by the bindings becomes an instance of a subclass of
// trainscope._core.Error (itself a RuntimeError) chosen by the status code, with attributes
// `code` (the code's name, e.g. "NotFound") and `message` (the Status message, whose leading
// words follow the conventions of the C++ API that produced it), and `detail`: None, or the name of
// smdebug's exception class the failure is (Status::detail(), e.g. "StepUnavailable"), then with
// that exception's fields from Status::subject(): `tensor`, `step`, `mode` (1..4, smdebug's
// ModeKeys values), `worker`, `has_reductions`, `last_step`. InvalidArgument also subclasses
// ValueError, NotSupported NotImplementedError and IOError OSError, so generic handlers work.
// trainscope.exceptions maps these onto smdebug's exception classes.
#pragma once

#include <pybind11/pybind11.h>

#include <exception>
#include <string>
#include <type_traits>
#include <utility>

#include "trainscope/status.h"

namespace trainscope::python {

// A C++ exception carrying a Status across pybind11's call machinery; translated to Python by
// the translator RegisterStatusExceptions installs. REQUIRES: !status.ok().
class StatusError : public std::exception {
 public:
  explicit StatusError(Status status) : status_(std::move(status)), what_(status_.ToString()) {}
  const Status& status() const { return status_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  Status status_;
  std::string what_;
};

// Throws StatusError if `s` is not OK. Safe to call with or without the GIL.
inline void ThrowIfError(const Status& s) {
  if (!s.ok()) throw StatusError(s);
}
template <typename T>
T ValueOrThrow(Result<T> r) {
  if (!r.ok()) throw StatusError(r.status());
  return std::move(r).value();
}

// Runs fn() with the GIL released and raises its error: for a Status returns nothing, for a
// Result<T> returns the T. REQUIRES: fn touches no Python object.
template <typename Fn>
auto CallWithoutGil(Fn&& fn) {
  auto r = [&] {
    pybind11::gil_scoped_release release;
    return fn();
  }();
  if constexpr (std::is_same_v<decltype(r), Status>) {
    ThrowIfError(r);
  } else {
    return ValueOrThrow(std::move(r));
  }
}

// Creates the exception classes in `m` and registers the translator.
void RegisterStatusExceptions(pybind11::module_& m);

}  // namespace trainscope::python
