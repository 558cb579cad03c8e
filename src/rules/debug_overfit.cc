// Overfit (docs/rules/Overfit.md): after each evaluation pass, r = (mean validation loss - mean
// training loss of the training phase before it) / mean training loss. condition=ratio
// (SageMaker's): r > ratio_threshold for `patience` passes in a row. condition=stall (the
// default): the same, and over the last kStallPasses passes the training loss kept falling while
// the validation loss did not follow: it stopped improving while training fell by a quarter
// (memorising), or it rose while training fell: the gap grows because only training improves.
#include <deque>
#include <map>

#include "rules/loss_util.h"

namespace trainscope::rules_internal {
namespace {

class Overfit : public BuiltinRule {
 public:
  static constexpr const char* kName = "Overfit";
  static std::vector<ParamSpec> Specs() {
    return {TensorRegexSpec(),
            {"start_step", ParamType::kInt, "0", "global step from which losses count"},
            {"patience", ParamType::kInt, "1",
             "evaluation passes in a row over the ratio before the rule fires"},
            {"ratio_threshold", ParamType::kDouble, "0.1",
             "largest tolerated (validation - training) / training loss"},
            {"condition", ParamType::kString, "stall",
             "stall: the ratio, while the validation loss no longer improves and the training "
             "loss still falls; ratio: SageMaker's ratio alone (a trained classifier's usual "
             "gap fires)"}};
  }

  explicit Overfit(ParsedParams p) : BuiltinRule(kName, std::move(p)) {
    start_step_ = params().Int("start_step");
    patience_ = params().Int("patience");
    ratio_threshold_ = params().Double("ratio_threshold");
    stall_ = params().String("condition") == "stall";
    selection_.regexes = params().StringList("tensor_regex");
    if (selection_.regexes.empty()) selection_ = LossSelection();
  }

  Status Validate() const {
    if (patience_ < 1) return Status::InvalidArgument("Overfit: patience must be >= 1");
    const std::string c = params().String("condition");
    if (c != "stall" && c != "ratio") {
      return Status::InvalidArgument("Overfit: condition '" + c + "' is not one of stall, ratio");
    }
    return Status::OK();
  }

  Result<Verdict> InvokeAtStep(int64_t step) override {
    auto [mode, mode_step] = data().StepMode(step);
    Verdict v;
    if (mode == Mode::kPredict) return v;
    if (mode != Mode::kEval) {
      for (auto& [name, s] : series_) {
        if (s.eval_count > 0) ClosePass(name, s, step, &v);
      }
    }
    if (step < start_step_) return v;
    TS_ASSIGN_OR_RETURN(auto names, data().Select(selection_, step));
    for (const auto& name : names) {
      TS_ASSIGN_OR_RETURN(auto value, ScalarAt(data(), name, step));
      if (!value) continue;
      if (series_.size() >= kMaxSeries && !series_.count(name)) continue;
      Series& s = series_[name];
      if (mode == Mode::kEval) {
        s.eval_sum += *value;
        ++s.eval_count;
      } else {
        s.train_sum += *value;
        ++s.train_count;
      }
    }
    return v;
  }

  Result<Verdict> Finish(int64_t last_step) override {
    Verdict v;
    for (auto& [name, s] : series_) {
      if (s.eval_count > 0) ClosePass(name, s, last_step, &v);
    }
    return v;
  }

  std::vector<CollectionRequest> RequiredCollections() const override {
    CollectionRequest r = LossesRequest();
    if (!params().StringList("tensor_regex").empty()) {
      r.name = "overfit_losses";
      r.include_regex = params().StringList("tensor_regex");
    }
    return {r};
  }

  size_t StateBytes() const override {
    size_t b = 0;
    for (const auto& [name, s] : series_) {
      b += name.capacity() + sizeof(Series) + 48 + (kStallPasses + 1) * sizeof(Pass);  // bound
    }
    return b;
  }

 private:
  static constexpr size_t kMaxSeries = 64;
  // condition=stall, over the last kStallPasses passes: the validation loss "stopped improving"
  // when it is not kMinValGain below its value kStallPasses passes before, while the training
  // loss fell by kMemoriseTrainGain or more; or the validation loss rose by kMinValRise or more
  // while the training loss fell by kMinTrainGain or more. A model at its noise floor (a noisy
  // regression: validation flat within 1 %, training creeping down 14 % over two passes, tests/
  // training's healthy_huber_leaky_adagrad) is neither; memorising a tiny training set (training
  // halving every pass) or drifting away (validation up 5 %) is.
  static constexpr size_t kStallPasses = 2;
  static constexpr double kMinValGain = 0.01;
  static constexpr double kMemoriseTrainGain = 0.25;
  static constexpr double kMinValRise = 0.05;
  static constexpr double kMinTrainGain = 0.1;
  // condition=stall: a validation loss that jumps kBlowUpFactor-fold in one pass, to above its
  // first pass, has diverged (the weights blew up); overfitting is gradual. pytorch/examples'
  // time_sequence_prediction (LBFGS at lr 0.8) went from 4.9e-05 to 4.7e+25 in one optimizer
  // step. (A converged loss wobbling from 1e-9 to 1e-7 stays below its first pass.)
  static constexpr double kBlowUpFactor = 100.0;
  struct Pass {
    double train;
    double val;
  };
  struct Series {
    double train_sum = 0;
    int64_t train_count = 0;
    double eval_sum = 0;
    int64_t eval_count = 0;
    int64_t streak = 0;
    std::deque<Pass> passes;  // the last kStallPasses + 1 passes
    double first_val = -1;    // the first pass's validation mean (-1: none yet)
  };

