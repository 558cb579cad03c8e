// Writes a small sample trial with every dtype (and a TensorBoard folder) for the Python oracle
// tests (tests/python/test_event_oracle.py, test_tensorboard_oracle.py), which check it with
// smdebug's and TensorBoard's own readers.
//
// Usage: write_sample_trial <out_dir>
//
// Values are defined by a formula the Python tests recompute independently. For element i
// (flat, C order) of a tensor saved at global step s, with r = (37 * i + 3 * s + 1) % 201:
//   floating (f16, bf16, f32, f64): (r - 100) * 0.25
//   signed integers: r - 100;  unsigned integers: r;  bool: r % 2
//   complex: real (r - 100) * 0.25, imaginary (r - 100) * -0.5
//   strings: "s<i>_\u00e9"
// Tensors per step: "t_<dtype name>" of shape [2, 3, 4] for every numeric dtype, "scalar"
// (float32, 0-d), "empty" (float32, [0, 3]), "names" (string, [3]),
// "smdebug/reductions/mean/t_float32" (float32, 0-d, the mean), and a shape-only entry
// "shape_only" = [5, 6]. Steps: TRAIN global 0, 2, 4 (mode steps 0, 1, 2), EVAL global 6 (mode
// step 0). TensorBoard: scalar "loss" = 1 / (s + 1) at every step, histogram
// "histograms/t_float32" (8 bins) at every step.
#include <cmath>
#include <complex>
#include <cstdio>
#include <string>
#include <vector>

#include "trainscope/dtype.h"
#include "trainscope/reductions.h"
#include "trainscope/tensorboard.h"
#include "trainscope/writer.h"

