// Overtraining (docs/rules/Overtraining.md): the validation loss (mean per evaluation pass) made
// no new best by more than delta (relative) for patience_validation passes: more training no
// longer helps the model on new data. The training loss (mean over windows of 10 saved steps)
// making no new best for patience_train windows is, by default (condition=validation), a
// converged training: not an issue, said in the rule's status ("converged ..., consider
// stopping"). condition=any (SageMaker's) reports that plateau as a finding too; it is not
// reported while the latest evaluation pass of the same loss made a new best, nor while another
// training loss series (a GAN's other loss) is not stalled too.
#include <map>
#include <set>

#include "rules/loss_util.h"

namespace trainscope::rules_internal {
namespace {

class Overtraining : public BuiltinRule {
 public:
  static constexpr const char* kName = "Overtraining";
  // Saved training losses averaged into one value before comparing (noise of single batches).
  static constexpr int64_t kTrainWindow = 10;

  static std::vector<ParamSpec> Specs() {
    return {{"patience_train", ParamType::kInt, "5",
             "windows of 10 training steps without a new best training loss"},
            {"patience_validation", ParamType::kInt, "10",
             "evaluation passes without a new best validation loss"},
            {"delta", ParamType::kDouble, "0.01",
             "relative improvement over the best loss that counts as a new best"},
            {"condition", ParamType::kString, "validation",
             "validation: only the validation loss's plateau is an issue (a training loss that "
             "stops improving has converged: said in the status); any: SageMaker's, either "
             "loss's plateau is a finding"}};
  }

  explicit Overtraining(ParsedParams p) : BuiltinRule(kName, std::move(p)) {
    patience_train_ = params().Int("patience_train");
    patience_val_ = params().Int("patience_validation");
    delta_ = params().Double("delta");
    train_findings_ = params().String("condition") == "any";
    selection_ = LossSelection();
  }

  Status Validate() const {
    if (patience_train_ < 1 || patience_val_ < 1) {
      return Status::InvalidArgument(
          "Overtraining: patience_train and patience_validation "
          "must be >= 1");
    }
    if (delta_ < 0) return Status::InvalidArgument("Overtraining: delta must be >= 0");
    const std::string c = params().String("condition");
    if (c != "validation" && c != "any") {
      return Status::InvalidArgument("Overtraining: condition '" + c +
                                     "' is not one of validation, any");
    }
    return Status::OK();
  }

  Result<Verdict> InvokeAtStep(int64_t step) override {
    auto [mode, mode_step] = data().StepMode(step);
    Verdict v;
    if (mode == Mode::kPredict) return v;
    if (mode != Mode::kEval) {
      for (auto& [name, s] : series_) {
        if (s.val.count > 0) Observe(name, s, /*train=*/false, step, &v);
      }
    }
    TS_ASSIGN_OR_RETURN(auto names, data().Select(selection_, step));
    Verdict train_v;
    for (const auto& name : names) {
      TS_ASSIGN_OR_RETURN(auto value, ScalarAt(data(), name, step));
      if (!value) continue;
      if (series_.size() >= kMaxSeries && !series_.count(name)) continue;
      Pair& s = series_[name];
      if (mode == Mode::kEval) {
        s.val.sum += *value;
        ++s.val.count;
      } else {
        s.train.sum += *value;
        if (++s.train.count == kTrainWindow) Observe(name, s, /*train=*/true, step, &train_v);
      }
    }
    // Several training losses (a GAN's generator and discriminator, loss components): one that
    // stops improving is normal there, so a training finding needs every series stalled.
    std::set<std::string> stalled;
    for (const auto& f : train_v.findings) stalled.insert(f.tensor);
    if (series_.size() == 1 || stalled.size() == series_.size()) {
      for (auto& f : train_v.findings) {
        if (train_findings_) {
          v.Add(std::move(f));
        } else if (converged_.size() < kMaxSeries) {
          converged_.try_emplace(f.tensor, Converged{f.step, f.explanation});
        }
      }
    }
    return v;
  }

