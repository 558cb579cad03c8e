// ClassImbalance (docs/rules/ClassImbalance.md): after `samples` labels, the most frequent class
// is more than threshold_imbalance times as frequent as the rarest; or, after a warm-up of
// `samples` labelled predictions, over the last `samples` of them one class is mispredicted more
// than threshold_misprediction of the time while the other classes are mostly right.
#include <deque>
#include <map>
#include <set>

#include "rules/class_util.h"

namespace trainscope::rules_internal {
namespace {

class ClassImbalance : public BuiltinRule {
 public:
  static constexpr const char* kName = "ClassImbalance";
  static constexpr size_t kMaxClasses = 10000;
  static constexpr int64_t kMinClassSamples = 10;  // in the window, to judge a class

  static std::vector<ParamSpec> Specs() {
    return {{"threshold_imbalance", ParamType::kDouble, "10",
             "largest tolerated ratio of the most to the least frequent class"},
            {"threshold_misprediction", ParamType::kDouble, "0.7",
             "largest tolerated misprediction rate of one class"},
            {"samples", ParamType::kInt, "500", "labels seen before checking (and window size)"},
            {"argmax", ParamType::kBool, "False",
             "take the argmax of the predictions (scores or probabilities)"},
            {"labels_regex", ParamType::kString, ".*labels", "regex of the labels tensor"},
            {"predictions_regex", ParamType::kString, ".*predictions",
             "regex of the predictions tensor"}};
  }

  explicit ClassImbalance(ParsedParams p) : BuiltinRule(kName, std::move(p)) {
    threshold_imbalance_ = params().Double("threshold_imbalance");
    threshold_mispred_ = params().Double("threshold_misprediction");
    samples_ = params().Int("samples");
    argmax_ = params().Bool("argmax");
    labels_.regexes = {params().String("labels_regex")};
    predictions_.regexes = {params().String("predictions_regex")};
  }

  Status Validate() const {
    if (samples_ < 1 || samples_ > 10000000) {
      return Status::InvalidArgument("ClassImbalance: samples must be in [1, 1e7]");
    }
    if (!(threshold_imbalance_ > 1)) {
      return Status::InvalidArgument("ClassImbalance: threshold_imbalance must be > 1");
    }
    if (!(threshold_mispred_ > 0 && threshold_mispred_ < 1)) {
      return Status::InvalidArgument("ClassImbalance: threshold_misprediction must be in (0, 1)");
    }
    return Status::OK();
  }

  // Nothing judged: the script saved no labels (they are not captured on their own).
  std::string StatusNote() const override {
    if (total_ > 0) return {};
    return "nothing to judge: no labels tensor (labels_regex '" + params().String("labels_regex") +
           "') was saved; save the labels (and predictions) each step, e.g. "
           "hook.save_tensor(\"labels\", y), for the rule to judge the class balance";
  }

  Result<Verdict> InvokeAtStep(int64_t step) override {
    Verdict v;
    TS_ASSIGN_OR_RETURN(auto label_names, data().Select(labels_, step));
    if (label_names.empty()) return v;
    const std::string& label_name = label_names.front();
    auto lt = data().Value(label_name, step);
    if (!lt.ok()) {
      if (IsNoData(lt.status())) return v;
      return lt.status();
    }
    auto labels = ClassIds(*lt, /*argmax=*/false);
    if (!labels) return v;
    for (int64_t c : *labels) {
      if (counts_.size() >= kMaxClasses && !counts_.count(c)) continue;
      ++counts_[c];
      ++total_;
    }
    CheckImbalance(step, label_name, &v);

    TS_ASSIGN_OR_RETURN(auto pred_names, data().Select(predictions_, step));
    if (pred_names.empty()) return v;
    auto pt = data().Value(pred_names.front(), step);
    if (!pt.ok()) {
      if (IsNoData(pt.status())) return v;
      return pt.status();
    }
    auto preds = ClassIds(*pt, argmax_);
    if (!preds || preds->size() != labels->size()) return v;
    for (size_t i = 0; i < labels->size(); ++i) {
      window_.emplace_back((*labels)[i], (*preds)[i]);
      if (static_cast<int64_t>(window_.size()) > samples_) window_.pop_front();
      ++predicted_;
    }
    if (predicted_ >= 2 * samples_) CheckMisprediction(step, pred_names.front(), &v);
    return v;
  }

