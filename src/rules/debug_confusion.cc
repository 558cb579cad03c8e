// Confusion (docs/rules/Confusion.md): the confusion matrix of an evaluation pass (or, in a run
// without evaluation, of the last `window` training predictions at the end) has a class that the
// model gets systematically wrong: condition=systematic (the default), its samples go to one
// other class more often than to itself and more than max_off_diag of the time;
// condition=threshold (SageMaker's), its recall is below min_diag or its samples go to one other
// class more than max_off_diag of the time. Each beyond the pass's sampling error (95 % Wilson
// bounds). A pass followed by more training is judged against the pass before it: a class must
// fail in both (a model still learning a class is not confusing it); the run's last judged pass
// is the final model's and fails on its own.
#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <set>

#include "rules/class_util.h"

namespace trainscope::rules_internal {
namespace {

std::string EscapeRegex(const std::string& s) {
  std::string out = "^";
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out + "$";
}

class Confusion : public BuiltinRule {
 public:
  static constexpr const char* kName = "Confusion";
  static constexpr int64_t kMinClassSamples = 10;
  static constexpr int kMaxFindings = 10;

  static std::vector<ParamSpec> Specs() {
    return {{"category_no", ParamType::kInt, "None", "number of classes (None: inferred)"},
            {"labels", ParamType::kString, "labels", "name of the labels tensor"},
            {"predictions", ParamType::kString, "predictions", "name of the predictions tensor"},
            {"labels_collection", ParamType::kString, "labels", "collection of the labels"},
            {"predictions_collection", ParamType::kString, "predictions",
             "collection of the predictions"},
            {"min_diag", ParamType::kDouble, "0.9",
             "smallest tolerated share of a class predicted right (recall)"},
            {"max_off_diag", ParamType::kDouble, "0.1",
             "largest tolerated share of a class predicted as one given other class"},
            {"window", ParamType::kInt, "1000",
             "training predictions checked at the end of a run without evaluation"},
            {"condition", ParamType::kString, "systematic",
             "systematic: a class predicted as one other class more often than as itself (and "
             "more than max_off_diag); threshold: SageMaker's min_diag/max_off_diag gate (a "
             "healthy model with a class at 85 % recall fires)"}};
  }

  explicit Confusion(ParsedParams p) : BuiltinRule(kName, std::move(p)) {
    category_no_ = params().OptInt("category_no");
    min_diag_ = params().Double("min_diag");
    max_off_diag_ = params().Double("max_off_diag");
    window_size_ = params().Int("window");
    systematic_ = params().String("condition") == "systematic";
    labels_.regexes = {EscapeRegex(params().String("labels"))};
    if (params().IsSet("labels_collection")) {
      labels_.collections = {params().String("labels_collection")};
    }
    predictions_.regexes = {EscapeRegex(params().String("predictions"))};
    if (params().IsSet("predictions_collection")) {
      predictions_.collections = {params().String("predictions_collection")};
    }
  }

  Status Validate() const {
    if (category_no_ && (*category_no_ < 2 || *category_no_ > kMaxClassId)) {
      return Status::InvalidArgument("Confusion: category_no must be in [2, 100000]");
    }
    if (window_size_ < 1 || window_size_ > 10000000) {
      return Status::InvalidArgument("Confusion: window must be in [1, 1e7]");
    }
    if (params().String("labels").empty() || params().String("predictions").empty()) {
      return Status::InvalidArgument("Confusion: labels and predictions must name tensors");
    }
    const std::string c = params().String("condition");
    if (c != "systematic" && c != "threshold") {
      return Status::InvalidArgument("Confusion: condition '" + c +
                                     "' is not one of systematic, threshold");
    }
    return Status::OK();
  }

  Result<Verdict> InvokeAtStep(int64_t step) override {
    auto [mode, mode_step] = data().StepMode(step);
    Verdict v;
    if (mode != Mode::kEval && !eval_matrix_.empty()) {
      JudgePass(step, /*final=*/false, &v);
    }
    TS_ASSIGN_OR_RETURN(auto label_names, data().Select(labels_, step));
    TS_ASSIGN_OR_RETURN(auto pred_names, data().Select(predictions_, step));
    if (label_names.empty() || pred_names.empty()) return v;
    auto lt = data().Value(label_names.front(), step);
    auto pt = data().Value(pred_names.front(), step);
    if (!lt.ok() || !pt.ok()) {
      const Status& s = lt.ok() ? pt.status() : lt.status();
      if (IsNoData(s)) return v;
      return s;
    }
    auto labels = ClassIds(*lt, false);
    auto preds = ClassIds(*pt, true);
    if (!labels || !preds || labels->size() != preds->size()) return v;
    tensor_ = pred_names.front();
    for (size_t i = 0; i < labels->size(); ++i) {
      const int64_t l = (*labels)[i], p = (*preds)[i];
      if (category_no_ && (l >= *category_no_ || p >= *category_no_)) continue;
      if (mode == Mode::kEval) {
        if (eval_matrix_.size() < kMaxCells || eval_matrix_.count({l, p})) ++eval_matrix_[{l, p}];
        saw_eval_ = true;
        last_eval_step_ = step;
      } else {
        recent_.emplace_back(l, p);
        if (static_cast<int64_t>(recent_.size()) > window_size_) recent_.pop_front();
      }
    }
    last_step_ = step;
    return v;
  }

