// LossNotDecreasing (docs/rules/LossNotDecreasing.md). Two conditions, chosen by `condition`:
//
// - "trend" (default): judges each loss series against its own noise level and its start. Per
//   window of num_steps steps: diverging (the window's median is divergence_factor times the
//   initial level), rising (the median doubled against the best level seen, significantly, and
//   back above the start after learning), or not learning (never dropped meaningfully below the
//   initial level, and no significant downward trend: Mann-Kendall over the last kHistoryValues
//   values). A series that learned and then flattens has converged: not an issue, reported in the
//   status message. A series that keeps changing sign around zero (a policy-gradient surrogate)
//   has no level that measures progress: once seen, it is not judged (said in the status). With
//   several loss series (a GAN's two optimizers, loss components), a finding
//   needs every series to be in trouble at once.
// - "window" (smdebug's, noise-aware): the mean loss over a window did not drop by diff_percent %
//   against any of the kBaselineWindows windows before it, or rose by more than
//   increase_threshold_percent % against the previous window, by more than kRiseSignificance
//   standard errors of the batch noise.
//
// With mode=EVAL or PREDICT, whole evaluation passes are compared (the "window" condition).
//
// Closure evaluations (LBFGS: optimizer.step(closure) evaluates the loss up to max_iter times a
// step): where the trial records them, a loss's evaluations are one series in (step, evaluation)
// order (rules/loss_series.h), whose windows are num_steps evaluations, so a loss that blows up
// within the evaluations of one step, or of a few, is judged as it happens.
#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "rules/loss_series.h"
#include "rules/loss_util.h"

namespace trainscope::rules_internal {
namespace {

// Mann-Kendall trend statistic of xs (in order): z > 0 for a rising series, < 0 for a falling
// one, |z| above ~2.5 is significant at 1 % (ties ignored in the variance). 0 with fewer than 8
// values (too few to tell).
double MannKendallZ(const std::deque<double>& xs) {
  const size_t n = xs.size();
  if (n < 8) return 0.0;
  double s = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) s += (xs[j] > xs[i]) - (xs[j] < xs[i]);
  }
  const double dn = static_cast<double>(n);
  const double var = dn * (dn - 1) * (2 * dn + 5) / 18.0;
  if (s == 0) return 0.0;
  return (s - (s > 0 ? 1.0 : -1.0)) / std::sqrt(var);
}

// Theil-Sen slope of xs (in order): the median of the slopes between every pair of values, per
// value. 0 with fewer than 2 values.
double TheilSenSlope(const std::deque<double>& xs) {
  std::vector<double> slopes;
  slopes.reserve(xs.size() * (xs.size() - 1) / 2);
  for (size_t i = 0; i < xs.size(); ++i) {
    for (size_t j = i + 1; j < xs.size(); ++j) {
      slopes.push_back((xs[j] - xs[i]) / static_cast<double>(j - i));
    }
  }
  if (slopes.empty()) return 0.0;
  const size_t mid = slopes.size() / 2;
  std::nth_element(slopes.begin(), slopes.begin() + static_cast<std::ptrdiff_t>(mid), slopes.end());
  return slopes[mid];
}

// The noise variance of one value of a series with a slow trend: half the mean squared
// difference of successive values (von Neumann); a trend adds only its squared step. -1 with
// fewer than 2 values.
double NoiseVariance(const std::deque<double>& xs) {
  if (xs.size() < 2) return -1.0;
  double sum = 0;
  for (size_t i = 1; i < xs.size(); ++i) sum += (xs[i] - xs[i - 1]) * (xs[i] - xs[i - 1]);
  return sum / (2.0 * static_cast<double>(xs.size() - 1));
}

double Median(std::vector<double> v) {
  if (v.empty()) return NAN;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) {
    m = (m + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2.0;
  }
  return m;
}

