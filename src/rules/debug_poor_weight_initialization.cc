// PoorWeightInitialization (docs/rules/PoorWeightInitialization.md): in the first `steps`
// training steps, (a) the variance of activation inputs changes by more than `threshold` times
// between adjacent layers, or all units of a layer are identical (symmetric weights); (b) a
// weight gradient is degenerate (all zero, or its 5th-95th percentile spread below
// distribution_range times its mean |g|); each must hold at two evaluated steps in a row; or
// (c) the loss rose by more than 10% between the first and the last `patience` steps.
#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "rules/loss_util.h"

namespace trainscope::rules_internal {
namespace {

// smdebug's default ".*relu_input", widened to "relu1_input_0", "leaky_relu_input_0".
constexpr const char* kDefaultRegex = ".*relu\\w*_input";
// The collection of the raw gradients the rule reads (RequiredCollections).
constexpr const char* kInitialGradients = "initial_gradients";

class PoorWeightInitialization : public BuiltinRule {
 public:
  static constexpr const char* kName = "PoorWeightInitialization";
  static constexpr double kLossRise = 1.10;
  static constexpr int64_t kMinGradientElements = 16;

  static std::vector<ParamSpec> Specs() {
    return {{"activation_inputs_regex", ParamType::kString, kDefaultRegex,
             "regex of the activation inputs (pre-activations) compared across layers"},
            {"threshold", ParamType::kDouble, "10.0",
             "largest tolerated variance ratio between adjacent layers"},
            {"distribution_range", ParamType::kDouble, "0.001",
             "smallest tolerated 5th-95th percentile spread of a weight gradient, relative "
             "to its mean |g|"},
            {"patience", ParamType::kInt, "5", "steps averaged at each end of the loss check"},
            {"steps", ParamType::kInt, "10", "training steps the rule looks at"}};
  }

  explicit PoorWeightInitialization(ParsedParams p) : BuiltinRule(kName, std::move(p)) {
    threshold_ = params().Double("threshold");
    range_ = params().Double("distribution_range");
    patience_ = params().Int("patience");
    steps_ = params().Int("steps");
    activations_.regexes = {params().String("activation_inputs_regex")};
    // By default also the collection "relu_input", which the PyTorch hook fills with the inputs
    // of ReLU modules by type, whatever their names ("1_input_0" in nn.Sequential).
    if (params().String("activation_inputs_regex") == kDefaultRegex) {
      activations_.collections = {"relu_input"};
    }
    gradients_.collections = {"gradients"};
    gradients_.regexes = {"^gradient"};
    losses_ = LossSelection();
  }

  Status Validate() const {
    if (steps_ < 1 || patience_ < 1) {
      return Status::InvalidArgument("PoorWeightInitialization: steps and patience must be >= 1");
    }
    if (!(threshold_ > 1)) {
      return Status::InvalidArgument("PoorWeightInitialization: threshold must be > 1");
    }
    return Status::OK();
  }

  Result<Verdict> InvokeAtStep(int64_t step) override {
    auto [mode, mode_step] = data().StepMode(step);
    Verdict v;
    if (!IsTrainLike(mode) || evaluated_ >= steps_) return v;  // only the first `steps` steps
    ++evaluated_;
    std::set<std::string> holding;  // condition keys that hold at this step
    TS_RETURN_IF_ERROR(CheckActivations(step, &holding, &v));
    TS_RETURN_IF_ERROR(CheckGradients(step, &holding, &v));
    TS_RETURN_IF_ERROR(CheckLoss(step, &v));
    held_before_ = std::move(holding);
    if (evaluated_ >= steps_) {
      v.end_of_rule = true;
      FinishLoss(step, &v);
    }
    return v;
  }

  Result<Verdict> Finish(int64_t last_step) override {
    Verdict v;
    FinishLoss(last_step, &v);
    return v;
  }

  std::vector<CollectionRequest> RequiredCollections() const override {
    CollectionRequest act;
    act.name = "relu_input";
    act.include_regex = activations_.regexes;
    act.save_interval = 1;
    act.end_step = steps_;
    // The raw gradients of the first steps, in a collection of their own: merged into
    // "gradients", whose later steps the other rules read as reductions, one save_raw_tensor
    // flag would save every gradient raw at every saved step of the whole run.
    CollectionRequest grad;
    grad.name = kInitialGradients;
    grad.include_regex = {"^gradient/"};
    grad.save_interval = 1;
    grad.end_step = steps_;
    CollectionRequest loss = LossesRequest();
    return {act, grad, loss};
  }

  size_t StateBytes() const override {
    size_t b = losses_first_.size() * 8 + losses_last_.size() * 8;
    for (const auto& k : held_before_) b += k.capacity() + 32;
    for (const auto& k : reported_) b += k.capacity() + 32;
    return b + 64;
  }

