// DeadRelu (docs/rules/DeadRelu.md): more than threshold_layer % of a ReLU layer's units are
// active (> 0) in fewer than threshold_inactivity % of the samples, or at least
// threshold_layer_zeros % of all the layer's outputs are zero (most of the layer is dead,
// whatever the split between units that never fire and units that fire rarely).
#include <map>

#include "rules/loss_util.h"

namespace trainscope::rules_internal {
namespace {

// smdebug's ".*relu_output", widened to "relu1_output_0", "leaky_relu_output_0", and to
// activation modules named "act"/"activation" ("encoder.act_output_0").
constexpr const char* kDefaultRegex = ".*relu\\w*_output|(^|\\.)act\\w*_output";

class DeadRelu : public BuiltinRule {
 public:
  static constexpr const char* kName = "DeadRelu";
  static std::vector<ParamSpec> Specs() {
    return {CollectionNamesSpec(),
            TensorRegexSpec(kDefaultRegex),
            {"threshold_inactivity", ParamType::kDouble, "1.0",
             "a unit is dead if active (> 0) in fewer than this % of samples"},
            {"threshold_layer", ParamType::kDouble, "50.0",
             "the rule fires when more than this % of a layer's units are dead"},
            {"threshold_layer_zeros", ParamType::kDouble, "90.0",
             "the rule also fires when at least this % of a layer's outputs are zero (100: "
             "off)"}};
  }

  explicit DeadRelu(ParsedParams p) : BuiltinRule(kName, std::move(p)) {
    inactivity_ = params().Double("threshold_inactivity") / 100.0;
    layer_ = params().Double("threshold_layer") / 100.0;
    zeros_ = params().Double("threshold_layer_zeros") / 100.0;
    selection_ = SelectionFromParams(/*all_if_empty=*/false, {}, {kDefaultRegex});
    // With the default regex, tensors with negative values are not ReLU outputs ("act" may be
    // GELU or tanh) and are skipped; tensors the user names are taken as they are.
    skip_negative_ =
        params().StringList("tensor_regex") == std::vector<std::string>{kDefaultRegex} &&
        params().StringList("collection_names").empty();
    // By default also the collection "relu_output", which the PyTorch hook fills with the
    // outputs of ReLU modules by type, whatever their names ("1_output_0" in nn.Sequential).
    if (skip_negative_) selection_.collections.push_back("relu_output");
    min_samples_ = static_cast<int64_t>(std::ceil(1.0 / std::max(inactivity_, 1e-6)));
  }

  Status Validate() const {
    if (!(inactivity_ > 0 && inactivity_ <= 1) || !(layer_ >= 0 && layer_ < 1)) {
      return Status::InvalidArgument(
          "DeadRelu: threshold_inactivity must be in (0, 100] and "
          "threshold_layer in [0, 100)");
    }
    if (!(zeros_ > 0 && zeros_ <= 1)) {
      return Status::InvalidArgument("DeadRelu: threshold_layer_zeros must be in (0, 100], got " +
                                     Num(zeros_ * 100.0));
    }
    return Status::OK();
  }

