// CheckInputImages (docs/rules/CheckInputImages.md): after threshold_samples images, some channel
// of the model's input images is not normalised. condition=scale (the default): its |mean| is
// above threshold_mean and its values are on a raw scale (standard deviation above threshold_std,
// as raw 0-255 pixels) or sit on an offset that dwarfs their spread (|mean| > 3 standard
// deviations). condition=mean (SageMaker's): its |mean| is above threshold_mean.
#include <algorithm>
#include <map>

#include "rules/builtin.h"

namespace trainscope::rules_internal {
namespace {

// smdebug's MXNet default, and the input of a PyTorch model's top-level module (smdebug names it
// "<ClassName>_input_0"; class names start with a capital letter), but not a loss module's
// input (its class name ends in "Loss": an autoencoder's BCELoss_input_0 is a reconstruction).
constexpr const char* kDefaultRegex =
    ".*hybridsequential0_input_0|^(?![A-Za-z0-9]*Loss_input_0$)[A-Z][A-Za-z0-9]*_input_0$";

class CheckInputImages : public BuiltinRule {
 public:
  static constexpr const char* kName = "CheckInputImages";
  static std::vector<ParamSpec> Specs() {
    return {{"threshold_mean", ParamType::kDouble, "0.2",
             "largest tolerated |mean| of a channel of normalised inputs"},
            {"threshold_samples", ParamType::kInt, "500", "images seen before each check"},
            {"regex", ParamType::kString, kDefaultRegex, "regex of the input image tensors"},
            {"channel", ParamType::kInt, "1", "axis of the colour channels (1 for NCHW)"},
            {"condition", ParamType::kString, "scale",
             "scale: |mean| > threshold_mean on a raw scale (std > threshold_std) or on an offset "
             "(|mean| > 3 std); mean: |mean| > threshold_mean (SageMaker's)"},
            {"threshold_std", ParamType::kDouble, "3",
             "condition=scale: a channel standard deviation above this is a raw scale"}};
  }

  explicit CheckInputImages(ParsedParams p) : BuiltinRule(kName, std::move(p)) {
    threshold_mean_ = params().Double("threshold_mean");
    threshold_samples_ = params().Int("threshold_samples");
    channel_ = params().Int("channel");
    scale_condition_ = params().String("condition") == "scale";
    threshold_std_ = params().Double("threshold_std");
    selection_.regexes = {params().String("regex")};
  }