 private:
  // True when condition `key` also held at the previous evaluated step (or steps == 1), and was
  // not reported yet.
  bool Confirmed(const std::string& key, std::set<std::string>* holding) {
    holding->insert(key);
    if (reported_.count(key)) return false;
    if (steps_ > 1 && !held_before_.count(key)) return false;
    reported_.insert(key);
    return true;
  }

  Status CheckActivations(int64_t step, std::set<std::string>* holding, Verdict* v) {
    TS_ASSIGN_OR_RETURN(auto names, data().Select(activations_, step));
    // Adjacent layers in the order data flows through them (the hook records it), not by name:
    // "decoder.1" sorts before "encoder.1".
    SortInForwardOrder(data().trial(), &names);
    std::vector<std::pair<std::string, double>> vars;
    for (const auto& name : names) {
      auto st = data().Stats(name, step);
      double var;
      if (st.ok()) {
        var = st->Value(Reduction{ReductionOp::kVariance, false});
        TS_RETURN_IF_ERROR(CheckSymmetry(name, step, *st, holding, v));
      } else if (IsNoData(st.status())) {
        auto r = data().ReductionValue(name, step, Reduction{ReductionOp::kVariance, false});
        if (!r.ok()) {
          if (IsNoData(r.status())) continue;
          return r.status();
        }
        var = *r;
      } else {
        return st.status();
      }
      if (std::isfinite(var)) vars.emplace_back(name, var);
    }
    for (size_t i = 0; i + 1 < vars.size(); ++i) {
      const double a = vars[i].second, b = vars[i + 1].second;
      const double hi = std::max(a, b), lo = std::min(a, b);
      const double ratio = lo > 0 ? hi / lo : (hi > 0 ? INFINITY : 1.0);
      if (!(ratio > threshold_)) continue;
      const std::string key = "var:" + vars[i].first + "|" + vars[i + 1].first;
      if (!Confirmed(key, holding)) continue;
      RuleFinding f = NewFinding(step);
      f.tensor = vars[i + 1].first;
      f.value = ratio;
      f.threshold = threshold_;
      f.condition = "variance ratio of adjacent activation inputs > threshold";
      f.explanation = "the variance of the activation inputs goes from " + Num(a) + " (" +
                      vars[i].first + ") to " + Num(b) + " (" + vars[i + 1].first + "), a factor " +
                      Num(ratio) + " (more than " + Num(threshold_) + "): signals " +
                      (b < a ? "shrink" : "grow") + " from layer to layer";
      f.recommendation =
          "initialise weights so each layer keeps the variance of its input: He init "
          "(torch.nn.init.kaiming_normal_(w, nonlinearity='relu')) before ReLUs, Xavier "
          "(xavier_uniform_) before tanh/sigmoid, biases at zero; or add BatchNorm/LayerNorm";
      v->Add(std::move(f));
    }
    return Status::OK();
  }

  // All units of an (N, F) activation input equal for every sample: the weights are symmetric.
  Status CheckSymmetry(const std::string& name, int64_t step, const TensorStats& st,
                       std::set<std::string>* holding, Verdict* v) {
    auto t = data().Value(name, step);
    if (!t.ok() || t->shape.size() != 2 || t->shape[0] < 2 || t->shape[1] < 2) return Status::OK();
    if (!(st.Value(Reduction{ReductionOp::kVariance, false}) > 0)) return Status::OK();
    const int64_t units = t->shape[1];
    const std::vector<double> x = ToDoubles(*t);
    const double scale = std::max(st.abs_max, 1e-30);
    for (int64_t n = 0; n < t->shape[0]; ++n) {
      const double first = x[static_cast<size_t>(n * units)];
      for (int64_t u = 1; u < units; ++u) {
        if (std::fabs(x[static_cast<size_t>(n * units + u)] - first) > 1e-6 * scale) {
          return Status::OK();
        }
      }
    }
    if (!Confirmed("sym:" + name, holding)) return Status::OK();
    RuleFinding f = NewFinding(step);
    f.tensor = name;
    f.value = 0;
    f.threshold = 0;
    f.condition = "all units of the layer are identical";
    f.explanation = "all " + std::to_string(units) + " units of " + name +
                    " receive the same input for every sample: the weights before it are "
                    "symmetric (constant initialisation), so the units can never differ";
    f.recommendation =
        "initialise weights randomly (torch.nn.init.kaiming_normal_ or xavier_uniform_), "
        "never to a constant; constant init only suits biases";
    v->Add(std::move(f));
    return Status::OK();
  }