class LossNotDecreasing : public BuiltinRule {
 public:
  static constexpr const char* kName = "LossNotDecreasing";
  // "window" condition: the current window must be lower than each of this many windows before
  // it (docs/rules/LossNotDecreasing.md).
  static constexpr size_t kBaselineWindows = 3;
  // A rise counts when it is also this many standard errors of the difference of the two means.
  static constexpr double kRiseSignificance = 3.0;
  // "trend" condition constants (docs/rules/LossNotDecreasing.md, "Condition").
  static constexpr size_t kHistoryValues = 64;     // values the trend test looks at
  static constexpr size_t kInitValues = 3;         // first values whose lowest is the start
  static constexpr int64_t kMinWindows = 4;        // windows before "not learning" is judged
  static constexpr size_t kMinValues = 8;          // values before "not learning" is judged
  static constexpr double kTrendZ = 2.5;           // |Mann-Kendall z| of a significant trend
  static constexpr double kLearnedFraction = 0.1;  // a drop of 10 % below the start is learning
  static constexpr double kRiseFactor = 2.0;       // a rising loss has at least doubled
  // A significant downward trend counts as learning when, continued for this many times the
  // values seen so far, it would take the loss 10 % below its start.
  static constexpr double kTrendHorizon = 3.0;
  // A series centred on zero (a policy-gradient surrogate, a critic's score difference) is not
  // judged by its level: once at least kSignedMinValues of its last values are in, at least
  // this fraction of them on each side of zero and of successive pairs changing sign.
  static constexpr size_t kSignedMinValues = 16;
  static constexpr double kSignedFraction = 0.2;
  // A series whose steps call the model many times (a rollout: index meta.model_calls) is not
  // judged by its level once the calls per step of a window and of the first window differ by
  // this factor, the larger of the two being at least kRolloutCalls (NoteRollout).
  static constexpr double kRolloutCalls = 8;
  static constexpr double kRolloutChange = 2;

  static std::vector<ParamSpec> Specs() {
    return {CollectionNamesSpec(),
            TensorRegexSpec(),
            {"use_losses_collection", ParamType::kBool, "True",
             "also check the tensors of the 'losses' collection"},
            {"num_steps", ParamType::kInt, "10", "window length in steps"},
            {"diff_percent", ParamType::kDouble, "0.1",
             "condition=window: minimum drop (percent) of the window mean against the windows "
             "before"},
            {"increase_threshold_percent", ParamType::kDouble, "5",
             "largest rise (percent) of the window mean that is tolerated"},
            {"mode", ParamType::kString, "None",
             "TRAIN, EVAL, PREDICT or GLOBAL; None: TRAIN steps (GLOBAL if no modes)"},
            {"condition", ParamType::kString, "trend",
             "trend: not learning, rising or diverging, judged against the loss's own noise "
             "(converged is not an issue); window: smdebug's window comparison (a converged "
             "loss fires)"},
            {"divergence_factor", ParamType::kDouble, "10",
             "condition=trend: a loss whose window median is this many times its initial level "
             "has diverged (0: off)"}};
  }

