// UnchangedTensor (docs/rules/UnchangedTensor.md): a tensor allclose to itself over its last
// num_steps saved training steps (TRAIN or GLOBAL; the model does not change in EVAL/PREDICT);
// exactly equal once it has been seen to change beyond the tolerances. A frozen parameter is
// skipped: the trial's _meta.parameters says which are (requires_grad False); without it, a
// parameter with no gradient in a trial that holds gradients counts as frozen. A gradient that is
// all zero (within atol) is not "unchanged" but absent: VanishingGradient and AllZero judge it.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "rules/builtin.h"
#include "trainscope/tensor_names.h"

namespace trainscope::rules_internal {
namespace {

class UnchangedTensor : public BuiltinRule {
 public:
  static constexpr const char* kName = "UnchangedTensor";
  static constexpr size_t kMaxTensors = 100000;

  static std::vector<ParamSpec> Specs() {
    return {CollectionNamesSpec(),
            TensorRegexSpec(),
            {"num_steps", ParamType::kInt, "3", "saved steps over which the tensor must change"},
            {"rtol", ParamType::kDouble, "1e-05", "relative tolerance (numpy.allclose)"},
            {"atol", ParamType::kDouble, "1e-08", "absolute tolerance (numpy.allclose)"},
            {"equal_nan", ParamType::kBool, "False", "NaN equals NaN"}};
  }

  explicit UnchangedTensor(ParsedParams p) : BuiltinRule(kName, std::move(p)) {
    num_steps_ = params().Int("num_steps");
    rtol_ = params().Double("rtol");
    atol_ = params().Double("atol");
    equal_nan_ = params().Bool("equal_nan");
    selection_ = SelectionFromParams(/*all_if_empty=*/true);
  }

  Status Validate() const {
    if (num_steps_ < 2) return Status::InvalidArgument("UnchangedTensor: num_steps must be >= 2");
    return Status::OK();
  }

  Result<Verdict> InvokeAtStep(int64_t step) override {
    Verdict v;
    // Parameters do not change during an evaluation or prediction pass (no optimizer step), so
    // comparing there would report every pass of >= num_steps saved steps.
    const Mode mode = data().StepMode(step).first;
    if (mode == Mode::kEval || mode == Mode::kPredict) return v;
    TS_ASSIGN_OR_RETURN(auto names, data().Select(selection_, step));
    // Told nothing, the rule judges what the run saves except module inputs: a model's input may
    // be constant by design (position ids, attention masks, BERT's token_type_ids, a fixed noise
    // vector), where an unchanged weight or output is a training that does not train.
    if (selection_.empty()) {
      std::erase_if(names, [](const std::string& n) {
        const size_t module = tensor_names::ModuleOf(n).size();
        return module > 0 &&
               std::string_view(n).substr(module).starts_with(tensor_names::kInputInfix);
      });
    }
    // Frozen parameters (requires_grad False: the trial holds gradients, none for them) are
    // meant not to change.
    auto grads = data().Select(gradients_, step);
    if (grads.ok()) {
      for (const auto& g : *grads) {
        if (gradient_names_.size() < kMaxTensors) gradient_names_.insert(g);
      }
    }
    std::set<std::string> params;
    if (!gradient_names_.empty()) {
      auto p = data().Select(params_, step);
      if (p.ok()) params.insert(p->begin(), p->end());
    }
    const Trial& trial = data().trial();
    for (const auto& name : names) {
      const std::optional<bool> trainable = trial.ParameterTrainable(name);
      const bool no_gradient = !gradient_names_.count(tensor_names::GradientName(name));
      if (trainable ? !*trainable : (params.count(name) && no_gradient)) {
        if (frozen_.size() < kMaxTensors) frozen_.insert(name);
        continue;
      }
      auto cur = data().Value(name, step);
      if (!cur.ok()) {
        if (IsNoData(cur.status())) continue;
        return cur.status();
      }
      if (!IsNumeric(cur->dtype)) continue;
      if (name.starts_with(tensor_names::kGradientPrefix)) {
        auto max_abs = ComputeReduction(cur->view(), {ReductionOp::kMax, /*abs=*/true});
        if (max_abs.ok() && *max_abs <= atol_) {
          tracks_.erase(name);  // a zero gradient (e.g. a bias before BatchNorm): not this rule's
          continue;
        }
      }
      auto it = tracks_.find(name);
      if (it == tracks_.end()) {
        if (tracks_.size() < kMaxTensors) tracks_[name] = Track{step, 1, false};
        continue;
      }
      Track& t = it->second;
      auto anchor = data().Value(name, t.anchor_step);
      double diff = 0;
      // A tensor seen to change beyond the tolerances is being trained: it counts as unchanged
      // only when it is exactly the same (a learning rate annealed to ~0 moves it by less than
      // rtol, a bug that stops its training leaves it bit for bit as it was).
      const double rtol = t.changed ? 0.0 : rtol_;
      const double atol = t.changed ? 0.0 : atol_;
      if (!anchor.ok() || !AllClose(*cur, *anchor, rtol, atol, equal_nan_, &diff)) {
        const bool changed =
            t.changed || (anchor.ok() && !AllClose(*cur, *anchor, rtol_, atol_, equal_nan_, &diff));
        t = Track{step, 1, changed};
        continue;
      }
      if (++t.streak < num_steps_) continue;
      RuleFinding f = NewFinding(step);
      f.tensor = name;
      f.value = diff;
      f.threshold = t.changed ? 0.0 : atol_;
      f.condition = "allclose over the last num_steps saved training steps";
      f.explanation = name + " has not changed over its last " + std::to_string(t.streak) +
                      " saved training steps (" + std::to_string(t.anchor_step) + " to " +
                      std::to_string(step) + ", largest difference " + Num(diff) + ")";
      if (trainable.value_or(false) && no_gradient && !gradient_names_.empty()) {
        f.explanation += ": it is trainable (requires_grad) but no gradient ever reached it";
        f.recommendation =
            "something between this parameter and the loss cuts the graph: a detach(), .data, "
            "torch.no_grad() or a non-differentiable step in forward(), or its output is not "
            "used by the loss; find where its module's output is computed and keep it in the "
            "graph (or freeze it with requires_grad_(False) if that is intended)";
        v.Add(std::move(f));
        t = Track{step, 1, t.changed};
        continue;
      }
      f.recommendation =
          "a tensor that never changes is not being trained: check that its parameters are in "
          "the optimizer and have requires_grad=True, that optimizer.step() runs, that the "
          "learning rate is not 0, and that no dead ReLU or detach() blocks its gradient; for "
          "inputs, check that the data loader yields new batches";
      v.Add(std::move(f));
      t = Track{step, 1, t.changed};  // report again after another num_steps unchanged steps
    }
    return v;
  }

