// LibTorch's exceptions as trainscope Statuses, for the module's translation units (private).
#pragma once

#include <c10/util/Exception.h>

#include <exception>
#include <string>
#include <string_view>

#include "trainscope/status.h"

namespace trainscope::torch_internal {

// The message of an exception thrown by LibTorch, without c10's C++ backtrace.
inline std::string ExceptionMessage(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) {
    return c10_error->what_without_backtrace();
  }
  return e.what();
}

// InvalidArgument "LibTorch failed while <what>: <message>".
inline Status TorchError(std::string_view what, const std::exception& e) {
  return Status::InvalidArgument("LibTorch failed while " + std::string(what) + ": " +
                                 ExceptionMessage(e));
}

}  // namespace trainscope::torch_internal
