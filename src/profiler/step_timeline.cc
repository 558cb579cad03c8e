#include "trainscope/step_timeline.h"

#include <string>
#include <utility>

#include "trainscope/profiler_format.h"

namespace trainscope {

StepTimeline::StepTimeline(TimelineWriter* writer, int64_t pid, uint64_t phase_period_us,
                           size_t keep)
    : writer_(writer), pid_(pid), period_us_(phase_period_us), keep_(keep) {}

std::string_view StepTimeline::PhaseName(Mode mode) {
  switch (mode) {
    case Mode::kTrain:
      return "Step:ModeKeys.TRAIN";
    case Mode::kEval:
      return "Step:ModeKeys.EVAL";
    case Mode::kPredict:
      return "Step:ModeKeys.PREDICT";
    case Mode::kGlobal:
      break;
  }
  return "Step:ModeKeys.GLOBAL";
}

bool StepTimeline::Begin(uint64_t t_us, Mode mode, int64_t mode_step, int64_t global_step,
                         bool saved) {
  EndStep(t_us);
  if (batch_.size() >= kBatchSpans ||
      (!batch_.empty() && (t_us < batch_t0_us_ || t_us - batch_t0_us_ >= kBatchMicros))) {
    Flush();
  }
  in_step_ = true;
  t0_us_ = t_us;
  mode_ = mode;
  mode_step_ = mode_step;
  global_step_ = global_step;
  saved_ = saved;
  if (period_us_ == 0) {
    phases_on_ = true;
  } else {
    phases_on_ = !phases_started_ || t_us < last_phases_us_ || t_us - last_phases_us_ >= period_us_;
    if (phases_on_) {
      phases_started_ = true;
      last_phases_us_ = t_us;
    }
  }
  return phases_on_;
}

void StepTimeline::End(uint64_t t_us) {
  EndStep(t_us);
  Flush();
}

void StepTimeline::EndStep(uint64_t t_us) {
  if (!in_step_) return;
  in_step_ = false;
  const uint64_t dur = t_us > t0_us_ ? t_us - t0_us_ : 0;
  const Span span{mode_, t0_us_, dur, mode_step_};
  if (batch_.empty()) batch_t0_us_ = t0_us_;
  batch_.push_back(Batched{span, global_step_, phases_on_, saved_});
  if (keep_ == 0) return;
  if (kept_.size() == keep_) kept_.pop_front();
  kept_.push_back(span);
}

void StepTimeline::Flush() {
  for (const Batched& b : batch_) {
    TimelineArgs args;
    args.reserve(4);
    if (b.span.step >= 0) {
      args.emplace_back(std::string(profiler_format::kStepArg), std::to_string(b.span.step));
    }
    args.emplace_back("pid", pid_);
    args.emplace_back("global_step", b.global_step);
    if (!b.phases) args.emplace_back("phases", false);
    if (b.saved) args.emplace_back("saved", true);
    const std::string_view phase = PhaseName(b.span.mode);
    writer_->Record(phase, phase, b.span.start_us, b.span.dur_us, std::move(args));
  }
  batch_.clear();
}

}  // namespace trainscope