  // Judges the pass that ended (when a training phase came before it), then starts the next.
  void ClosePass(const std::string& name, Series& s, int64_t step, Verdict* v) {
    if (s.train_count > 0) {
      JudgePass(name, s, s.train_sum / static_cast<double>(s.train_count),
                s.eval_sum / static_cast<double>(s.eval_count), step, v);
      s.train_sum = 0;
      s.train_count = 0;
    }
    s.eval_sum = 0;
    s.eval_count = 0;
  }

  // One pass: `train` the mean training loss of the phase before it, `val` the pass's mean.
  void JudgePass(const std::string& name, Series& s, double train, double val, int64_t step,
                 Verdict* v) {
    const double denom = std::fabs(train) > 0 ? std::fabs(train) : 1e-12;
    const double ratio = (val - train) / denom;
    if (s.first_val < 0) s.first_val = val;
    const bool blew_up = stall_ && !s.passes.empty() && s.passes.back().val > 0 &&
                         val > kBlowUpFactor * s.passes.back().val && val > s.first_val;
    const double val_before = s.passes.empty() ? 0.0 : s.passes.back().val;
    s.passes.push_back({train, val});
    if (s.passes.size() > kStallPasses + 1) s.passes.pop_front();
    if (blew_up) {
      RuleFinding f = NewFinding(step);
      f.tensor = name;
      f.value = val / val_before;
      f.threshold = kBlowUpFactor;
      f.condition = "validation loss diverged: more than 100-fold in one evaluation pass";
      f.explanation = "mean validation " + name + " jumped from " + Num(val_before) + " to " +
                      Num(val) + " in one evaluation pass (" + Num(val / val_before) +
                      "-fold; the training loss before it was " + Num(train) +
                      "): the weights diverged in the last training steps, this is not "
                      "overfitting";
      f.recommendation =
          "lower the learning rate (try 10x smaller) or add a warm-up, clip gradients, and for "
          "LBFGS use line_search_fn='strong_wolfe'; keep the checkpoint from before the jump";
      v->Add(std::move(f));
      s.streak = 0;
      return;
    }
    std::string stall_note;
    bool stalled = !stall_;
    if (stall_ && s.passes.size() == kStallPasses + 1) {
      const Pass& before = s.passes.front();
      const bool flat_val = val > before.val * (1 - kMinValGain);
      const bool rising_val = val > before.val * (1 + kMinValRise);
      stalled = (flat_val && train < before.train * (1 - kMemoriseTrainGain)) ||
                (rising_val && train < before.train * (1 - kMinTrainGain));
      if (stalled) {
        stall_note = "; over the last " + std::to_string(kStallPasses + 1) +
                     " evaluation passes the validation loss went " + Num(before.val) + " -> " +
                     Num(val) + " while the training loss fell " + Num(before.train) + " -> " +
                     Num(train);
      }
    }
    if (ratio > ratio_threshold_ && stalled) {
      ++s.streak;
      if (s.streak >= patience_) {
        RuleFinding f = NewFinding(step);
        f.tensor = name;
        f.value = ratio;
        f.threshold = ratio_threshold_;
        f.condition = stall_ ? "(validation - training) / training loss > ratio_threshold, "
                               "validation stalled while training falls"
                             : "(validation - training) / training loss > ratio_threshold";
        f.explanation = "mean validation " + name + " is " + Num(val) + " against " + Num(train) +
                        " in training (" + Percent(ratio) + " higher, more than " +
                        Percent(ratio_threshold_) + ")" + stall_note +
                        ": the model fits the training data better than new data";
        f.recommendation =
            "the model is overfitting: add regularisation (weight decay, dropout), augment "
            "the training data or collect more, use a smaller model, or stop earlier (keep "
            "the checkpoint with the best validation loss)";
        v->Add(std::move(f));
      }
    } else {
      s.streak = 0;
    }
  }

  int64_t start_step_;
  int64_t patience_;
  double ratio_threshold_;
  bool stall_;
  TensorSelection selection_;
  std::map<std::string, Series> series_;
};

}  // namespace

BuiltinDef OverfitDef() {
  return MakeDef<Overfit>("the validation loss is well above the training loss");
}

}  // namespace trainscope::rules_internal
