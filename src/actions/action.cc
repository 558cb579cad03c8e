#include "trainscope/action.h"

namespace trainscope {

std::string_view ActionResultName(ActionResult result) {
  switch (result) {
    case ActionResult::kDone:
      return "done";
    case ActionResult::kFailed:
      return "failed";
    case ActionResult::kDropped:
      return "dropped";
    case ActionResult::kSuppressed:
      return "suppressed";
  }
  return "unknown";
}

}  // namespace trainscope