  Result<Verdict> InvokeAtStep(int64_t step) override {
    NoteLoss(step);
    TS_ASSIGN_OR_RETURN(auto names, data().Select(selection_, step));
    Verdict v;
    for (const auto& name : names) {
      auto t = data().Value(name, step);
      if (!t.ok()) {
        if (IsNoData(t.status())) continue;
        return t.status();
      }
      if (!IsNumeric(t->dtype) || t->num_elements() == 0) continue;
      if (skip_negative_) {
        auto st = data().Stats(name, step);
        if (st.ok() && st->min < 0) continue;
      }
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
        if (x > 0) {
          ++a.active[static_cast<size_t>(layout.unit_of(i))];
          ++step_active;
        }
      });
      a.samples += layout.samples;
      // The layer's share of zero outputs at this step (judged at every saved step with enough
      // values: a share of thousands of values needs no accumulation).
      const int64_t step_values = t->num_elements();
      const double zero_fraction =
          1.0 - static_cast<double>(step_active) / static_cast<double>(step_values);
      const bool values_zero = step_values >= min_samples_ && zero_fraction >= zeros_;
      // Activity below threshold_inactivity % needs at least 100/threshold_inactivity samples
      // to be told apart from chance: accumulate consecutive saved steps until there are.
      int64_t dead = 0;
      double fraction = 0;
      const int64_t samples = a.samples;
      bool units_dead = false;
      if (a.samples >= min_samples_) {
        for (int64_t n : a.active) {
          if (static_cast<double>(n) < inactivity_ * static_cast<double>(a.samples)) ++dead;
        }
        fraction = static_cast<double>(dead) / static_cast<double>(layout.units);
        a.Reset();
        units_dead = fraction > layer_;
      }
      if (!units_dead && !values_zero) continue;
      RuleFinding f = NewFinding(step);
      f.tensor = name;
      if (units_dead) {
        f.value = fraction * 100.0;
        f.threshold = layer_ * 100.0;
        f.condition = "dead units (% of layer) > threshold_layer";
        f.explanation = std::to_string(dead) + " of " + std::to_string(layout.units) +
                        " units of " + name + " (" + Percent(fraction) +
                        ") were active in fewer than " + Percent(inactivity_) + " of " +
                        std::to_string(samples) + " samples (" + Percent(zero_fraction) +
                        " of the layer's outputs at this step are zero): they are dead and pass "
                        "no gradient";
      } else {
        f.value = zero_fraction * 100.0;
        f.threshold = zeros_ * 100.0;
        f.condition = "zero outputs (% of layer) >= threshold_layer_zeros";
        f.explanation = Percent(zero_fraction) + " of the " + std::to_string(step_values) +
                        " outputs of " + name + " (" + std::to_string(layout.units) +
                        " units) are zero at this step: most of the layer is dead and passes "
                        "almost no gradient";
      }
      f.recommendation = Advice();
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
      r.name = "relu_output";
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
  // Follows the (first) training loss, to tell whether the units died after a loss spike.
  void NoteLoss(int64_t step) {
    auto [mode, mode_step] = data().StepMode(step);
    if (!IsTrainLike(mode)) return;
    auto names = data().Select(losses_, step);
    if (!names.ok() || names->empty()) return;
    if (loss_name_.empty()) loss_name_ = names->front();
    auto value = ScalarAt(data(), loss_name_, step);
    if (!value.ok() || !*value) return;
    if (first_loss_step_ < 0) {
      first_loss_step_ = step;
      first_loss_ = **value;
    }
    if (max_loss_step_ < 0 || **value > max_loss_) {
      max_loss_ = **value;
      max_loss_step_ = step;
    }
  }

  std::string Advice() const {
    if (first_loss_step_ >= 0 && max_loss_step_ > first_loss_step_ && first_loss_ > 0 &&
        max_loss_ > kSpikeFactor * first_loss_) {
      return "the loss spiked to " + Num(max_loss_) + " at step " + std::to_string(max_loss_step_) +
             " (from " + Num(first_loss_) +
             " at the start) before the units died: the learning rate is too high, and the "
             "overshooting updates pushed the ReLUs' inputs below zero for every sample; lower "
             "the learning rate (try 10x smaller) or add a warm-up, clip gradients "
             "(torch.nn.utils.clip_grad_norm_), or use LeakyReLU/GELU";
    }
    return "dead ReLUs come from a too high learning rate or large negative biases: lower the "
           "learning rate, use LeakyReLU/GELU/ELU, initialise with He (kaiming_normal_) and zero "
           "biases, or add BatchNorm before the ReLU";
  }

  // A loss this many times its first value is a spike.
  static constexpr double kSpikeFactor = 1.5;
  TensorSelection losses_ = LossSelection();
  std::string loss_name_;
  int64_t first_loss_step_ = -1, max_loss_step_ = -1;
  double first_loss_ = 0, max_loss_ = 0;
  double inactivity_, layer_, zeros_;
  bool skip_negative_;
  int64_t min_samples_;
  TensorSelection selection_;
  std::map<std::string, UnitActivity> acc_;
};

}  // namespace

BuiltinDef DeadReluDef() { return MakeDef<DeadRelu>("most units of a ReLU layer never activate"); }

}  // namespace trainscope::rules_internal