  Result<Verdict> Finish(int64_t last_step) override {
    Verdict v;
    const int64_t step = last_step_ >= 0 ? last_step_ : last_step;
    if (!eval_matrix_.empty()) {
      JudgePass(step, /*final=*/true, &v);
    } else if (!last_pass_failures_.empty()) {
      // The last pass was judged when training resumed after it, with no pass before it to
      // confirm; it is the final model's last evaluation, so its failures stand on their own.
      for (auto& f : last_pass_failures_) {
        f.step = step;
        f.explanation = "in the last evaluation pass (ended at step " +
                        std::to_string(last_pass_end_) + "; no later pass)" + f.explanation;
        v.Add(std::move(f));
      }
      last_pass_failures_.clear();
    } else if (!saw_eval_ && !recent_.empty()) {
      std::map<std::pair<int64_t, int64_t>, int64_t> m;
      for (const auto& lp : recent_) ++m[lp];
      for (auto& c : Evaluate(m, step)) {
        c.finding.explanation = "in the last " + std::to_string(recent_.size()) +
                                " training predictions" + c.finding.explanation;
        v.Add(std::move(c.finding));
      }
    }
    return v;
  }

  // Nothing judged: the script saved no labels and predictions (they are not captured on their
  // own), which the status says, with what to do.
  std::string StatusNote() const override {
    if (last_step_ >= 0) return {};
    return "nothing to judge: no tensors named '" + params().String("labels") + "' and '" +
           params().String("predictions") +
           "' were saved; save them each step (hook.save_tensor(\"" + params().String("labels") +
           "\", y) and hook.save_tensor(\"" + params().String("predictions") +
           "\", logits.argmax(1))) for the rule to judge the confusion matrix";
  }

  std::vector<CollectionRequest> RequiredCollections() const override {
    CollectionRequest l;
    l.name = params().IsSet("labels_collection") ? params().String("labels_collection") : "labels";
    l.include_regex = labels_.regexes;
    l.save_interval = 1;
    CollectionRequest p = l;
    p.name = params().IsSet("predictions_collection") ? params().String("predictions_collection")
                                                      : "predictions";
    p.include_regex = predictions_.regexes;
    return {l, p};
  }

  size_t StateBytes() const override {
    return eval_matrix_.size() * 64 + recent_.size() * 16 + prev_failing_.size() * 56 +
           last_pass_failures_.size() * 512 + 128;
  }

 private:
  static constexpr size_t kMaxCells = 1000000;
  // Mid-run, a class failing two passes in a row is reported unless its recall rose by this much
  // between them (measured on tests/training's healthy runs under trainscope run: classes at 40-65
  // % after the first epochs, rising 20-30 points a pass).
  static constexpr double kMinRecallGain = 0.1;

  // 95 % Wilson score interval of a proportion k/n: the bounds a pass's sampling error allows.
  static double WilsonBound(int64_t k, int64_t n, bool upper) {
    constexpr double kZ = 1.959963984540054;
    const double nn = static_cast<double>(n), p = static_cast<double>(k) / nn;
    const double centre = p + kZ * kZ / (2 * nn);
    const double spread = kZ * std::sqrt(p * (1 - p) / nn + kZ * kZ / (4 * nn * nn));
    return (upper ? centre + spread : centre - spread) / (1 + kZ * kZ / nn);
  }

  // Judges the evaluation pass in eval_matrix_ at `step`. A pass that more training follows
  // reports only the classes that also failed at the pass before it without their recall rising
  // by kMinRecallGain since (a class still being learned is not confused yet); its other failures
  // wait (for the next pass, or for Finish when no pass follows).
  void JudgePass(int64_t step, bool final, Verdict* v) {
    const std::string what =
        final ? "the last evaluation pass"
              : "the evaluation pass that ended at step " + std::to_string(last_eval_step_);
    auto failures = Evaluate(eval_matrix_, step);
    eval_matrix_.clear();
    std::map<int64_t, double> failing;
    std::vector<RuleFinding> waiting;
    for (auto& [label, recall, f] : failures) {
      failing[label] = recall;
      auto prev = prev_failing_.find(label);
      const bool stuck = prev != prev_failing_.end() && recall < prev->second + kMinRecallGain;
      if (final || stuck) {
        f.explanation = "in " + what +
                        (final || prev_failing_.empty() ? "" : " and the pass before it") +
                        f.explanation;
        v->Add(std::move(f));
      } else {
        waiting.push_back(std::move(f));
      }
    }
    prev_failing_ = std::move(failing);
    last_pass_failures_ = final ? std::vector<RuleFinding>{} : std::move(waiting);
    last_pass_end_ = last_eval_step_;
  }

