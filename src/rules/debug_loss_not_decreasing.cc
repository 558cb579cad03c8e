// LossNotDecreasing (docs/rules/LossNotDecreasing.md): the mean loss over a window of num_steps
// steps did not drop by diff_percent % against any of the kBaselineWindows windows before it, or
// rose by more than increase_threshold_percent % against the previous window, by more than
// kRiseSignificance standard errors of the batch noise.
#include <algorithm>
#include <deque>
#include <map>

#include "rules/loss_util.h"

namespace trainscope::rules_internal {
namespace {

class LossNotDecreasing : public BuiltinRule {
 public:
  static constexpr const char* kName = "LossNotDecreasing";
  // The current window must be lower than each of this many windows before it: a slowly
  // improving run's progress over one window can be smaller than the batch noise of a window
  // mean, its progress over several windows is not (docs/rules/LossNotDecreasing.md).
  static constexpr size_t kBaselineWindows = 3;
  // A rise counts when it is also this many standard errors of the difference of the two window
  // means (Welch): a noisy window of small losses can be 10 % above the previous one by chance.
  static constexpr double kRiseSignificance = 3.0;
  static std::vector<ParamSpec> Specs() {
    return {CollectionNamesSpec(),
            TensorRegexSpec(),
            {"use_losses_collection", ParamType::kBool, "True",
             "also check the tensors of the 'losses' collection"},
            {"num_steps", ParamType::kInt, "10", "window length in steps"},
            {"diff_percent", ParamType::kDouble, "0.1",
             "minimum drop (percent) of the window mean against the previous window"},
            {"increase_threshold_percent", ParamType::kDouble, "5",
             "largest rise (percent) of the window mean that is tolerated"},
            {"mode", ParamType::kString, "None",
             "TRAIN, EVAL, PREDICT or GLOBAL; None: TRAIN steps (GLOBAL if no modes)"}};
  }

  explicit LossNotDecreasing(ParsedParams p) : BuiltinRule(kName, std::move(p)) {
    num_steps_ = params().Int("num_steps");
    diff_percent_ = params().Double("diff_percent");
    increase_percent_ = params().Double("increase_threshold_percent");
    selection_ = SelectionFromParams(/*all_if_empty=*/false);
    if (params().Bool("use_losses_collection")) {
      TensorSelection l = LossSelection();
      selection_.collections.insert(selection_.collections.end(), l.collections.begin(),
                                    l.collections.end());
      selection_.regexes.insert(selection_.regexes.end(), l.regexes.begin(), l.regexes.end());
    }
    if (params().IsSet("mode")) mode_ = ModeFromName(params().String("mode"));
  }

  Status Validate() const {
    if (num_steps_ < 1) {
      return Status::InvalidArgument("LossNotDecreasing: num_steps must be >= 1");
    }
    if (params().IsSet("mode") && !mode_) {
      return Status::InvalidArgument("LossNotDecreasing: mode '" + params().String("mode") +
                                     "' is not one of TRAIN, EVAL, PREDICT, GLOBAL");
    }
    if (selection_.empty()) {
      return Status::InvalidArgument(
          "LossNotDecreasing: no loss to check; set tensor_regex or collection_names, or "
          "use_losses_collection=True");
    }
    return Status::OK();
  }

  Result<Verdict> InvokeAtStep(int64_t step) override {
    auto [mode, mode_step] = data().StepMode(step);
    Verdict v;
    const bool phases = mode_ && (*mode_ == Mode::kEval || *mode_ == Mode::kPredict);
    if (phases) {
      // A window is one phase of consecutive steps of that mode (the model does not change
      // during an evaluation pass, so comparing inside one would be meaningless).
      if (mode != *mode_) {
        for (auto& [name, s] : series_) {
          if (s.count > 0) Close(name, s, step, /*phases=*/true, &v);
        }
        return v;
      }
    } else if (mode_ ? (*mode_ != Mode::kGlobal && mode != *mode_) : !IsTrainLike(mode)) {
      return v;
    }
    const int64_t pos = (mode_ && *mode_ == Mode::kGlobal) ? step : mode_step;
    TS_ASSIGN_OR_RETURN(auto names, data().Select(selection_, step));
    for (const auto& name : names) {
      TS_ASSIGN_OR_RETURN(auto value, ScalarAt(data(), name, step));
      if (!value) continue;
      if (series_.size() >= kMaxSeries && !series_.count(name)) continue;
      Series& s = series_[name];
      if (phases) {
        s.Add(*value);
        continue;
      }
      if (!s.open) {
        s.start = pos;
        s.open = true;
      } else if (pos >= s.start + num_steps_) {
        Close(name, s, step, /*phases=*/false, &v);
        s.start += (pos - s.start) / num_steps_ * num_steps_;
        s.open = true;
      }
      s.Add(*value);
      if (pos == s.start + num_steps_ - 1) {
        Close(name, s, step, /*phases=*/false, &v);
        s.open = false;
      }
    }
    return v;
  }

  Result<Verdict> Finish(int64_t last_step) override {
    Verdict v;
    const bool phases = mode_ && (*mode_ == Mode::kEval || *mode_ == Mode::kPredict);
    if (phases) {
      for (auto& [name, s] : series_) {
        if (s.count > 0) Close(name, s, last_step, /*phases=*/true, &v);
      }
    }
    return v;
  }

