// WeightUpdateRatio (docs/rules/WeightUpdateRatio.md): ||w_s - w_prev||_2 / (||w_prev||_2 +
// epsilon) above large_threshold or below small_threshold, w_prev being the previous saved
// value of the weight (at most num_steps steps earlier when num_steps is set). A frozen weight
// (the trial holds gradients, but never one for this weight: requires_grad is False, so the hook
// saw no gradient) is skipped. A weight bit for bit unchanged between two saved steps had no
// optimizer step between them (gradient accumulation, a skipped step): "not updated" needs it
// unchanged over kStillPairs saved pairs spanning kStillSteps steps.
#include <map>
#include <optional>
#include <set>

#include "rules/builtin.h"
#include "trainscope/tensor_names.h"

namespace trainscope::rules_internal {
namespace {

class WeightUpdateRatio : public BuiltinRule {
 public:
  static constexpr const char* kName = "WeightUpdateRatio";
  // Weights whose root-mean-square is below this are zero-initialised: any update is "large"
  // relative to them, so the large-ratio check skips them.
  static constexpr double kMinRms = 1e-6;
  // An exactly unchanged weight is reported once it has not moved over this many consecutive
  // saved pairs, together spanning at least this many steps (longer than the accumulation
  // periods people use: 2 to 16 micro-batches).
  static constexpr int kStillPairs = 3;
  static constexpr int64_t kStillSteps = 20;

  static std::vector<ParamSpec> Specs() {
    return {{"num_steps", ParamType::kInt, "None",
             "largest step distance between the two saved values compared (None: any)"},
            {"large_threshold", ParamType::kDouble, "10.0", "largest tolerated update ratio"},
            {"small_threshold", ParamType::kDouble, "0.00000001", "smallest tolerated ratio"},
            {"epsilon", ParamType::kDouble, "0.000000001", "added to the weight norm"}};
  }

  explicit WeightUpdateRatio(ParsedParams p) : BuiltinRule(kName, std::move(p)) {
    num_steps_ = params().OptInt("num_steps");
    large_ = params().Double("large_threshold");
    small_ = params().Double("small_threshold");
    eps_ = params().Double("epsilon");
    selection_.collections = {"weights"};
    selection_.regexes = {"^(?!gradient).*weight"};
    gradients_.collections = {"gradients"};
    gradients_.regexes = {"^gradient/"};
  }

  Status Validate() const {
    if (num_steps_ && *num_steps_ < 1) {
      return Status::InvalidArgument("WeightUpdateRatio: num_steps must be >= 1 or None");
    }
    if (!(small_ < large_)) {
      return Status::InvalidArgument(
          "WeightUpdateRatio: small_threshold must be below "
          "large_threshold");
    }
    return Status::OK();
  }