  explicit LossNotDecreasing(ParsedParams p) : BuiltinRule(kName, std::move(p)) {
    num_steps_ = params().Int("num_steps");
    diff_percent_ = params().Double("diff_percent");
    increase_percent_ = params().Double("increase_threshold_percent");
    divergence_factor_ = params().Double("divergence_factor");
    trend_ = params().String("condition") == "trend";
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
    const std::string c = params().String("condition");
    if (c != "trend" && c != "window") {
      return Status::InvalidArgument("LossNotDecreasing: condition '" + c +
                                     "' is not one of trend, window");
    }
    if (!(divergence_factor_ == 0 || divergence_factor_ > 1)) {
      return Status::InvalidArgument(
          "LossNotDecreasing: divergence_factor must be 0 (off) or > 1, got " +
          Num(divergence_factor_));
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
    const int64_t step_pos = (mode_ && *mode_ == Mode::kGlobal) ? step : mode_step;
    TS_ASSIGN_OR_RETURN(auto names, data().Select(selection_, step));
    // Trend findings of the series whose window closed at this step; the series that closed.
    Verdict trend;
    std::set<std::string> closed;
    // The step's losses in series order: a loss's closure evaluations (LBFGS) are one series.
    const std::vector<LossPoint> points = OrderLossTensors(
        names, phases ? std::vector<ClosureStep>() : data().trial().ClosureSteps(step));
    // The model's calls in this step (1 when not recorded): a rollout's length (NoteRollout).
    const int64_t calls = trend_ && !phases && !points.empty()
                              ? std::max<int64_t>(1, data().trial().ModelCalls(step))
                              : 1;
    for (const LossPoint& point : points) {
      const std::string& name = point.series;
      TS_ASSIGN_OR_RETURN(auto value, ScalarAt(data(), point.tensor, step));
      if (!value) continue;
      if (series_.size() >= kMaxSeries && !series_.count(name)) continue;
      Series& s = series_[name];
      if (phases) {
        s.Add(*value, false);
        continue;
      }
      if (point.evaluation >= 0) {
        if (!s.by_evaluation) {
          // From now on a position is a value (an evaluation), not a step: the open window
          // keeps its values, at positions 0..count-1.
          s.by_evaluation = true;
          s.next_pos = s.count;
          s.start = 0;
        }
        s.optimizer = point.optimizer;
        s.evaluation = point.evaluation;
      } else {
        s.evaluation = -1;
      }
      const int64_t pos = s.by_evaluation ? s.next_pos++ : step_pos;
      if (!s.open) {
        s.start = pos;
        s.open = true;
      } else if (pos >= s.start + num_steps_) {
        CloseAny(name, s, step, &v, &trend, &closed);
        s.start += (pos - s.start) / num_steps_ * num_steps_;
        s.open = true;
      }
      s.Add(*value, trend_);
      if (trend_) s.calls_sum += static_cast<double>(calls);
      if (pos == s.start + num_steps_ - 1) {
        CloseAny(name, s, step, &v, &trend, &closed);
        s.open = false;
      }
    }
    // A series of closure evaluations can close several windows in one step: its first finding
    // of the step stands for them.
    KeepFirstPerTensor(&v);
    KeepFirstPerTensor(&trend);
    // Several loss series (a GAN's generator and discriminator, loss components): one rising
    // or flat series is normal there, so a trend finding needs every series in trouble.
    std::set<std::string> troubled;
    for (const auto& f : trend.findings) troubled.insert(f.tensor);
    if (!trend.findings.empty() && (series_.size() == 1 || troubled.size() == series_.size())) {
      for (auto& f : trend.findings) v.Add(std::move(f));
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

  std::string StatusNote() const override {
    if (!trend_) return {};
    std::string libraries;  // _meta.environments, for the agents' series
    for (const std::string& e : data().trial().environments()) {
      libraries += (libraries.empty() ? "" : ", ") + e;
    }
    std::string out;
    for (const auto& [name, s] : series_) {
      // A series not judged: from which step, and why.
      int64_t from = -1;
      std::string why;
      if (s.agent_step >= 0) {
        from = s.agent_step;
        why = "the training uses " + libraries +
              " (reinforcement learning), and an agent's losses (a TD error against targets that "
              "grow with the returns, a policy surrogate, a critic's error over lengthening "
              "episodes) rise and fall with the returns, not with progress; watch the return "
              "instead";
      } else if (s.rollout_step >= 0) {
        from = s.rollout_step;
        why = "the training called its model " + Num(s.rollout_calls) +
              " times a step then, against " + Num(s.first_calls) +
              " in its first steps (a rollout: reinforcement learning calls the model once per "
              "action and steps once per episode), so the loss sums a number of terms that "
              "changes and its level does not measure progress; watch the return or a "
              "validation metric instead";
      } else if (s.signed_step >= 0) {
        from = s.signed_step;
        why = "it takes both signs around zero (" + Num(s.signed_negative * 100) +
              "% of its last values negative, the sign changing between " +
              Num(s.signed_changes * 100) +
              "% of successive values), an objective whose level does not measure progress "
              "(a policy-gradient surrogate such as REINFORCE's, a critic's score difference); "
              "watch the return or a validation metric instead";
      } else if (s.converged_step < 0) {
        continue;
      }
      if (!out.empty()) out += "; ";
      if (from >= 0) {
        out += name + " was not judged from step " + std::to_string(from) + ": " + why;
      } else {
        out += name + " converged from step " + std::to_string(s.converged_step) +
               " (window mean " + Num(s.converged_mean) + ", " + Num(s.init) +
               " at the start): consider stopping or decaying the learning rate";
      }
    }
    return out;
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
      b += name.capacity() + sizeof(Series) + 48 + kBaselineWindows * sizeof(double) +
           s.values.capacity() * sizeof(double) + s.history.size() * sizeof(double) +
           s.first.capacity() * sizeof(double);
    }
    return b;
  }

 private:
  static constexpr size_t kMaxSeries = 64;

  static void KeepFirstPerTensor(Verdict* v) {
    if (v->findings.size() < 2) return;
    std::set<std::string> seen;
    std::vector<RuleFinding> kept;
    for (auto& f : v->findings) {
      if (seen.insert(f.tensor).second) kept.push_back(std::move(f));
    }
    v->findings = std::move(kept);
  }

  struct Series {
    bool open = false;
    int64_t start = 0;
    double sum = 0;
    double m = 0, m2 = 0;  // running mean and sum of squared deviations (Welford)
    int64_t count = 0;
    // condition=window: means of the last windows (newest last), and the previous window's
    // squared standard error (negative when it had a single value).
    std::deque<double> prev;
    double prev_se2 = -1;
    // condition=trend.
    std::vector<double> values;   // the open window's values (num_steps at most)
    std::deque<double> history;   // the last kHistoryValues values
    std::vector<double> first;    // the values of the first window
    double init = NAN;            // the initial level: the median of `first`
    double init_low = NAN;        // the lowest of the first kInitValues values
    double best = HUGE_VAL;       // lowest window mean so far
    double best_se2 = 0;          // its squared standard error
    int64_t windows = 0;          // closed windows
    int64_t seen = 0;             // values kept so far
    bool learned = false;         // dropped meaningfully below the initial level at some point
    int64_t converged_step = -1;  // learned, then no significant trend since this step
    double converged_mean = 0;
    // Centred on zero (NoteSigned): not judged from then on; when it was seen, and the
    // fractions of negative values and sign changes then.
    int64_t signed_step = -1;
    double signed_negative = 0, signed_changes = 0;
    // Model calls per step (NoteRollout): their sum over the open window's values, their mean
    // over the first window; a rollout whose length changed: not judged from then on, when it
    // was seen and the means then.
    double calls_sum = 0;
    double first_calls = NAN;
    int64_t rollout_step = -1;
    double rollout_calls = 0;
    int64_t agent_step = -1;  // the trial names an RL library (_meta.environments): not judged
    // Closure evaluations (LBFGS): the series is a loss's evaluations in (step, evaluation)
    // order; a position is a value, and next_pos the next one's.
    bool by_evaluation = false;
    int64_t next_pos = 0;
    std::string optimizer;    // whose closure evaluated it
    int64_t evaluation = -1;  // the evaluation of the value added last (-1: not one)
    void Add(double x, bool keep) {
      sum += x;
      ++count;
      const double d = x - m;
      m += d / static_cast<double>(count);
      m2 += d * (x - m);
      if (!keep) return;
      values.push_back(x);
      ++seen;
      history.push_back(x);
      while (history.size() > kHistoryValues) history.pop_front();
      if (windows == 0) first.push_back(x);
    }
  };

  // The explanation's tail for a series of closure evaluations.
  std::string ClosureContext(const Series& s, int64_t step) const {
    return "; its values are the loss at each evaluation of " + s.optimizer +
           "'s closure (optimizer.step(closure) evaluates it several times a step), a window " +
           "being " + std::to_string(num_steps_) + " evaluations" +
           (s.evaluation >= 0 ? ", the last one evaluation " + std::to_string(s.evaluation) +
                                    " of step " + std::to_string(step)
                              : std::string());
  }

  static std::string ClosureRecommendation(const Series& s) {
    const std::string& o = s.optimizer;
    return "the loss blows up within " + o + "'s own iterations: its learning rate is too high " +
           "for this problem (try 10x smaller), or " +
           (o == "LBFGS"
                ? std::string("its line search is off: pass line_search_fn='strong_wolfe', "
                              "which accepts only steps that lower the loss")
                : std::string("it takes steps without a line search")) +
           "; also check that the closure calls optimizer.zero_grad() before backward()";
  }

  void CloseAny(const std::string& name, Series& s, int64_t step, Verdict* v, Verdict* trend,
                std::set<std::string>* closed) {
    if (!trend_) {
      Close(name, s, step, /*phases=*/false, v);
      return;
    }
    closed->insert(name);
    CloseTrend(name, s, step, trend);
  }

  // condition=trend: closes the window of `s`; adds at most one finding to `v`.
  void CloseTrend(const std::string& name, Series& s, int64_t step, Verdict* v) {
    const double n = static_cast<double>(s.count);
    const double mean = s.sum / n;
    const double median = Median(s.values);
    const double calls = s.calls_sum / n;
    s.sum = s.m = s.m2 = s.calls_sum = 0;
    s.count = 0;
    s.values.clear();
    if (s.windows == 0) {
      s.first_calls = calls;
      // The start: the median of the first window (robust to batch noise); for divergence the
      // lowest of its first kInitValues values (a loss can jump within its first steps, after
      // one huge update, and the level before the jump is the start).
      s.init = Median(s.first);
      s.init_low = *std::min_element(
          s.first.begin(),
          s.first.begin() + static_cast<std::ptrdiff_t>(std::min(s.first.size(), kInitValues)));
    }
    ++s.windows;
    // A loss bounded below by zero (cross-entropy, MSE...) or one that crosses zero once as it
    // falls (a Gaussian NLL) has a level that measures progress; a series that keeps changing
    // sign around zero does not (REINFORCE's -log p * normalised return grows with the episodes'
    // length while the policy improves): from then on it is not judged, and the status says so.
    // Likewise a loss summed over a rollout (reinforcement learning calls the model once per
    // action and steps once per episode) whose length changed: an actor-critic's loss grows with
    // its episodes while the policy improves.
    // And an agent's losses: a training that steps a reinforcement-learning environment
    // (_meta.environments) optimises a TD error against targets that grow with the returns (DQN),
    // a policy surrogate or a critic's error, none of which measures progress by its level.
    if (s.agent_step < 0 && !data().trial().environments().empty()) s.agent_step = step;
    if (s.signed_step < 0 && s.rollout_step < 0) NoteRollout(s, step, calls);
    if (s.signed_step < 0 && s.rollout_step < 0) NoteSigned(s, step);
    if (s.signed_step >= 0 || s.rollout_step >= 0 || s.agent_step >= 0) {
      s.converged_step = -1;
      return;
    }
    // Noise of one value; of this window's mean; of the initial level.
    const double noise2 = std::max(0.0, NoiseVariance(s.history));
    const double se2 = noise2 / n;
    // (the variance of a median of n values is about pi/2 times that of their mean)
    const double init_se2 = 1.57 * noise2 / static_cast<double>(s.first.size());
    const double z = MannKendallZ(s.history);
    const double init = s.init;
    const double best_before = s.best;
    const double best_se2_before = s.best_se2;
    if (mean < s.best) {
      s.best = mean;
      s.best_se2 = se2;
    }
    const double drop_from_init = init - mean;
    if ((init > 0 && s.best < init * (1 - kLearnedFraction)) ||
        (drop_from_init > kRiseSignificance * std::sqrt(se2 + init_se2) &&
         drop_from_init > 0.01 * std::fabs(init))) {
      s.learned = true;
    }

    // Diverging: the window's median (robust to one spike) is orders of magnitude above the start.
    const double init_low = s.init_low;
    if (divergence_factor_ > 0 && init_low > 0 && median > divergence_factor_ * init_low) {
      s.converged_step = -1;
      RuleFinding f = NewFinding(step);
      f.tensor = name;
      f.value = median / init_low;
      f.threshold = divergence_factor_;
      f.condition = "window median / initial level > divergence_factor";
      f.explanation = name + " has diverged: its median over the last window is " + Num(median) +
                      ", " + Num(median / init_low) + " times its initial level " + Num(init_low) +
                      " (more than divergence_factor " + Num(divergence_factor_) + ")";
      f.recommendation =
          "the updates blow the model up: lower the learning rate (try 10x smaller), clip "
          "gradients (torch.nn.utils.clip_grad_norm_), add a warm-up, and check that "
          "optimizer.zero_grad() is called every step (gradients otherwise accumulate)";
      if (s.by_evaluation) {
        f.explanation += ClosureContext(s, step);
        f.recommendation = ClosureRecommendation(s);
      }
      v->Add(std::move(f));
      return;
    }

    // Rising: significantly above the best level seen before (the start if it never learned),
    // by more than increase_threshold_percent, on a significantly rising trend, and (after
    // learning) back above half of the progress made.
    const double ref = s.learned && std::isfinite(best_before) ? std::min(best_before, init) : init;
    const double ref_se2 =
        s.learned && std::isfinite(best_before) && best_before < init ? best_se2_before : init_se2;
    const double rise = mean - ref;
    const double rise_pct = rise / (std::fabs(ref) > 0 ? std::fabs(ref) : 1e-12) * 100.0;
    // The window's median (robust to one bad batch) must have at least doubled, and after
    // learning be back above the start (every bit of progress lost); the mean's rise must be
    // significant against the batch noise.
    const bool lost_progress = !s.learned || median > init;
    if (rise > 0 && rise_pct > increase_percent_ && median > kRiseFactor * ref &&
        rise > kRiseSignificance * std::sqrt(se2 + ref_se2) && lost_progress) {
      s.converged_step = -1;
      RuleFinding f = NewFinding(step);
      f.tensor = name;
      f.value = rise_pct;
      f.threshold = increase_percent_;
      f.condition = "window mean rose by more than increase_threshold_percent, significantly";
      f.explanation = "the mean of " + name + " over the last window is " + Num(mean) +
                      " (median " + Num(median) + ") against " + Num(ref) +
                      (s.learned ? " at its best window" : " at the start") + ": it rose " +
                      Num(rise_pct) + "% (more than " + Num(increase_percent_) +
                      "%; the median more than doubled" +
                      (s.learned ? ", back above the start " + Num(init) : std::string()) +
                      "), well beyond the batch noise";
      f.recommendation =
          "the loss is rising: lower the learning rate (try 10x smaller) or add a warm-up, "
          "clip gradients, and check the data pipeline for shuffled labels or corrupted batches";
      if (s.by_evaluation) {
        f.explanation += ClosureContext(s, step);
        f.recommendation = ClosureRecommendation(s);
      }
      v->Add(std::move(f));
      return;
    }

    // Not learning: never meaningfully below the start, confidently so (even 2 standard errors
    // of the noise more would not make a 10 % drop), and not trending down at a pace that
    // matters either: a significant downward trend counts only if, continued for kTrendHorizon
    // times as many values again as the series has, it would take the loss 10 % below its start
    // (a model memorising shuffled labels creeps down 1 % in 88 steps on a significant trend,
    // and would not; a CNN memorising random labels falls 3.5 % in its first 40 steps, on its
    // way to a 97 % drop by step 200, and would).
    const bool surely_flat =
        drop_from_init + 2.0 * std::sqrt(se2 + init_se2) < kLearnedFraction * std::fabs(init);
    double slope = 0;
    bool slow_trend = false;
    if (z <= -kTrendZ && !s.learned && surely_flat) {
      slope = TheilSenSlope(s.history);
      slow_trend =
          drop_from_init + std::max(0.0, -slope) * kTrendHorizon * static_cast<double>(s.seen) <
          kLearnedFraction * std::fabs(init);
    }
    if (!s.learned && s.windows >= kMinWindows && s.history.size() >= kMinValues &&
        (z > -kTrendZ || slow_trend) && surely_flat) {
      RuleFinding f = NewFinding(step);
      f.tensor = name;
      f.value = init != 0 ? drop_from_init / std::fabs(init) * 100.0 : drop_from_init;
      f.threshold = kLearnedFraction * 100.0;
      f.condition = "no drop below the initial level and no downward trend";
      const auto horizon = static_cast<int64_t>(kTrendHorizon * static_cast<double>(s.seen));
      const std::string trend =
          slow_trend ? "its downward trend (Mann-Kendall z " + Num(z) + ", " + Num(-slope) +
                           " a saved step) would not get it there in " + std::to_string(horizon) +
                           " saved steps more"
                     : "shows no downward trend (Mann-Kendall z " + Num(z) + ")";
      f.explanation = "the mean of " + name + " over the last window is " + Num(mean) +
                      " against " + Num(init) + " at the start, after " +
                      std::to_string(s.windows) +
                      " windows: it has not dropped 10% (not even within 2 standard errors of the "
                      "batch noise) and " +
                      trend + ": the model is not learning";
      f.recommendation =
          "check that the optimizer holds the model's parameters and that zero_grad(), "
          "backward() and step() are all called in that order, that no layer is frozen by "
          "mistake and that labels match inputs; then tune the learning rate (raise it if the "
          "loss is flat from the start)";
      v->Add(std::move(f));
      return;
    }

    // Converged: learned, and no significant trend left (informational, in the status).
    if (s.learned && s.history.size() >= kMinValues && std::fabs(z) < kTrendZ) {
      if (s.converged_step < 0) {
        s.converged_step = step;
        s.converged_mean = mean;
      }
    } else if (z <= -kTrendZ) {
      s.converged_step = -1;  // still improving
    }
  }

  // Marks `s` as a rollout's loss at `step` when the mean calls of the model per step of the
  // window that closes (`calls`) and of the first window differ by kRolloutChange or more, the
  // larger at least kRolloutCalls.
  static void NoteRollout(Series& s, int64_t step, double calls) {
    const double lo = std::min(calls, s.first_calls), hi = std::max(calls, s.first_calls);
    if (!(hi >= kRolloutCalls && hi >= kRolloutChange * lo)) return;
    s.rollout_step = step;
    s.rollout_calls = calls;
  }

  // Marks `s` as centred on zero at `step` when its last values (kSignedMinValues at least) lie
  // on both sides of zero and change sign between successive values, each at least
  // kSignedFraction of the time.
  static void NoteSigned(Series& s, int64_t step) {
    const size_t n = s.history.size();
    if (n < kSignedMinValues) return;
    size_t negative = 0, changes = 0;
    for (size_t i = 0; i < n; ++i) {
      if (s.history[i] < 0) ++negative;
      if (i > 0 && (s.history[i] < 0) != (s.history[i - 1] < 0)) ++changes;
    }
    const double neg = static_cast<double>(negative) / static_cast<double>(n);
    const double chg = static_cast<double>(changes) / static_cast<double>(n - 1);
    if (neg >= kSignedFraction && 1 - neg >= kSignedFraction && chg >= kSignedFraction) {
      s.signed_step = step;
      s.signed_negative = neg;
      s.signed_changes = chg;
    }
  }

  // condition=window (and evaluation passes): closes the window of `s`: compares its mean with
  // the windows before, notes it among them. `phases`: a window is a whole evaluation pass (no
  // batch noise between passes of the same data): compared with the previous pass alone.
  void Close(const std::string& name, Series& s, int64_t step, bool phases, Verdict* v) {
    const double n = static_cast<double>(s.count);
    const double mean = s.sum / n;
    const double se2 = s.count > 1 ? std::max(0.0, s.m2 / (n - 1)) / n : -1.0;
    s.sum = 0;
    s.m = 0;
    s.m2 = 0;
    s.count = 0;
    s.values.clear();
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
  double divergence_factor_;
  bool trend_;
  std::optional<Mode> mode_;
  TensorSelection selection_;
  std::map<std::string, Series> series_;
};

}  // namespace

BuiltinDef LossNotDecreasingDef() {
  return MakeDef<LossNotDecreasing>(
      "the loss is not learning from the start, rising, or diverging (judged against its own "
      "noise; "
      "a converged loss is not an issue)");
}

}  // namespace trainscope::rules_internal