  std::vector<CollectionRequest> RequiredCollections() const override {
    std::vector<CollectionRequest> out = {LossesRequest()};
    for (const auto& c : params().StringList("collection_names")) {
      CollectionRequest r = LossesRequest();
      r.name = c;
      out.push_back(r);
    }
    if (!params().StringList("tensor_regex").empty()) {
      CollectionRequest r = LossesRequest();
      r.name = "loss_not_decreasing";
      r.include_regex = params().StringList("tensor_regex");
      out.push_back(r);
    }
    return out;
  }

  size_t StateBytes() const override {
    size_t b = 0;
    for (const auto& [name, s] : series_) {
      b += name.capacity() + sizeof(Series) + 48 + kBaselineWindows * sizeof(double);
    }
    return b;
  }

 private:
  static constexpr size_t kMaxSeries = 64;
  struct Series {
    bool open = false;
    int64_t start = 0;
    double sum = 0;
    double m = 0, m2 = 0;  // running mean and sum of squared deviations (Welford)
    int64_t count = 0;
    // Means of the last windows (newest last), and the previous window's squared standard error
    // (negative when it had a single value).
    std::deque<double> prev;
    double prev_se2 = -1;
    void Add(double x) {
      sum += x;
      ++count;
      const double d = x - m;
      m += d / static_cast<double>(count);
      m2 += d * (x - m);
    }
  };

  // Closes the window of `s`: compares its mean with the windows before, notes it among them.
  // `phases`: a window is a whole evaluation pass (no batch noise between passes of the same
  // data): compared with the previous pass alone.
  void Close(const std::string& name, Series& s, int64_t step, bool phases, Verdict* v) {
    const double n = static_cast<double>(s.count);
    const double mean = s.sum / n;
    const double se2 = s.count > 1 ? std::max(0.0, s.m2 / (n - 1)) / n : -1.0;
    s.sum = 0;
    s.m = 0;
    s.m2 = 0;
    s.count = 0;
    const size_t baseline = phases ? 1 : kBaselineWindows;
    if (!s.prev.empty()) {
      const double last = s.prev.back();
      const double denom = std::fabs(last) > 0 ? std::fabs(last) : 1e-12;
      const double rise = (mean - last) / denom * 100.0;
      // Significance of the rise: unknown with single-value windows (then the rise alone counts).
      bool significant = true;
      double t = 0;
      if (!phases && se2 >= 0 && s.prev_se2 >= 0) {
        const double se = std::sqrt(se2 + s.prev_se2);
        t = se > 0 ? (mean - last) / se : (mean > last ? HUGE_VAL : 0.0);
        significant = t > kRiseSignificance;
      }
      if (rise > increase_percent_ && significant) {
        RuleFinding f = NewFinding(step);
        f.tensor = name;
        f.value = rise;
        f.threshold = increase_percent_;
        f.condition = "window mean rose by more than increase_threshold_percent";
        f.explanation = "the mean of " + name + " over the last window is " + Num(mean) +
                        " against " + Num(last) + " in the window before: it rose " + Num(rise) +
                        "% (more than " + Num(increase_percent_) + "%" +
                        (phases || !std::isfinite(t) || t == 0
                             ? std::string(")")
                             : ", " + Num(t) + " standard errors of the batch noise)");
        f.recommendation =
            "the loss is rising: lower the learning rate (try 10x smaller) or add a warm-up, "
            "clip gradients, and check the data pipeline for shuffled labels or corrupted batches";
        v->Add(std::move(f));
      } else if (s.prev.size() >= baseline) {
        // The highest of the baseline windows: the current one must be lower than every one.
        const auto from = s.prev.end() - static_cast<std::ptrdiff_t>(baseline);
        const double high = *std::max_element(from, s.prev.end());
        const double hdenom = std::fabs(high) > 0 ? std::fabs(high) : 1e-12;
        const double drop = (high - mean) / hdenom * 100.0;
        if (drop < diff_percent_) {
          RuleFinding f = NewFinding(step);
          f.tensor = name;
          f.value = drop;
          f.threshold = diff_percent_;
          f.condition = phases ? "pass mean dropped by less than diff_percent"
                               : "window mean dropped by less than diff_percent against one of "
                                 "the windows before";
          f.explanation =
              "the mean of " + name + " over the last " + (phases ? "pass" : "window") + " is " +
              Num(mean) + " against " + Num(high) +
              (phases ? std::string(" in the pass before")
                      : " in one of the " + std::to_string(baseline) + " windows before") +
              ": it dropped only " + Num(drop) + "% (less than " + Num(diff_percent_) +
              "%), the model is not learning any more";
          f.recommendation =
              "if the loss is still high: check that the optimizer holds the model's parameters "
              "and that zero_grad(), backward() and step() are all called, that no layer is "
              "frozen by mistake and that labels match inputs; then tune the learning rate "
              "(raise it if the loss is flat, lower it if it oscillates). If the loss is low, "
              "training has converged: stop it (attach a stop action) or decay the learning rate";
          v->Add(std::move(f));
        }
      }
    }
    s.prev.push_back(mean);
    while (s.prev.size() > kBaselineWindows) s.prev.pop_front();
    s.prev_se2 = se2;
  }

  int64_t num_steps_;
  double diff_percent_;
  double increase_percent_;
  std::optional<Mode> mode_;
  TensorSelection selection_;
  std::map<std::string, Series> series_;
};

}  // namespace

BuiltinDef LossNotDecreasingDef() {
  return MakeDef<LossNotDecreasing>(
      "the loss's mean over num_steps steps stopped dropping against the windows before (or rose)");
}

}  // namespace trainscope::rules_internal
