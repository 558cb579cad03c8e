// AllZero (docs/rules/AllZero.md): at least threshold % of a tensor's values are zero. Without
// collection_names or tensor_regex it checks nothing and says so in its status (so that
// `trainscope run --rules all` starts).
#include "rules/builtin.h"

namespace trainscope::rules_internal {
namespace {

class AllZero : public BuiltinRule {
 public:
  static constexpr const char* kName = "AllZero";
  static std::vector<ParamSpec> Specs() {
    return {CollectionNamesSpec(),
            TensorRegexSpec(),
            {"threshold", ParamType::kDouble, "100.0",
             "the rule fires when at least this % of a tensor's values are zero"}};
  }

  explicit AllZero(ParsedParams p) : BuiltinRule(kName, std::move(p)) {
    threshold_ = params().Double("threshold");
    selection_ = SelectionFromParams(/*all_if_empty=*/false);
  }

  Status Validate() const {
    if (!(threshold_ > 0 && threshold_ <= 100)) {
      return Status::InvalidArgument("AllZero: threshold must be in (0, 100]");
    }
    return Status::OK();
  }

  Result<Verdict> InvokeAtStep(int64_t step) override {
    Verdict v;
    if (selection_.empty()) return v;
    TS_ASSIGN_OR_RETURN(auto names, data().Select(selection_, step));
    for (const auto& name : names) {
      auto zf = data().ReductionValue(name, step, Reduction{ReductionOp::kZeroFraction, false});
      if (!zf.ok()) {
        if (IsNoData(zf.status())) continue;
        return zf.status();
      }
      if (std::isnan(*zf)) continue;
      const double pct = *zf * 100.0;
      if (pct < threshold_) continue;
      // An empty tensor has zero_fraction 0 and never gets here.
      RuleFinding f = NewFinding(step);
      f.tensor = name;
      f.value = pct;
      f.threshold = threshold_;
      f.condition = "zero values (%) >= threshold";
      f.explanation = Num(pct) + "% of the values of " + name + " are zero (threshold " +
                      Num(threshold_) + "%)";
      f.recommendation =
          "an all-zero tensor carries no information: for weights, check the initialisation "
          "and that the layer is trained; for activations, look for dead ReLUs or a zeroed "
          "input upstream; for gradients, check that the loss depends on this layer (no "
          "detach()/no_grad() in the way)";
      v.Add(std::move(f));
    }
    return v;
  }

  std::string StatusNote() const override {
    if (!selection_.empty()) return {};
    return "nothing was checked: AllZero needs collection_names or tensor_regex (which tensors "
           "to check), e.g. tensor_regex=<model>_input_0 for the model's input";
  }

  std::vector<CollectionRequest> RequiredCollections() const override {
    std::vector<CollectionRequest> out;
    auto add = [&](const std::string& name, std::vector<std::string> regex) {
      CollectionRequest r;
      r.name = name;
      r.include_regex = std::move(regex);
      r.reductions = {"zero_fraction"};
      r.save_raw_tensor = false;
      out.push_back(std::move(r));
    };
    for (const auto& c : selection_.collections) add(c, {});
    if (!selection_.regexes.empty()) add("all_zero", selection_.regexes);
    return out;
  }

 private:
  double threshold_;
  TensorSelection selection_;
};

}  // namespace

BuiltinDef AllZeroDef() { return MakeDef<AllZero>("a tensor is (almost) entirely zero"); }

}  // namespace trainscope::rules_internal