  std::vector<CollectionRequest> RequiredCollections() const override {
    std::vector<CollectionRequest> out;
    auto add = [&](const std::string& name, std::vector<std::string> regex) {
      CollectionRequest r;
      r.name = name;
      r.include_regex = std::move(regex);
      r.train_only = true;  // EVAL and PREDICT steps are not judged (InvokeAtStep)
      out.push_back(std::move(r));
    };
    if (selection_.empty()) add("weights", {});
    for (const auto& c : selection_.collections) add(c, {});
    if (!selection_.regexes.empty()) add("unchanged_tensor", selection_.regexes);
    // Which parameters get gradients at all (frozen ones do not): the names are enough.
    CollectionRequest g;
    g.name = "gradients";
    g.reductions = {"abs_mean"};
    g.save_raw_tensor = false;
    out.push_back(std::move(g));
    return out;
  }

  size_t StateBytes() const override {
    size_t b = 0;
    for (const auto& [name, t] : tracks_) b += name.capacity() + sizeof(Track) + 48;
    return b;
  }

  std::string StatusNote() const override {
    if (frozen_.empty()) return {};
    return std::to_string(frozen_.size()) +
           " frozen parameter(s) skipped (the trial holds gradients, none for them): " +
           *frozen_.begin() + (frozen_.size() > 1 ? ", ..." : "");
  }

 private:
  TensorSelection gradients_{{"gradients"}, {"^gradient/"}};
  TensorSelection params_{{"weights", "biases"}, {}};
  std::set<std::string> gradient_names_;  // gradients seen in the trial (bounded)
  std::set<std::string> frozen_;          // parameters skipped as frozen
  struct Track {
    int64_t anchor_step;
    int64_t streak;
    bool changed;  // it changed beyond rtol/atol between two saved training steps
  };
  int64_t num_steps_;
  double rtol_, atol_;
  bool equal_nan_;
  TensorSelection selection_;
  std::map<std::string, Track> tracks_;
};

}  // namespace

BuiltinDef UnchangedTensorDef() {
  return MakeDef<UnchangedTensor>("a tensor stayed the same over num_steps saved steps");
}

}  // namespace trainscope::rules_internal
