// ExplodingTensor (docs/rules/ExplodingTensor.md): a NaN (or, unless only_nan, an infinity) in
// any selected tensor, seen in the raw value or in any saved reduction.
#include "rules/builtin.h"

namespace trainscope::rules_internal {
namespace {

class ExplodingTensor : public BuiltinRule {
 public:
  static constexpr const char* kName = "ExplodingTensor";
  // Findings per step beyond which the rest are only counted in the last one's explanation.
  static constexpr int kMaxFindingsPerStep = 10;

  static std::vector<ParamSpec> Specs() {
    return {CollectionNamesSpec(),
            TensorRegexSpec(),
            {"only_nan", ParamType::kBool, "False", "report NaN only, not +-infinity"}};
  }
  explicit ExplodingTensor(ParsedParams p)
      : BuiltinRule(kName, std::move(p)), only_nan_(params().Bool("only_nan")) {
    selection_ = SelectionFromParams(/*all_if_empty=*/true);
  }
  Status Validate() const { return Status::OK(); }

  Result<Verdict> InvokeAtStep(int64_t step) override {
    TS_ASSIGN_OR_RETURN(auto names, data().Select(selection_, step));
    Verdict v;
    int bad = 0;
    for (const auto& name : names) {
      TS_ASSIGN_OR_RETURN(auto problem, Check(name, step));
      if (!problem) continue;
      ++bad;
      if (bad > kMaxFindingsPerStep) continue;
      v.Add(std::move(*problem));
    }
    if (bad > kMaxFindingsPerStep) {
      v.findings.back().explanation += " (" + std::to_string(bad - kMaxFindingsPerStep) +
                                       " more tensors at this step are not listed)";
    }
    return v;
  }

  std::vector<CollectionRequest> RequiredCollections() const override {
    std::vector<CollectionRequest> out;
    auto add = [&](const std::string& name, std::vector<std::string> regex) {
      CollectionRequest r;
      r.name = name;
      r.include_regex = std::move(regex);
      r.save_interval = 10;
      r.reductions = {"max", "min"};
      r.save_raw_tensor = false;
      out.push_back(std::move(r));
    };
    if (selection_.empty()) {
      add("gradients", {});
      add("weights", {});
      out.back().train_only = true;  // an EVAL or PREDICT step leaves them as they were
      CollectionRequest losses;
      losses.name = "losses";
      losses.save_interval = 1;
      out.push_back(losses);
    } else {
      for (const auto& c : selection_.collections) add(c, {});
      if (!selection_.regexes.empty()) add("exploding_tensor", selection_.regexes);
    }
    return out;
  }

 private:
  Result<std::optional<RuleFinding>> Check(const std::string& name, int64_t step) {
    int64_t nan_count = 0, inf_count = 0;
    double shown = 0;
    const char* source = "raw value";
    auto stats = data().Stats(name, step);
    if (stats.ok()) {
      nan_count = stats->nan_count;
      inf_count = stats->inf_count;
      shown = static_cast<double>(only_nan_ ? nan_count : nan_count + inf_count);
    } else if (IsNoData(stats.status())) {
      // No raw value: any saved reduction that is NaN or infinite tells.
      auto saved = data().trial().SavedReductions(name, step);
      if (!saved.ok()) {
        if (IsNoData(saved.status())) return std::optional<RuleFinding>();
        return saved.status();
      }
      source = "saved reductions";
      for (const auto& [r, value] : *saved) {
        if (std::isnan(value)) {
          nan_count = 1;
          shown = value;
        } else if (std::isinf(value) && inf_count == 0) {
          inf_count = 1;
          if (nan_count == 0) shown = value;
        }
      }
    } else {
      return stats.status();
    }
    const bool has_nan = nan_count > 0;
    const bool has_inf = !only_nan_ && inf_count > 0;
    if (!has_nan && !has_inf) return std::optional<RuleFinding>();
    RuleFinding f = NewFinding(step);
    f.tensor = name;
    f.value = shown;
    f.threshold = 0;
    const std::string what = has_nan && has_inf ? "NaN and infinite values"
                             : has_nan          ? "NaN values"
                                                : "infinite values";
    f.condition = only_nan_ ? "nan_count > 0" : "nan_count + inf_count > 0";
    if (std::string(source) == "raw value") {
      f.explanation = name + " has " + what + " (" + std::to_string(nan_count) + " NaN, " +
                      std::to_string(inf_count) + " inf): the training has diverged numerically";
    } else {
      f.explanation = name + " has " + what + " (seen in its " + source +
                      "): the training has diverged numerically";
    }
    f.recommendation =
        "lower the learning rate (try 10x smaller), clip gradients "
        "(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)), look for log(0), division "
        "by zero or sqrt of a negative in the model and loss, use numerically stable losses "
        "(CrossEntropyLoss/BCEWithLogitsLoss on logits), check the inputs for NaN, and with "
        "float16 use torch.cuda.amp.GradScaler";
    return std::optional<RuleFinding>(std::move(f));
  }

  bool only_nan_;
  TensorSelection selection_;
};

}  // namespace

BuiltinDef ExplodingTensorDef() {
  return MakeDef<ExplodingTensor>("a tensor holds NaN (or infinite) values");
}

}  // namespace trainscope::rules_internal