  std::vector<CollectionRequest> RequiredCollections() const override {
    CollectionRequest l;
    l.name = "labels";
    l.include_regex = labels_.regexes;
    l.save_interval = 1;
    CollectionRequest p = l;
    p.name = "predictions";
    p.include_regex = predictions_.regexes;
    return {l, p};
  }

  size_t StateBytes() const override {
    return counts_.size() * 64 + window_.size() * 16 + reported_.size() * 40 + 128;
  }

 private:
  void CheckImbalance(int64_t step, const std::string& name, Verdict* v) {
    if (imbalance_reported_ || total_ < samples_ || counts_.size() < 2) return;
    auto most = counts_.begin(), least = counts_.begin();
    for (auto it = counts_.begin(); it != counts_.end(); ++it) {
      if (it->second > most->second) most = it;
      if (it->second < least->second) least = it;
    }
    const double ratio = static_cast<double>(most->second) / static_cast<double>(least->second);
    if (!(ratio > threshold_imbalance_)) return;
    imbalance_reported_ = true;
    RuleFinding f = NewFinding(step);
    f.tensor = name;
    f.value = ratio;
    f.threshold = threshold_imbalance_;
    f.condition = "largest / smallest class count > threshold_imbalance";
    f.explanation = "in " + std::to_string(total_) + " labels, class " +
                    std::to_string(most->first) + " appears " + std::to_string(most->second) +
                    " times and class " + std::to_string(least->first) + " only " +
                    std::to_string(least->second) + " (ratio " + Num(ratio) + ", more than " +
                    Num(threshold_imbalance_) + "): the classes are imbalanced";
    f.recommendation =
        "rebalance the training data: oversample rare classes "
        "(torch.utils.data.WeightedRandomSampler), undersample frequent ones, or weight the loss "
        "per class (CrossEntropyLoss(weight=...)); report per-class metrics, not only accuracy";
    v->Add(std::move(f));
  }

  void CheckMisprediction(int64_t step, const std::string& name, Verdict* v) {
    std::map<int64_t, std::pair<int64_t, int64_t>> per_class;  // class -> (count, wrong)
    for (const auto& [label, pred] : window_) {
      auto& e = per_class[label];
      ++e.first;
      if (pred != label) ++e.second;
    }
    int64_t all = 0, all_wrong = 0;
    for (const auto& [c, e] : per_class) {
      all += e.first;
      all_wrong += e.second;
    }
    for (const auto& [c, e] : per_class) {
      if (e.first < kMinClassSamples || reported_.count(c)) continue;
      const double rate = static_cast<double>(e.second) / static_cast<double>(e.first);
      if (!(rate > threshold_mispred_)) continue;
      const int64_t others = all - e.first;
      if (others == 0) continue;
      const double others_rate =
          static_cast<double>(all_wrong - e.second) / static_cast<double>(others);
      // Early in training every class is mispredicted; only a class the model fails while it
      // gets the others mostly right is a class-imbalance symptom.
      if (others_rate > 1.0 - threshold_mispred_) continue;
      reported_.insert(c);
      RuleFinding f = NewFinding(step);
      f.tensor = name;
      f.value = rate;
      f.threshold = threshold_mispred_;
      f.condition = "misprediction rate of a class > threshold_misprediction";
      f.explanation = "over the last " + std::to_string(all) + " predictions, class " +
                      std::to_string(c) + " is wrong " + Percent(rate) + " of the time (" +
                      std::to_string(e.second) + " of " + std::to_string(e.first) +
                      ") while the other classes are wrong " + Percent(others_rate) +
                      ": the model neglects this class";
      f.recommendation =
          "give the neglected class more weight: class weights in the loss, oversampling, more "
          "or better labelled examples of it; check its labels for errors";
      v->Add(std::move(f));
    }
  }

  double threshold_imbalance_, threshold_mispred_;
  int64_t samples_;
  bool argmax_;
  TensorSelection labels_, predictions_;
  std::map<int64_t, int64_t> counts_;
  int64_t total_ = 0;
  bool imbalance_reported_ = false;
  std::deque<std::pair<int64_t, int64_t>> window_;
  int64_t predicted_ = 0;
  std::set<int64_t> reported_;
};

}  // namespace

BuiltinDef ClassImbalanceDef() {
  return MakeDef<ClassImbalance>("the classes are imbalanced, or the model neglects one class");
}

}  // namespace trainscope::rules_internal