  Result<Verdict> InvokeAtStep(int64_t step) override {
    auto [mode, mode_step] = data().StepMode(step);
    Verdict v;
    if (mode == Mode::kEval || mode == Mode::kPredict) return v;  // weights do not move there
    TS_ASSIGN_OR_RETURN(auto names, data().Select(selection_, step));
    auto grads = data().Select(gradients_, step);
    if (grads.ok()) {
      for (const auto& g : *grads) {
        if (gradient_names_.size() < 100000) gradient_names_.insert(g);
      }
    }
    const Trial& trial = data().trial();
    for (const auto& name : names) {
      // Frozen: the trial's _meta.parameters says so; without it, no gradient ever reached it.
      const std::optional<bool> trainable = trial.ParameterTrainable(name);
      if (trainable ? !*trainable
                    : !gradient_names_.empty() &&
                          !gradient_names_.count(tensor_names::GradientName(name))) {
        if (frozen_.size() < 100000) frozen_.insert(name);
        continue;
      }
      frozen_.erase(name);
      auto cur = data().Value(name, step);
      if (!cur.ok()) {
        if (IsNoData(cur.status())) continue;
        return cur.status();
      }
      if (!IsNumeric(cur->dtype) || cur->num_elements() == 0) continue;
      auto it = last_.find(name);
      if (it == last_.end()) {
        if (last_.size() < 100000) last_[name] = Last{step, step, 0};
        continue;
      }
      const int64_t prev_step = it->second.step;
      it->second.step = step;
      if (num_steps_ && step - prev_step > *num_steps_) continue;
      auto prev = data().Value(name, prev_step);
      if (!prev.ok() || prev->shape != cur->shape) continue;
      const std::vector<double> p = ToDoubles(*prev);
      double diff2 = 0, norm2 = 0;
      ForEachElement(*cur, [&](int64_t i, double x) {
        const double d = x - p[static_cast<size_t>(i)];
        diff2 += d * d;
        norm2 += p[static_cast<size_t>(i)] * p[static_cast<size_t>(i)];
      });
      if (!std::isfinite(diff2) || !std::isfinite(norm2)) continue;  // ExplodingTensor's job
      const double norm = std::sqrt(norm2);
      const double ratio = std::sqrt(diff2) / (norm + eps_);
      const double rms = norm / std::sqrt(static_cast<double>(p.size()));
      const bool large = ratio > large_ && rms >= kMinRms;
      bool small = ratio < small_;
      Last& last = it->second;
      int64_t since = prev_step;  // the first step of the stretch judged
      if (diff2 == 0) {
        // No optimizer step between these saved steps, or the weight is not updated at all:
        // judged only over a long enough stretch without any change.
        if (last.still_pairs == 0) last.still_since = prev_step;
        ++last.still_pairs;
        since = last.still_since;
        small = last.still_pairs >= kStillPairs && step - last.still_since >= kStillSteps;
        if (small) last.still_pairs = 0;  // the next report needs a new stretch
      } else {
        last.still_pairs = 0;
      }
      if (!large && !small) continue;
      RuleFinding f = NewFinding(step);
      f.tensor = name;
      f.value = ratio;
      f.threshold = large ? large_ : small_;
      f.condition = large ? "||w - w_prev|| / (||w_prev|| + epsilon) > large_threshold"
                          : "||w - w_prev|| / (||w_prev|| + epsilon) < small_threshold";
      f.explanation = "between steps " + std::to_string(since) + " and " + std::to_string(step) +
                      " " + name + " changed by " + Num(ratio) + " times its norm (" +
                      (large ? "above " + Num(large_) +
                                   ": updates swamp "
                                   "the weights"
                             : "below " + Num(small_) + ": the weights are not being updated") +
                      ")";
      f.recommendation =
          large ? "the updates are far too large for these weights: lower the learning rate "
                  "(by 10x or more), clip gradients, or check the weight initialisation scale"
                : "these weights do not move: check that they are in the optimizer and have "
                  "requires_grad=True, that the learning rate is not 0 and that optimizer.step() "
                  "runs; "
                  "exclude intentionally frozen layers from the rule with a regex";
      v.Add(std::move(f));
    }
    return v;
  }

  std::vector<CollectionRequest> RequiredCollections() const override {
    CollectionRequest r;
    r.name = "weights";
    r.save_interval = 10;
    r.train_only = true;  // weights do not move in EVAL and PREDICT steps (InvokeAtStep)
    // Which weights get gradients at all (frozen ones do not): the names are enough.
    CollectionRequest g;
    g.name = "gradients";
    g.save_interval = 10;
    g.reductions = {"abs_mean"};
    g.save_raw_tensor = false;
    return {r, g};
  }

  size_t StateBytes() const override {
    size_t b = 0;
    for (const auto& [name, s] : last_) b += name.capacity() + sizeof(Last) + 48;
    for (const auto& name : gradient_names_) b += name.capacity() + 48;
    for (const auto& name : frozen_) b += name.capacity() + 48;
    return b;
  }

  std::string StatusNote() const override {
    if (frozen_.empty()) return {};
    return std::to_string(frozen_.size()) +
           " frozen weight(s) skipped (the trial holds gradients, none for them): " +
           *frozen_.begin() + (frozen_.size() > 1 ? ", ..." : "");
  }

 private:
  std::optional<int64_t> num_steps_;
  double large_, small_, eps_;
  TensorSelection selection_;
  TensorSelection gradients_;
  struct Last {
    int64_t step;         // the weight's previous saved step
    int64_t still_since;  // the first step of its current stretch without any change
    int still_pairs;      // consecutive saved pairs without any change
  };
  std::map<std::string, Last> last_;
  std::set<std::string> gradient_names_;  // gradients seen in the trial (bounded)
  std::set<std::string> frozen_;          // weights skipped as frozen
};

}  // namespace

BuiltinDef WeightUpdateRatioDef() {
  return MakeDef<WeightUpdateRatio>(
      "weight updates are huge or vanishing relative to the weights (learning rate)");
}

}  // namespace trainscope::rules_internal