namespace trainscope {
namespace {

const DType kNumeric[] = {DType::kF16,  DType::kBF16,      DType::kF32,       DType::kF64,
                          DType::kI8,   DType::kI16,       DType::kI32,       DType::kI64,
                          DType::kU8,   DType::kU16,       DType::kU32,       DType::kU64,
                          DType::kBool, DType::kComplex64, DType::kComplex128};

template <typename T>
void Put(std::vector<char>* out, T v) {
  const char* p = reinterpret_cast<const char*>(&v);
  out->insert(out->end(), p, p + sizeof(T));
}

std::vector<char> Values(DType t, int64_t n, int64_t step) {
  std::vector<char> out;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = (37 * i + 3 * step + 1) % 201;
    const double f = static_cast<double>(r - 100) * 0.25;
    switch (t) {
      case DType::kF16:
        Put(&out, FloatToHalf(static_cast<float>(f)));
        break;
      case DType::kBF16:
        Put(&out, FloatToBFloat16(static_cast<float>(f)));
        break;
      case DType::kF32:
        Put(&out, static_cast<float>(f));
        break;
      case DType::kF64:
        Put(&out, f);
        break;
      case DType::kI8:
        Put(&out, static_cast<int8_t>(r - 100));
        break;
      case DType::kI16:
        Put(&out, static_cast<int16_t>(r - 100));
        break;
      case DType::kI32:
        Put(&out, static_cast<int32_t>(r - 100));
        break;
      case DType::kI64:
        Put(&out, static_cast<int64_t>(r - 100));
        break;
      case DType::kU8:
        Put(&out, static_cast<uint8_t>(r));
        break;
      case DType::kU16:
        Put(&out, static_cast<uint16_t>(r));
        break;
      case DType::kU32:
        Put(&out, static_cast<uint32_t>(r));
        break;
      case DType::kU64:
        Put(&out, static_cast<uint64_t>(r));
        break;
      case DType::kBool:
        Put(&out, static_cast<uint8_t>(r % 2));
        break;
      case DType::kComplex64:
        Put(&out, std::complex<float>(static_cast<float>(f), static_cast<float>(-2 * f)));
        break;
      case DType::kComplex128:
        Put(&out, std::complex<double>(f, -2 * f));
        break;
      default:
        break;
    }
  }
  return out;
}

Status Run(const std::string& out_dir) {
  WriterOptions opts;
  TS_ASSIGN_OR_RETURN(auto w, TrialWriter::Open(out_dir, opts));
  TS_ASSIGN_OR_RETURN(auto tb, TensorBoardWriter::Open(out_dir + "/tensorboard"));
  std::string names_json;
  struct StepDef {
    int64_t step;
    Mode mode;
    int64_t mode_step;
  };
  const StepDef steps[] = {
      {0, Mode::kTrain, 0}, {2, Mode::kTrain, 1}, {4, Mode::kTrain, 2}, {6, Mode::kEval, 0}};
  for (const StepDef& sd : steps) {
    TS_RETURN_IF_ERROR(w->BeginStep(sd.step, sd.mode, sd.mode_step));
    const std::vector<int64_t> shape{2, 3, 4};
    for (DType t : kNumeric) {
      const std::vector<char> v = Values(t, 24, sd.step);
      TS_RETURN_IF_ERROR(
          w->AddTensor("t_" + std::string(DTypeName(t)), {t, v.data(), shape, {}, {}}));
    }
    const std::vector<char> scalar = Values(DType::kF32, 1, sd.step);
    TS_RETURN_IF_ERROR(w->AddTensor("scalar", TensorView::Scalar(DType::kF32, scalar.data())));
    TS_RETURN_IF_ERROR(w->AddTensor("empty", {DType::kF32, nullptr, {0, 3}, {}, {}}));
    std::vector<std::string> strings;
    for (int i = 0; i < 3; ++i) strings.push_back("s" + std::to_string(i) + "_\xc3\xa9");
    TensorView sv{DType::kString, nullptr, {3}, {}, {}};
    for (const std::string& s : strings) sv.strings.push_back(s);
    TS_RETURN_IF_ERROR(w->AddTensor("names", sv));
    const std::vector<char> f32 = Values(DType::kF32, 24, sd.step);
    const TensorView f32_view{DType::kF32, f32.data(), shape, {}, {}};
    TS_ASSIGN_OR_RETURN(double mean, ComputeReduction(f32_view, {ReductionOp::kMean, false}));
    const float mean_f = static_cast<float>(mean);
    TS_RETURN_IF_ERROR(w->AddTensor(ReductionTensorName("t_float32", {ReductionOp::kMean, false}),
                                    TensorView::Scalar(DType::kF32, &mean_f)));
    TS_RETURN_IF_ERROR(w->AddShape("shape_only", {5, 6}));
    TS_RETURN_IF_ERROR(w->EndStep());

    TS_RETURN_IF_ERROR(tb->AddScalar(sd.mode, "loss", sd.step, 1.0 / (sd.step + 1)));
    TS_ASSIGN_OR_RETURN(Histogram h, ComputeHistogram(f32_view, 8));
    TS_RETURN_IF_ERROR(tb->AddHistogram(sd.mode, "histograms/t_float32", sd.step, h));
  }
  for (DType t : kNumeric) names_json += "\"t_" + std::string(DTypeName(t)) + "\", ";
  const std::string collections =
      "{\"collections\": {\"default\": {\"name\": \"default\", \"include_regex\": [\".*\"], "
      "\"tensor_names\": [" +
      names_json +
      "\"empty\", \"names\", \"scalar\"], "
      "\"reduction_config\": null, \"save_config\": null, \"save_histogram\": true}}, "
      "\"_meta\": {\"num_workers\": 1}}";
  TS_RETURN_IF_ERROR(w->WriteCollections(collections));
  TS_RETURN_IF_ERROR(tb->Close());
  return w->Close();
}

}  // namespace
}  // namespace trainscope

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <out_dir>\n", argv[0]);
    return 2;
  }
  trainscope::Status s = trainscope::Run(argv[1]);
  if (!s.ok()) {
    std::fprintf(stderr, "write_sample_trial: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