  Status CheckGradients(int64_t step, std::set<std::string>* holding, Verdict* v) {
    TS_ASSIGN_OR_RETURN(auto names, data().Select(gradients_, step));
    for (const auto& name : names) {
      if (name.find("weight") == std::string::npos) continue;
      auto t = data().Value(name, step);
      if (!t.ok()) {
        if (IsNoData(t.status())) continue;
        return t.status();
      }
      if (t->num_elements() < kMinGradientElements || !IsNumeric(t->dtype)) continue;
      std::vector<double> g = ToDoubles(*t);
      // A sparse gradient (an embedding's: zero for every token not in the batch, by design)
      // is judged on the elements that got a gradient at all.
      const size_t total = g.size();
      std::vector<double> nonzero;
      for (double x : g) {
        if (x != 0) nonzero.push_back(x);
      }
      if (!nonzero.empty() && nonzero.size() < total) {
        if (nonzero.size() < static_cast<size_t>(kMinGradientElements)) continue;
        g.swap(nonzero);
      }
      double abs_sum = 0;
      for (double x : g) abs_sum += std::fabs(x);
      const double mean_abs = abs_sum / static_cast<double>(g.size());
      if (!std::isfinite(mean_abs)) continue;
      const size_t lo_i = static_cast<size_t>(0.05 * static_cast<double>(g.size() - 1));
      const size_t hi_i = static_cast<size_t>(0.95 * static_cast<double>(g.size() - 1));
      std::nth_element(g.begin(), g.begin() + static_cast<long>(lo_i), g.end());
      const double p5 = g[lo_i];
      std::nth_element(g.begin(), g.begin() + static_cast<long>(hi_i), g.end());
      const double p95 = g[hi_i];
      const double rel = mean_abs > 0 ? (p95 - p5) / mean_abs : 0.0;
      if (!(rel < range_)) continue;
      if (!Confirmed("grad:" + name, holding)) continue;
      RuleFinding f = NewFinding(step);
      f.tensor = name;
      f.value = rel;
      f.threshold = range_;
      f.condition = "(p95 - p5) / mean|g| < distribution_range";
      f.explanation =
          mean_abs == 0
              ? name + " is exactly zero at two steps in a row: nothing reaches these weights"
              : name + " has a 5th-95th percentile spread of " + Num(p95 - p5) + ", only " +
                    Num(rel) + " times its mean |g| " + Num(mean_abs) +
                    ": all its weights get the same update (symmetric initialisation)";
      f.recommendation =
          "initialise weights randomly with a scale matched to the layer (He/kaiming for ReLU, "
          "Xavier for tanh/sigmoid); zero or constant weights make every unit learn the same "
          "thing, and an all-zero layer blocks the gradient of the layers before it";
      v->Add(std::move(f));
    }
    return Status::OK();
  }

  Status CheckLoss(int64_t step, Verdict*) {
    TS_ASSIGN_OR_RETURN(auto names, data().Select(losses_, step));
    if (names.empty()) return Status::OK();
    if (loss_name_.empty()) loss_name_ = names.front();
    TS_ASSIGN_OR_RETURN(auto value, ScalarAt(data(), loss_name_, step));
    if (!value) return Status::OK();
    if (static_cast<int64_t>(losses_first_.size()) < patience_) {
      losses_first_.push_back(*value);
    } else {
      losses_last_.push_back(*value);
      if (static_cast<int64_t>(losses_last_.size()) > patience_) losses_last_.pop_front();
    }
    last_loss_step_ = step;
    return Status::OK();
  }

  // Compares the first and the last `patience` losses once (at the end of the window).
  void FinishLoss(int64_t step, Verdict* v) {
    if (loss_checked_) return;
    loss_checked_ = true;
    if (static_cast<int64_t>(losses_first_.size()) < patience_ ||
        static_cast<int64_t>(losses_last_.size()) < patience_) {
      return;
    }
    double first = 0, last = 0;
    for (double x : losses_first_) first += x;
    for (double x : losses_last_) last += x;
    first /= static_cast<double>(losses_first_.size());
    last /= static_cast<double>(losses_last_.size());
    if (!(last > first * kLossRise && first > 0)) return;
    RuleFinding f = NewFinding(last_loss_step_ >= 0 ? last_loss_step_ : step);
    f.tensor = loss_name_;
    f.value = last / first;
    f.threshold = kLossRise;
    f.condition = "mean of the last patience losses > 1.1 x mean of the first patience";
    f.explanation = "in the first " + std::to_string(evaluated_) + " steps the loss rose from " +
                    Num(first) + " to " + Num(last) + " (mean of " + std::to_string(patience_) +
                    " steps each): training diverges from the start";
    f.recommendation =
        "a loss that rises from the first steps points to too large initial weights or "
        "learning rate: use He/Xavier initialisation, lower the learning rate or add a warm-up";
    v->Add(std::move(f));
  }

  double threshold_, range_;
  int64_t patience_, steps_;
  TensorSelection activations_, gradients_, losses_;
  int64_t evaluated_ = 0;
  std::set<std::string> held_before_, reported_;
  std::string loss_name_;
  std::vector<double> losses_first_;
  std::deque<double> losses_last_;
  int64_t last_loss_step_ = -1;
  bool loss_checked_ = false;
};

}  // namespace

BuiltinDef PoorWeightInitializationDef() {
  return MakeDef<PoorWeightInitialization>(
      "weights are badly initialised (activation variances explode or collapse across layers, "
      "symmetric units, degenerate gradients)");
}

}  // namespace trainscope::rules_internal
