// VanishingGradient (docs/rules/VanishingGradient.md): mean(|g|) of a gradient below threshold
// at kPersistSteps saved steps in a row (a gradient that dips once, as a query projection's does
// at initialisation, has not vanished).
// A bias whose gradient is at round-off level beside its layer's weight gradient is cancelled by
// construction (a bias before a normalisation, an attention key bias under softmax), not judged.
// A gradient that is exactly zero from the first step it is seen (zero by construction, such as
// an attention key bias's) is not judged while it stays zero; a sparse gradient (an embedding's,
// zero for every token not in the batch) is judged on its non-zero part when its zero share is
// known. In a ReLU model (the trial holds ReLU outputs), a gradient that becomes exactly zero is
// left to DeadRelu (its units died: the root cause) and named in the status. The recommendation
// fits the model: for a ReLU model it does not suggest ReLU, and it names the dead ReLU layers
// when most of a layer's outputs are zero.
#include <map>
#include <set>
#include <string_view>

#include "rules/builtin.h"

namespace trainscope::rules_internal {
namespace {

class VanishingGradient : public BuiltinRule {
 public:
  static constexpr const char* kName = "VanishingGradient";
  static std::vector<ParamSpec> Specs() {
    return {{"threshold", ParamType::kDouble, "0.0000001",
             "a gradient whose mean absolute value is below this has vanished"}};
  }
  explicit VanishingGradient(ParsedParams p)
      : BuiltinRule(kName, std::move(p)), threshold_(params().Double("threshold")) {
    selection_.collections = {"gradients"};
    selection_.regexes = {"^gradient"};
    // DeadRelu's default selection: the ReLU outputs the hook saves.
    relus_.collections = {"relu_output"};
    relus_.regexes = {".*relu\\w*_output"};
  }
  Status Validate() const {
    if (!(threshold_ > 0)) {
      return Status::InvalidArgument("VanishingGradient: threshold must be > 0, got " +
                                     Num(threshold_));
    }
    return Status::OK();
  }

  Result<Verdict> InvokeAtStep(int64_t step) override {
    if (!relu_model_) {
      auto relus = data().Select(relus_, step);
      relu_model_ = relus.ok() && !relus->empty();
    }
    TS_ASSIGN_OR_RETURN(auto names, data().Select(selection_, step));
    Verdict v;
    for (const auto& name : names) {
      auto abs_mean = data().ReductionValue(name, step, Reduction{ReductionOp::kMean, true});
      if (!abs_mean.ok()) {
        if (IsNoData(abs_mean.status())) continue;
        return abs_mean.status();
      }
      if (std::isnan(*abs_mean)) continue;
      // Zero by construction: exactly zero the first time it is seen, and still.
      const bool first_sight = seen_.size() < kMaxTracked && seen_.insert(name).second;
      if (*abs_mean == 0 && (first_sight || structural_.count(name))) {
        if (structural_.size() < kMaxTracked) structural_.insert(name);
        continue;
      }
      structural_.erase(name);
      // Exactly zero in a ReLU model (the trial holds ReLU outputs): every unit behind it was
      // inactive for every sample, so its ReLUs are dead: DeadRelu's finding (the root cause,
      // with the layer), not a gradient that shrank.
      if (*abs_mean == 0 && relu_model_) {
        if (behind_dead_relus_.size() < kMaxTracked) behind_dead_relus_.insert(name);
        continue;
      }
      double value = *abs_mean;
      // Sparse: the mean over the elements that got a gradient at all.
      auto zf = data().ReductionValue(name, step, Reduction{ReductionOp::kZeroFraction, false});
      const bool sparse = zf.ok() && *zf > 0 && *zf < 1 && value > 0;
      if (sparse) value = value / (1.0 - *zf);
      if (value >= threshold_) {
        below_.erase(name);
        continue;
      }
      if (CancelledBias(name, step, *abs_mean)) {
        below_.erase(name);
        if (cancelled_.size() < kMaxTracked) cancelled_.insert(name);
        continue;
      }
      // Below at kPersistSteps saved steps in a row: the first of them is where it vanished.
      auto [run, added] = below_.try_emplace(name, BelowRun{step, 0});
      if (added && below_.size() > kMaxTracked) {
        below_.erase(run);
        continue;
      }
      if (++run->second.count < kPersistSteps) continue;
      RuleFinding f = NewFinding(step);
      f.tensor = name;
      f.value = value;
      f.threshold = threshold_;
      f.condition = sparse ? "mean(|gradient|) over its non-zero elements < threshold at " +
                                 std::to_string(kPersistSteps) + " saved steps in a row"
                           : "mean(|gradient|) < threshold at " + std::to_string(kPersistSteps) +
                                 " saved steps in a row";
      f.explanation = "mean |gradient| of " + name + (sparse ? " over its non-zero elements" : "") +
                      " is " + Num(value) + ", below " + Num(threshold_) + " since step " +
                      std::to_string(run->second.since) + " (" + std::to_string(run->second.count) +
                      " saved steps in a row): the parameters behind it have almost stopped "
                      "learning";
      f.recommendation = Advice(step);
      v.Add(std::move(f));
    }
    return v;
  }