  // condition=validation: the training losses that stopped improving (converged), informational.
  std::string StatusNote() const override {
    std::string out;
    for (const auto& [name, c] : converged_) {
      if (!out.empty()) out += "; ";
      out += "converged at step " + std::to_string(c.step) + ": " + c.text +
             " (not an issue; consider stopping or decaying the learning rate)";
    }
    return out;
  }

  Result<Verdict> Finish(int64_t last_step) override {
    Verdict v;
    for (auto& [name, s] : series_) {
      if (s.val.count > 0) Observe(name, s, /*train=*/false, last_step, &v);
    }
    return v;
  }

  std::vector<CollectionRequest> RequiredCollections() const override { return {LossesRequest()}; }

  size_t StateBytes() const override {
    size_t b = 0;
    for (const auto& [name, s] : series_) b += name.capacity() + sizeof(Pair) + 48;
    for (const auto& [name, c] : converged_) b += name.capacity() + c.text.capacity() + 64;
    return b;
  }

 private:
  static constexpr size_t kMaxSeries = 64;
  struct Track {
    double sum = 0;
    int64_t count = 0;
    bool has_best = false;
    double best = 0;
    int64_t since_best = 0;  // windows or passes without a new best
    bool last_was_best = false;
  };
  struct Pair {
    Track train, val;
  };
  struct Converged {
    int64_t step;
    std::string text;
  };

  void Observe(const std::string& name, Pair& p, bool train, int64_t step, Verdict* v) {
    Track& t = train ? p.train : p.val;
    const double mean = t.sum / static_cast<double>(t.count);
    t.sum = 0;
    t.count = 0;
    if (!t.has_best || mean < t.best - delta_ * std::fabs(t.best)) {
      t.best = mean;
      t.has_best = true;
      t.since_best = 0;
      t.last_was_best = true;
      return;
    }
    t.last_was_best = false;
    ++t.since_best;
    const int64_t patience = train ? patience_train_ : patience_val_;
    if (t.since_best < patience) return;
    // The validation loss is the judge of overtraining: while its latest pass was a new best,
    // more training is still helping, and a training-loss plateau is the learning rate decaying
    // (a schedule's end), not overtraining. Reported after the next pass without a new best.
    if (train && p.val.has_best && p.val.last_was_best) return;
    RuleFinding f = NewFinding(step);
    f.tensor = name;
    f.value = static_cast<double>(t.since_best);
    f.threshold = static_cast<double>(patience);
    if (train) {
      f.condition = "no new best training loss for patience_train windows of 10 steps";
      f.explanation = "the training " + name + " (mean per 10 steps, now " + Num(mean) +
                      ") has not improved on its best " + Num(t.best) + " by more than " +
                      Percent(delta_) + " for " + std::to_string(t.since_best) + " windows";
      // condition=validation keeps this text for the status (converged); a finding says more.
      if (train_findings_) f.explanation += ": more training is not helping";
      f.recommendation =
          "training has plateaued: stop it here (attach a stop action), or decay the learning "
          "rate (e.g. ReduceLROnPlateau) if the loss is still too high";
    } else {
      f.condition = "no new best validation loss for patience_validation passes";
      f.explanation = "the validation " + name + " (now " + Num(mean) +
                      ") has not improved on its best " + Num(t.best) + " by more than " +
                      Percent(delta_) + " for " + std::to_string(t.since_best) +
                      " evaluation passes: the model is being overtrained";
      f.recommendation =
          "stop training and keep the checkpoint with the best validation loss (early "
          "stopping); add regularisation or data augmentation if you need to train longer";
    }
    t.since_best = 0;  // report again only after another `patience`
    v->Add(std::move(f));
  }

  int64_t patience_train_;
  int64_t patience_val_;
  double delta_;
  bool train_findings_;  // condition=any
  TensorSelection selection_;
  std::map<std::string, Pair> series_;
  std::map<std::string, Converged> converged_;  // condition=validation: first plateau per loss
};

}  // namespace

BuiltinDef OvertrainingDef() {
  return MakeDef<Overtraining>(
      "the validation loss stopped reaching new bests: training longer does not help (a "
      "converged training loss is said in the status)");
}

}  // namespace trainscope::rules_internal