  // The failing classes of matrix `m` and their findings (explanations to follow "in <what>"),
  // judged at `step`:
  // recall below min_diag, or one off-diagonal share above max_off_diag, each beyond the
  // 95 % Wilson bound of the class's sample count. Worst recall first (the summary names the
  // first), at most kMaxFindings.
  struct ClassFailure {
    int64_t label;
    double recall;
    RuleFinding finding;
  };
  std::vector<ClassFailure> Evaluate(const std::map<std::pair<int64_t, int64_t>, int64_t>& m,
                                     int64_t step) {
    std::vector<ClassFailure> out;
    std::map<int64_t, int64_t> row_total;
    for (const auto& [lp, n] : m) row_total[lp.first] += n;
    for (const auto& [label, total] : row_total) {
      if (total < kMinClassSamples) continue;
      int64_t right = 0, worst_n = 0, worst_p = -1;
      for (auto it = m.lower_bound({label, INT64_MIN}); it != m.end() && it->first.first == label;
           ++it) {
        if (it->first.second == label) {
          right = it->second;
        } else if (it->second > worst_n) {
          worst_n = it->second;
          worst_p = it->first.second;
        }
      }
      const double recall = static_cast<double>(right) / static_cast<double>(total);
      const double off = static_cast<double>(worst_n) / static_cast<double>(total);
      const double off_low = WilsonBound(worst_n, total, /*upper=*/false);
      const double recall_high = WilsonBound(right, total, /*upper=*/true);
      // systematic: only a class that goes to another class more than to itself.
      const bool low = !systematic_ && recall_high < min_diag_;
      const bool confused = off_low > max_off_diag_ && (!systematic_ || off_low > recall_high);
      if (!low && !confused) continue;
      auto f = NewFinding(step);
      f.tensor = tensor_;
      f.value = low ? recall : off;
      f.threshold = low ? min_diag_ : max_off_diag_;
      f.condition = low           ? "confusion[c][c] / samples of c < min_diag"
                    : systematic_ ? "confusion[c][p] > confusion[c][c] and confusion[c][p] / "
                                    "samples of c > max_off_diag"
                                  : "confusion[c][p] / samples of c > max_off_diag";
      f.explanation = ", class " + std::to_string(label) + " (" + std::to_string(total) +
                      " samples) is predicted right " + Percent(recall) + " of the time" +
                      (worst_p >= 0 ? " and as class " + std::to_string(worst_p) + " " +
                                          Percent(off) + " of the time"
                                    : "") +
                      " (min_diag " + Num(min_diag_) + ", max_off_diag " + Num(max_off_diag_) +
                      ", beyond the sampling error of " + std::to_string(total) + " samples)";
      f.recommendation =
          systematic_
              ? "a class predicted as another one more often than as itself points to the data: "
                "check the label mapping (the dataset's class ids against the model's outputs), "
                "that the training data is shuffled (a class seen only in one part of an epoch is "
                "forgotten), and the class balance; then look at misclassified examples"
              : "the model confuses these classes: look at misclassified examples of them, check "
                "their labels, add data or augmentation for the weak class, weight it in the "
                "loss, or train longer if the whole matrix is still poor";
      out.push_back({label, recall, std::move(f)});
    }
    std::stable_sort(out.begin(), out.end(), [](const ClassFailure& a, const ClassFailure& b) {
      return a.recall < b.recall;
    });
    if (out.size() > static_cast<size_t>(kMaxFindings)) out.resize(kMaxFindings);
    return out;
  }

  std::optional<int64_t> category_no_;
  double min_diag_, max_off_diag_;
  int64_t window_size_;
  bool systematic_;  // condition=systematic
  TensorSelection labels_, predictions_;
  std::map<std::pair<int64_t, int64_t>, int64_t> eval_matrix_;
  std::deque<std::pair<int64_t, int64_t>> recent_;
  bool saw_eval_ = false;
  int64_t last_eval_step_ = -1;
  int64_t last_step_ = -1;
  std::string tensor_;
  std::map<int64_t, double> prev_failing_;       // classes failing at the last judged pass: recall
  std::vector<RuleFinding> last_pass_failures_;  // its failures not reported yet
  int64_t last_pass_end_ = -1;
};

}  // namespace

BuiltinDef ConfusionDef() {
  return MakeDef<Confusion>(
      "a class is predicted as one other class more often than as itself (label mapping, "
      "unshuffled data)");
}

}  // namespace trainscope::rules_internal