  Status Validate() const {
    if (threshold_samples_ < 1) {
      return Status::InvalidArgument("CheckInputImages: threshold_samples must be >= 1");
    }
    if (channel_ < 0 || channel_ > 3) {
      return Status::InvalidArgument(
          "CheckInputImages: channel must be 0..3 (1 for NCHW, 3 "
          "for NHWC)");
    }
    if (const std::string c = params().String("condition"); c != "scale" && c != "mean") {
      return Status::InvalidArgument("CheckInputImages: condition must be scale or mean, not '" +
                                     c + "'");
    }
    if (!(threshold_std_ > 0)) {
      return Status::InvalidArgument("CheckInputImages: threshold_std must be above 0");
    }
    if (params().String("regex").empty()) {
      return Status::InvalidArgument("CheckInputImages: regex must not be empty");
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
      // Images only: (N, C, H, W) or (N, H, W, C), floating or uint8.
      if (t->shape.size() != 4 || !IsNumeric(t->dtype) || t->num_elements() == 0) continue;
      if (acc_.size() >= 16 && !acc_.count(name)) continue;
      Acc& a = acc_[name];
      const int64_t channels = t->shape[static_cast<size_t>(channel_)];
      if (static_cast<int64_t>(a.sum.size()) != channels) {
        a.sum.assign(static_cast<size_t>(channels), 0.0);
        a.sum_sq.assign(static_cast<size_t>(channels), 0.0);
        a.count.assign(static_cast<size_t>(channels), 0);
        a.samples = 0;
      }
      int64_t inner = 1;
      for (size_t k = static_cast<size_t>(channel_) + 1; k < t->shape.size(); ++k) {
        inner *= t->shape[k];
      }
      ForEachElement(*t, [&](int64_t i, double x) {
        if (!std::isfinite(x)) return;
        const size_t c = static_cast<size_t>((i / inner) % channels);
        a.sum[c] += x;
        a.sum_sq[c] += x * x;
        ++a.count[c];
      });
      a.samples += t->shape[0];
      if (a.samples < threshold_samples_) continue;
      // The channel whose mean is farthest from 0 among those the condition judges unnormalised.
      size_t worst = 0;
      double worst_mean = 0, worst_std = 0;
      bool found = false;
      for (size_t c = 0; c < a.sum.size(); ++c) {
        if (a.count[c] == 0) continue;
        const double n = static_cast<double>(a.count[c]);
        const double m = a.sum[c] / n;
        const double sd = std::sqrt(std::max(0.0, a.sum_sq[c] / n - m * m));
        if (std::fabs(m) <= threshold_mean_) continue;
        if (scale_condition_ && sd <= threshold_std_ && std::fabs(m) <= 3 * sd) continue;
        if (!found || std::fabs(m) > std::fabs(worst_mean)) {
          worst_mean = m;
          worst_std = sd;
          worst = c;
          found = true;
        }
      }
      const int64_t seen = a.samples;
      a.sum.assign(a.sum.size(), 0.0);
      a.sum_sq.assign(a.sum_sq.size(), 0.0);
      a.count.assign(a.count.size(), 0);
      a.samples = 0;
      if (!found) continue;
      RuleFinding f = NewFinding(step);
      f.tensor = name;
      f.value = worst_mean;
      f.threshold = threshold_mean_;
      f.condition = scale_condition_ ? "|mean of a channel| > threshold_mean and (std > "
                                       "threshold_std or |mean| > 3 std)"
                                     : "|mean of a channel| > threshold_mean";
      f.explanation = "over the last " + std::to_string(seen) + " images of " + name +
                      ", channel " + std::to_string(worst) + " has mean " + Num(worst_mean) +
                      " and standard deviation " + Num(worst_std) + " (|mean| above " +
                      Num(threshold_mean_) +
                      (!scale_condition_ ? std::string()
                       : worst_std > threshold_std_
                           ? ", std above " + Num(threshold_std_) + ": raw pixel values"
                           : ", |mean| above 3 std: an offset") +
                      "): the inputs are not normalised";
      f.recommendation =
          "normalise the images to zero mean and unit variance per channel, e.g. "
          "torchvision.transforms.Normalize(mean, std) with the dataset's channel statistics "
          "after ToTensor() (ImageNet: mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])";
      v.Add(std::move(f));
    }
    return v;
  }

  std::vector<CollectionRequest> RequiredCollections() const override {
    // Every 10th step, and every step of the first kDenseSteps: the first judgement comes after
    // threshold_samples images, and a short run saving every 10th batch of 64 never got there (40
    // steps: 256 images). Unnormalised inputs are best caught before the run is spent.
    CollectionRequest r;
    r.name = "input_image";
    r.include_regex = {params().String("regex")};
    r.save_interval = 10;
    CollectionRequest first = r;
    first.save_interval = 1;
    first.end_step = kDenseSteps;
    return {r, first};
  }

  size_t StateBytes() const override {
    size_t b = 0;
    for (const auto& [name, a] : acc_) b += name.capacity() + a.sum.capacity() * 24 + 64;
    return b;
  }

 private:
  struct Acc {
    std::vector<double> sum, sum_sq;
    std::vector<int64_t> count;
    int64_t samples = 0;
  };
  static constexpr int64_t kDenseSteps = 8;  // steps at the start whose inputs are all saved
  double threshold_mean_;
  int64_t threshold_samples_;
  int64_t channel_;
  bool scale_condition_;
  double threshold_std_;
  TensorSelection selection_;
  std::map<std::string, Acc> acc_;
};

}  // namespace

BuiltinDef CheckInputImagesDef() {
  return MakeDef<CheckInputImages>(
      "input images are not normalised (raw pixel values, or a channel mean far from 0)");
}

}  // namespace trainscope::rules_internal
