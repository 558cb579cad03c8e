// SaturatedActivation (docs/rules/SaturatedActivation.md): more than threshold_layer % of a
// tanh/sigmoid layer's units have their input outside (min, max) for all but
// threshold_inactivity % of the samples, or more than threshold_layer % of all the layer's inputs
// are outside (min, max) (the layer is saturated almost everywhere, whatever the per-unit split).
#include <map>

#include "rules/builtin.h"

namespace trainscope::rules_internal {
namespace {

// smdebug's ".*tanh_input|.*sigmoid_input", widened to "tanh1_input_0", "gate_sigmoid_input_0".
constexpr const char* kDefaultRegex = ".*tanh\\w*_input|.*sigmoid\\w*_input";

class SaturatedActivation : public BuiltinRule {
 public:
  static constexpr const char* kName = "SaturatedActivation";
  static std::vector<ParamSpec> Specs() {
    return {
        CollectionNamesSpec(),
        TensorRegexSpec(kDefaultRegex),
        {"threshold_tanh_min", ParamType::kDouble, "-9.4999", "tanh input below: saturated"},
        {"threshold_tanh_max", ParamType::kDouble, "9.4999", "tanh input above: saturated"},
        {"threshold_sigmoid_min", ParamType::kDouble, "-23", "sigmoid input below: saturated"},
        {"threshold_sigmoid_max", ParamType::kDouble, "16.99999", "sigmoid input above: saturated"},
        {"threshold_inactivity", ParamType::kDouble, "1.0",
         "a unit is saturated if active (input within the range) in fewer than this % of "
         "samples"},
        {"threshold_layer", ParamType::kDouble, "50.0",
         "the rule fires when more than this % of a layer's units are saturated"}};
  }

  explicit SaturatedActivation(ParsedParams p) : BuiltinRule(kName, std::move(p)) {
    tanh_min_ = params().Double("threshold_tanh_min");
    tanh_max_ = params().Double("threshold_tanh_max");
    sig_min_ = params().Double("threshold_sigmoid_min");
    sig_max_ = params().Double("threshold_sigmoid_max");
    inactivity_ = params().Double("threshold_inactivity") / 100.0;
    layer_ = params().Double("threshold_layer") / 100.0;
    selection_ = SelectionFromParams(/*all_if_empty=*/false, {}, {kDefaultRegex});
    // By default also the collection the PyTorch hook fills with the inputs of Tanh/Sigmoid
    // modules by type, whatever their names ("1_input_0" in nn.Sequential); a name that says
    // neither tanh nor sigmoid is judged with the tanh range (the narrower one).
    if (params().StringList("tensor_regex") == std::vector<std::string>{kDefaultRegex} &&
        params().StringList("collection_names").empty()) {
      selection_.collections.push_back("saturated_activation_inputs");
    }
    min_samples_ = static_cast<int64_t>(std::ceil(1.0 / std::max(inactivity_, 1e-6)));
  }

  Status Validate() const {
    if (!(inactivity_ > 0 && inactivity_ <= 1) || !(layer_ >= 0 && layer_ < 1)) {
      return Status::InvalidArgument(
          "SaturatedActivation: threshold_inactivity must be in "
          "(0, 100] and threshold_layer in [0, 100)");
    }
    if (!(tanh_min_ < tanh_max_) || !(sig_min_ < sig_max_)) {
      return Status::InvalidArgument(
          "SaturatedActivation: each min threshold must be below its "
          "max threshold");
    }
    return Status::OK();
  }

