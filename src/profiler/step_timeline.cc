#include "trainscope/step_timeline.h"

namespace trainscope {

StepTimeline::StepTimeline(TimelineWriter* writer, int64_t pid, uint64_t phase_period_us,
                           size_t keep)
    : writer_(writer), pid_(pid), period_us_(phase_period_us), keep_(keep) {
  batch_.reserve(kBatchSpans);
}

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
                         bool ended_saved, int64_t ended_model_calls) {
  EndStep(t_us, ended_saved, ended_model_calls);
  if (batch_.size() >= kBatchSpans ||
      (!batch_.empty() && (t_us < batch_t0_us_ || t_us - batch_t0_us_ >= kBatchMicros))) {
    Flush();
  }
  in_step_ = true;
  t0_us_ = t_us;
  mode_ = mode;
  mode_step_ = mode_step;
  global_step_ = global_step;
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

void StepTimeline::End(uint64_t t_us, bool ended_saved, int64_t ended_model_calls) {
  EndStep(t_us, ended_saved, ended_model_calls);
  Flush();
}

void StepTimeline::EndStep(uint64_t t_us, bool saved, int64_t model_calls) {
  if (!in_step_) return;
  in_step_ = false;
  const uint64_t dur = t_us > t0_us_ ? t_us - t0_us_ : 0;
  if (batch_.empty()) batch_t0_us_ = t0_us_;
  batch_.push_back(TimelineStepSpan{PhaseName(mode_), t0_us_, dur, mode_step_, pid_, global_step_,
                                    phases_on_, saved, model_calls});
  if (keep_ != 0) Keep(Span{mode_, t0_us_, dur, mode_step_});
}

void StepTimeline::Keep(const Span& span) {
  if (kept_count_ < keep_) {
    if (kept_count_ == kept_blocks_.size() * kKeptBlock) {
      kept_blocks_.push_back(std::make_unique_for_overwrite<Span[]>(kKeptBlock));
    }
    KeptAt(kept_count_++) = span;
    return;
  }
  KeptAt(kept_head_) = span;  // the oldest gives way
  kept_head_ = kept_head_ + 1 == keep_ ? 0 : kept_head_ + 1;
}

std::vector<StepTimeline::Span> StepTimeline::kept() const {
  std::vector<Span> out;
  out.reserve(kept_count_);
  for (size_t i = 0; i < kept_count_; ++i) out.push_back(KeptAt((kept_head_ + i) % keep_));
  return out;
}

bool StepTimeline::last_kept(Span* out) const {
  if (kept_count_ == 0) return false;
  *out = KeptAt((kept_head_ + kept_count_ - 1) % keep_);
  return true;
}

void StepTimeline::Flush() {
  writer_->RecordSteps(batch_);
  batch_.clear();
}

}  // namespace trainscope
