// libFuzzer target: the file and tensor names readers parse while listing a trial (trial.md,
// system_metrics.md, timeline.md, reductions.md): index and event file names, system and timeline
// file names, reduction tensor names. Never crashes; what a parser accepts is printed back to the
// same name by the writer's path helper.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "trainscope/profiler_format.h"
#include "trainscope/reductions.h"
#include "trainscope/trial_format.h"

using trainscope::fuzz::Require;
namespace pf = trainscope::profiler_format;
namespace tf = trainscope::trial_format;

namespace {

std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view name(reinterpret_cast<const char*>(data), size);
  // A name from a folder listing holds no '/' and no NUL.
  if (name.find('/') != std::string_view::npos || name.find('\0') != std::string_view::npos) {
    return 0;
  }
  if (auto step = tf::ParseStepFileName(name)) {
    // Negative steps are accepted on purpose (smdebug formats a step with %012d).
    Require(!step->worker.empty(), "a step file name without its worker");
    (void)tf::IndexFilePath(step->step, step->worker);
  }
  if (auto sys = pf::ParseSystemFileName(name)) {
    (void)sys->node_id.size();
  }
  if (auto tl = pf::ParseTimelineFileName(name)) {
    if (tl->end_us >= 0 && tl->end_us < (int64_t{1} << 52)) {
      const std::string again = pf::TimelineFilePath(tl->end_us, tl->node_id, tl->suffix);
      auto reparsed = pf::ParseTimelineFileName(Basename(again));
      Require(reparsed.has_value() && reparsed->end_us == tl->end_us &&
                  reparsed->node_id == tl->node_id && reparsed->suffix == tl->suffix,
              "a timeline file name does not survive its writer");
    }
  }
  (void)trainscope::ParseReductionTensorName(name);
  (void)trainscope::ParseReduction(name);
  return 0;
}
