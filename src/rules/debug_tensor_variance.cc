// TensorVariance (docs/rules/TensorVariance.md): a tensor's variance above max_threshold or
// below min_threshold; a tensor saved first as a constant (variance exactly 0: BatchNorm's and
// LayerNorm's scale initialised to ones, zero-initialised biases) is judged against
// min_threshold only once its variance has reached it. Without either threshold it checks nothing
// and says so in its status (so that `trainscope run --rules all` starts).
#include <set>

#include "rules/builtin.h"

namespace trainscope::rules_internal {
namespace {

class TensorVariance : public BuiltinRule {
 public:
  static constexpr const char* kName = "TensorVariance";
  static std::vector<ParamSpec> Specs() {
    return {CollectionNamesSpec(),
            TensorRegexSpec(),
            {"max_threshold", ParamType::kDouble, "None", "largest tolerated variance"},
            {"min_threshold", ParamType::kDouble, "None", "smallest tolerated variance"}};
  }

  explicit TensorVariance(ParsedParams p) : BuiltinRule(kName, std::move(p)) {
    max_ = params().OptDouble("max_threshold");
    min_ = params().OptDouble("min_threshold");
    selection_ = SelectionFromParams(/*all_if_empty=*/true);
  }

  Status Validate() const {
    if (max_ && min_ && *min_ > *max_) {
      return Status::InvalidArgument("TensorVariance: min_threshold > max_threshold");
    }
    return Status::OK();
  }

  Result<Verdict> InvokeAtStep(int64_t step) override {
    Verdict v;
    if (!max_ && !min_) return v;
    TS_ASSIGN_OR_RETURN(auto names, data().Select(selection_, step));
    for (const auto& name : names) {
      // A single value has no variance worth checking (losses, scalars).
      auto stats = data().Stats(name, step);
      if (stats.ok() && stats->count < 2) continue;
      auto var = data().ReductionValue(name, step, Reduction{ReductionOp::kVariance, false});
      if (!var.ok()) {
        if (IsNoData(var.status())) continue;
        return var.status();
      }
      if (std::isnan(*var)) continue;
      // A constant initialisation has no spread to collapse: wait until it has spread out.
      if (!seen_.count(name) && seen_.size() < kMaxTensors) {
        seen_.insert(name);
        if (*var == 0) constant_init_.insert(name);
      }
      if (constant_init_.count(name) && min_ && *var >= *min_) constant_init_.erase(name);
      const bool high = max_ && *var > *max_;
      const bool low = min_ && *var < *min_ && !constant_init_.count(name);
      if (!high && !low) continue;
      RuleFinding f = NewFinding(step);
      f.tensor = name;
      f.value = *var;
      f.threshold = high ? *max_ : *min_;
      f.condition = high ? "variance > max_threshold" : "variance < min_threshold";
      f.explanation = "variance of " + name + " is " + Num(*var) +
                      (high ? ", above " + Num(*max_) + ": its values are spread too widely"
                            : ", below " + Num(*min_) + ": its values have collapsed together");
      f.recommendation =
          high ? "values this spread usually mean exploding weights or activations: lower the "
                 "learning rate, clip gradients, add normalisation layers or weight decay, and "
                 "check the initialisation scale"
               : "values this close usually mean a dead or saturated layer or a collapsed "
                 "initialisation: check the initialisation (He/Xavier), the learning rate, and "
                 "for dead ReLUs or saturated sigmoid/tanh units in front of this tensor";
      v.Add(std::move(f));
    }
    return v;
  }

  size_t StateBytes() const override {
    size_t b = 0;
    for (const auto& n : seen_) b += n.capacity() + 48;
    for (const auto& n : constant_init_) b += n.capacity() + 48;
    return b;
  }

  std::string StatusNote() const override {
    if (max_ || min_) return {};
    return "nothing was checked: TensorVariance needs max_threshold and/or min_threshold (e.g. "
           "max_threshold=10, min_threshold=0.00001)";
  }

  std::vector<CollectionRequest> RequiredCollections() const override {
    std::vector<CollectionRequest> out;
    if (!max_ && !min_) return out;  // checks nothing
    auto add = [&](const std::string& name, std::vector<std::string> regex) {
      CollectionRequest r;
      r.name = name;
      r.include_regex = std::move(regex);
      r.reductions = {"variance"};
      r.save_raw_tensor = false;
      out.push_back(std::move(r));
    };
    if (selection_.empty()) add("weights", {});
    for (const auto& c : selection_.collections) add(c, {});
    if (!selection_.regexes.empty()) add("tensor_variance", selection_.regexes);
    return out;
  }

 private:
  static constexpr size_t kMaxTensors = 100000;
  std::optional<double> max_, min_;
  TensorSelection selection_;
  std::set<std::string> seen_;           // tensors whose first saved variance is known
  std::set<std::string> constant_init_;  // first saved constant, variance not yet >= min
};

}  // namespace

BuiltinDef TensorVarianceDef() {
  return MakeDef<TensorVariance>("a tensor's variance is outside [min_threshold, max_threshold]");
}

}  // namespace trainscope::rules_internal