  std::string StatusNote() const override {
    std::string out;
    auto list = [](const std::set<std::string>& names) {
      std::string l;
      size_t shown = 0;
      for (const auto& n : names) {
        if (shown++ == 3) {
          l += ", ...";
          break;
        }
        l += (shown > 1 ? ", " : "") + n;
      }
      return l;
    };
    if (!structural_.empty()) {
      out = std::to_string(structural_.size()) +
            " gradient(s) exactly zero at every step since their first (zero by construction, "
            "e.g. an attention key bias; not judged): " +
            list(structural_);
    }
    if (!cancelled_.empty()) {
      out += (out.empty() ? "" : "; ") + std::to_string(cancelled_.size()) +
             " bias gradient(s) at round-off level beside their layer's weight gradient (the "
             "layer's output does not depend on the bias: a bias before a normalisation, or an "
             "attention key bias under softmax; not judged): " +
             list(cancelled_);
    }
    if (!behind_dead_relus_.empty()) {
      out += (out.empty() ? "" : "; ") + std::to_string(behind_dead_relus_.size()) +
             " gradient(s) became exactly zero behind ReLUs that died (DeadRelu reports the "
             "layer): " +
             list(behind_dead_relus_);
    }
    return out;
  }

  std::vector<CollectionRequest> RequiredCollections() const override {
    CollectionRequest r;
    r.name = "gradients";
    r.save_interval = 10;
    // zero_fraction: a sparse gradient (an embedding's) is judged on its non-zero part, and
    // without the raw value (saved on the first steps only) the trial must hold its zero share.
    r.reductions = {"abs_mean", "zero_fraction"};
    r.save_raw_tensor = false;
    return {r};
  }

 private:
  static constexpr size_t kMaxTracked = 4096;
  // Saved steps in a row below threshold before a finding.
  static constexpr int kPersistSteps = 2;
  // A bias gradient below this share of its weight's mean |gradient| is round-off of a sum that
  // cancels exactly (float32 rounding leaves ~1e-7 of the terms; genuinely vanishing layers have
  // bias and weight gradients of one order).
  static constexpr double kRoundOffShare = 1e-4;

  // True when `name` is a bias ("<layer>.bias") whose mean |gradient| `bias_abs_mean` is below
  // kRoundOffShare of its layer's weight gradient ("<layer>.weight") at `step`.
  bool CancelledBias(const std::string& name, int64_t step, double bias_abs_mean) {
    constexpr std::string_view kBias = "bias";
    if (name.size() <= kBias.size() ||
        name.compare(name.size() - kBias.size(), kBias.size(), kBias) != 0) {
      return false;
    }
    const std::string weight = name.substr(0, name.size() - kBias.size()) + "weight";
    auto w = data().ReductionValue(weight, step, Reduction{ReductionOp::kMean, true});
    return w.ok() && std::isfinite(*w) && *w > 0 && bias_abs_mean < kRoundOffShare * *w;
  }
  // A ReLU layer with at least this share of zero outputs is dead (DeadRelu's default).
  static constexpr double kDeadZeroFraction = 0.9;

  // The recommendation, fitted to the model: the ReLU outputs saved at `step` or before tell
  // whether the model uses ReLUs and whether they died.
  std::string Advice(int64_t step) {
    std::string dead;
    bool has_relu = false;
    auto names = data().Select(relus_, step);
    if (names.ok()) {
      for (const auto& n : *names) {
        auto zf = data().ReductionValue(n, step, Reduction{ReductionOp::kZeroFraction, false});
        if (!zf.ok()) continue;
        has_relu = true;
        if (*zf >= kDeadZeroFraction && dead.size() < 200) {
          dead += (dead.empty() ? "" : ", ") + n + " (" + Percent(*zf) + " zeros)";
        }
      }
    }
    if (has_relu) relu_model_ = true;
    if (!dead.empty()) {
      return "the gradient vanishes behind dead ReLUs (" + dead +
             "): units die when a too high learning rate or a loss spike pushes their inputs "
             "below zero for every sample; lower the learning rate (try 10x smaller) or add a "
             "warm-up, clip gradients, use He initialisation with zero biases, or LeakyReLU/GELU "
             "(see DeadRelu's finding)";
    }
    if (relu_model_) {
      return "gradients vanish before they reach this layer: add BatchNorm/LayerNorm or "
             "residual connections, initialise with He (kaiming_normal_), check for ReLUs that "
             "died (DeadRelu) or a detach() in the way; if the loss is already near zero the "
             "model may simply have converged";
    }
    return "gradients vanish before they reach this layer: use ReLU/GELU rather than "
           "sigmoid/tanh in hidden layers, add BatchNorm/LayerNorm or residual connections, "
           "initialise with He (kaiming_normal_) or Xavier; if the loss is already near zero "
           "the model may simply have converged";
  }

  double threshold_;
  TensorSelection selection_;
  TensorSelection relus_;
  std::set<std::string> seen_;               // gradients seen (bounded)
  std::set<std::string> structural_;         // exactly zero since first seen
  std::set<std::string> behind_dead_relus_;  // became exactly zero in a ReLU model
  std::set<std::string> cancelled_;          // biases at round-off beside their weight
  struct BelowRun {
    int64_t since;  // first step of the run below threshold
    int count;      // saved steps in it
  };
  std::map<std::string, BelowRun> below_;  // gradients below threshold at their last saved step
  bool relu_model_ = false;
};

}  // namespace

BuiltinDef VanishingGradientDef() {
  return MakeDef<VanishingGradient>(
      "a gradient's mean absolute value fell below threshold (the layer stopped learning)");
}

}  // namespace trainscope::rules_internal
