// SimilarAcrossRuns (docs/rules/SimilarAcrossRuns.md): a selected tensor differs (not
// numpy.allclose) between the base trial and another trial at the same global step.
#include <algorithm>
#include <deque>

#include "rules/builtin.h"

namespace trainscope::rules_internal {
namespace {

class SimilarAcrossRuns : public BuiltinRule {
 public:
  static constexpr const char* kName = "SimilarAcrossRuns";
  static constexpr size_t kMaxPending = 64;
  static constexpr int kMaxFindingsPerStep = 10;

  static std::vector<ParamSpec> Specs() {
    return {{"other_trials", ParamType::kStringList, "None",
             "paths of the trials to compare with (required)"},
            CollectionNamesSpec(),
            TensorRegexSpec(),
            {"rtol", ParamType::kDouble, "1e-05", "relative tolerance (numpy.allclose)"},
            {"atol", ParamType::kDouble, "1e-08", "absolute tolerance (numpy.allclose)"}};
  }

  explicit SimilarAcrossRuns(ParsedParams p) : BuiltinRule(kName, std::move(p)) {
    rtol_ = params().Double("rtol");
    atol_ = params().Double("atol");
    selection_ = SelectionFromParams(/*all_if_empty=*/true);
  }

  Status Validate() const {
    if (params().StringList("other_trials").empty()) {
      return Status::InvalidArgument(
          "SimilarAcrossRuns: other_trials is required (the path of "
          "the trial to compare with)");
    }
    return Status::OK();
  }

  Status OnBind() override {
    for (const auto& path : params().StringList("other_trials")) {
      auto idx = data().OpenTrial(path);
      if (!idx.ok()) return idx.status().WithContext("SimilarAcrossRuns: other trial " + path);
      others_.push_back(*idx);
    }
    return Status::OK();
  }

  Result<Verdict> InvokeAtStep(int64_t step) override {
    Verdict v;
    // Steps the other trials had not reached yet are retried first (bounded).
    std::deque<int64_t> retry;
    retry.swap(pending_);
    for (int64_t s : retry) TS_RETURN_IF_ERROR(Compare(s, &v));
    TS_RETURN_IF_ERROR(Compare(step, &v));
    return v;
  }

  Result<Verdict> Finish(int64_t) override {
    Verdict v;
    // What could be read counts (as in Compare); a damaged index file is skipped.
    for (size_t o : others_) (void)data().trial(o).Refresh();
    std::deque<int64_t> retry;
    retry.swap(pending_);
    for (int64_t s : retry) TS_RETURN_IF_ERROR(Compare(s, &v));
    pending_.clear();
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
      r.name = "similar_across_runs";
      r.include_regex = selection_.regexes;
      out.push_back(r);
    }
    return out;
  }

  size_t StateBytes() const override { return pending_.size() * sizeof(int64_t) + 64; }

 private:
  // Compares step `step` with every other trial; a trial that has not reached it yet queues it.
  Status Compare(int64_t step, Verdict* v) {
    TS_ASSIGN_OR_RETURN(auto names, data().Select(selection_, step));
    for (size_t o : others_) {
      Trial& other = data().trial(o);
      StepState st = other.HasPassedStep(step);
      if (st == StepState::kNotYetAvailable) {
        (void)other.Refresh();  // what it could read counts; HasPassedStep answers from it
        st = other.HasPassedStep(step);
      }
      if (st == StepState::kNotYetAvailable) {
        if (pending_.size() < kMaxPending &&
            std::find(pending_.begin(), pending_.end(), step) == pending_.end()) {
          pending_.push_back(step);
        }
        continue;
      }
      if (st == StepState::kUnavailable) continue;
      int reported = 0;
      for (const auto& name : names) {
        auto a = data().Value(name, step);
        if (!a.ok()) {
          if (IsNoData(a.status())) continue;
          return a.status();
        }
        auto b = data().Value(name, step, o);
        if (!b.ok()) {
          if (IsNoData(b.status())) continue;
          return b.status();
        }
        if (!IsNumeric(a->dtype) || !IsNumeric(b->dtype)) continue;
        double diff = 0;
        if (AllClose(*a, *b, rtol_, atol_, /*equal_nan=*/true, &diff)) continue;
        if (++reported > kMaxFindingsPerStep) continue;
        RuleFinding f = NewFinding(step);
        f.tensor = name;
        f.value = diff;
        f.threshold = atol_;
        f.condition = "not allclose(base, other, rtol, atol)";
        f.explanation = a->shape != b->shape
                            ? name + " has shape " + ShapeToString(a->shape) + " here and " +
                                  ShapeToString(b->shape) + " in " + other.path()
                            : name + " differs from " + other.path() + " by up to " + Num(diff) +
                                  " (rtol " + Num(rtol_) + ", atol " + Num(atol_) + ")";
        f.recommendation =
            "the runs diverge at this step: if they should be identical, seed every source of "
            "randomness (torch.manual_seed, numpy, random, DataLoader workers and generator), "
            "set torch.use_deterministic_algorithms(True) and compare the code and data of the "
            "two runs at this layer";
        v->Add(std::move(f));
      }
    }
    return Status::OK();
  }

  double rtol_;
  double atol_;
  TensorSelection selection_;
  std::vector<size_t> others_;
  std::deque<int64_t> pending_;
};

}  // namespace

BuiltinDef SimilarAcrossRunsDef() {
  return MakeDef<SimilarAcrossRuns>("tensors differ between this trial and another one");
}

}  // namespace trainscope::rules_internal