  Result<Verdict> InvokeAtStep(int64_t step) override {
    TS_ASSIGN_OR_RETURN(auto names, data().Select(selection_, step));
    Verdict v;
    for (const auto& name : names) {
      auto t = data().Value(name, step);
      if (!t.ok()) {
        if (IsNoData(t.status())) continue;
        return t.status();
      }
      if (!IsNumeric(t->dtype) || t->num_elements() == 0) continue;
      const bool sigmoid = name.find("sigmoid") != std::string::npos;
      const double lo = sigmoid ? sig_min_ : tanh_min_;
      const double hi = sigmoid ? sig_max_ : tanh_max_;
      const UnitLayout layout = LayoutOf(t->shape);
      if (layout.units == 0) continue;
      if (acc_.size() >= 256 && !acc_.count(name)) continue;
      UnitActivity& a = acc_[name];
      if (a.shape.size() != t->shape.size() ||
          static_cast<int64_t>(a.active.size()) != layout.units) {
        a.active.assign(static_cast<size_t>(layout.units), 0);
        a.samples = 0;
        a.shape = t->shape;
      }
      int64_t step_active = 0;
      ForEachElement(*t, [&](int64_t i, double x) {
        if (x > lo && x < hi) {
          ++a.active[static_cast<size_t>(layout.unit_of(i))];
          ++step_active;
        }
      });
      a.samples += layout.samples;
      // The layer's share of inputs in the flat region at this step (judged at every saved step
      // with enough values).
      const int64_t step_values = t->num_elements();
      const double flat_fraction =
          1.0 - static_cast<double>(step_active) / static_cast<double>(step_values);
      const bool values_flat = step_values >= min_samples_ && flat_fraction > layer_;
      int64_t saturated = 0;
      double fraction = 0;
      const int64_t samples = a.samples;
      bool units_saturated = false;
      if (a.samples >= min_samples_) {
        for (int64_t n : a.active) {
          if (static_cast<double>(n) < inactivity_ * static_cast<double>(a.samples)) ++saturated;
        }
        fraction = static_cast<double>(saturated) / static_cast<double>(layout.units);
        a.Reset();
        units_saturated = fraction > layer_;
      }
      if (!units_saturated && !values_flat) continue;
      const std::string kind = sigmoid ? "sigmoid" : "tanh";
      RuleFinding f = NewFinding(step);
      f.tensor = name;
      f.threshold = layer_ * 100.0;
      if (units_saturated) {
        f.value = fraction * 100.0;
        f.condition = "saturated units (% of layer) > threshold_layer";
        f.explanation = std::to_string(saturated) + " of " + std::to_string(layout.units) +
                        " units of " + name + " (" + Percent(fraction) +
                        ") had their input outside (" + Num(lo) + ", " + Num(hi) + ") in " +
                        Percent(1 - inactivity_) + " or more of " + std::to_string(samples) +
                        " samples: the " + kind + " is saturated and passes no gradient";
      } else {
        f.value = flat_fraction * 100.0;
        f.condition = "inputs in the flat region (% of layer) > threshold_layer";
        f.explanation = Percent(flat_fraction) + " of the " + std::to_string(step_values) +
                        " inputs of " + name + " (" + std::to_string(layout.units) +
                        " units) are outside (" + Num(lo) + ", " + Num(hi) +
                        ") at this step, in "
                        "the " +
                        kind +
                        "'s flat region: most of the layer is saturated and "
                        "passes almost no gradient";
      }
      f.recommendation =
          "pre-activations are too large: normalise the inputs, add BatchNorm/LayerNorm before "
          "the activation, use Xavier initialisation (smaller weights) and a lower learning rate, "
          "or use ReLU/GELU in hidden layers";
      v.Add(std::move(f));
    }
    return v;
  }

  std::vector<CollectionRequest> RequiredCollections() const override {
    std::vector<CollectionRequest> out;
    for (const auto& c : selection_.collections) {
      CollectionRequest r;
      r.name = c;
      out.push_back(r);
    }
    if (!selection_.regexes.empty()) {
      CollectionRequest r;
      r.name = "saturated_activation_inputs";
      r.include_regex = selection_.regexes;
      out.push_back(r);
    }
    return out;
  }

  size_t StateBytes() const override {
    size_t b = 0;
    for (const auto& [name, a] : acc_) b += name.capacity() + a.bytes() + 64;
    return b;
  }

 private:
  double tanh_min_, tanh_max_, sig_min_, sig_max_, inactivity_, layer_;
  int64_t min_samples_;
  TensorSelection selection_;
  std::map<std::string, UnitActivity> acc_;
};

}  // namespace

BuiltinDef SaturatedActivationDef() {
  return MakeDef<SaturatedActivation>("most units of a tanh/sigmoid layer are saturated");
}

}  // namespace trainscope::rules_internal
