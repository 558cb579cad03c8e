// VanishingGradient (docs/rules/VanishingGradient.md): mean(|g|) of a gradient below threshold.
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
  }
  Status Validate() const {
    if (!(threshold_ > 0)) {
      return Status::InvalidArgument("VanishingGradient: threshold must be > 0, got " +
                                     Num(threshold_));
    }
    return Status::OK();
  }

  Result<Verdict> InvokeAtStep(int64_t step) override {
    TS_ASSIGN_OR_RETURN(auto names, data().Select(selection_, step));
    Verdict v;
    for (const auto& name : names) {
      auto abs_mean = data().ReductionValue(name, step, Reduction{ReductionOp::kMean, true});
      if (!abs_mean.ok()) {
        if (IsNoData(abs_mean.status())) continue;
        return abs_mean.status();
      }
      if (std::isnan(*abs_mean) || *abs_mean >= threshold_) continue;
      RuleFinding f = NewFinding(step);
      f.tensor = name;
      f.value = *abs_mean;
      f.threshold = threshold_;
      f.condition = "mean(|gradient|) < threshold";
      f.explanation = "mean |gradient| of " + name + " is " + Num(*abs_mean) + ", below " +
                      Num(threshold_) + ": the parameters behind it have almost stopped learning";
      f.recommendation =
          "gradients vanish before they reach this layer: use ReLU/GELU rather than "
          "sigmoid/tanh in hidden layers, add BatchNorm/LayerNorm or residual connections, "
          "initialise with He (kaiming_normal_) or Xavier, or raise the learning rate; if the "
          "loss is already near zero the model may simply have converged";
      v.Add(std::move(f));
    }
    return v;
  }

  std::vector<CollectionRequest> RequiredCollections() const override {
    CollectionRequest r;
    r.name = "gradients";
    r.save_interval = 10;
    r.reductions = {"abs_mean"};
    r.save_raw_tensor = false;
    return {r};
  }

 private:
  double threshold_;
  TensorSelection selection_;
};

}  // namespace

BuiltinDef VanishingGradientDef() {
  return MakeDef<VanishingGradient>(
      "a gradient's mean absolute value fell below threshold (the layer stopped learning)");
}

}  // namespace trainscope::rules_internal
