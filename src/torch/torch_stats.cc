// Tensor statistics with LibTorch operations (trainscope/torch_stats.h).
#include "trainscope/torch_stats.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <cstddef>
#include <exception>
#include <limits>
#include <vector>

#include "torch/torch_error.h"

namespace trainscope {
namespace {

using torch_internal::TorchError;

// What TorchTensorStats reports for a tensor whose elements are not read: TensorStats' defaults,
// the extremes at +-inf (as ComputeStats starts them).
TensorStats UnreadStats(int64_t count) {
  TensorStats s;
  s.count = count;
  s.min = s.abs_min = std::numeric_limits<double>::infinity();
  s.max = s.abs_max = -std::numeric_limits<double>::infinity();
  return s;
}

// The fields of `fields` that are read from the elements, in StatsField order.
std::vector<StatsField> FieldsToCompute(StatsFieldSet fields) {
  std::vector<StatsField> wanted = fields.ToVector();
  std::erase(wanted, StatsField::kCount);  // known without reading the elements
  return wanted;
}

}  // namespace

Result<at::Tensor> TorchStatsOnDevice(const at::Tensor& t, StatsFieldSet fields) {
  if (!t.defined()) return Status::InvalidArgument("the tensor is undefined (no value)");
  const std::vector<StatsField> wanted = FieldsToCompute(fields);
  try {
    at::NoGradGuard no_grad;
    const auto on_device = at::TensorOptions().dtype(at::kDouble).device(t.device());
    if (wanted.empty()) return at::empty({0}, on_device);
    if (t.numel() == 0) {
      const TensorStats unread = UnreadStats(0);
      std::vector<double> values;
      values.reserve(wanted.size());
      for (StatsField f : wanted) values.push_back(unread.Get(f));
      return at::tensor(values, at::TensorOptions().dtype(at::kDouble)).to(t.device());
    }
    // The elements stay in their own dtype: float64 copies of a large activation and of its
    // magnitudes held together (with the temporaries of m2) could run a GPU out of memory in the
    // middle of a training. Each sum and variance reads a float64 copy made for that one
    // reduction and freed after it (sums that way are what ComputeStats computes); the extremes
    // are exact in any floating dtype. Integers, bools and complex magnitudes are read in double,
    // as ComputeStats reads them.
    at::Tensor x = t.detach();
    if (x.is_complex()) x = x.to(at::kComplexDouble).abs();  // |x| in double, as ComputeStats
    x = x.reshape({-1});
    if (!x.is_floating_point()) x = x.to(at::kDouble);
    const double n = static_cast<double>(x.numel());
    at::Tensor a, mean, abs_mean;  // made when a field first needs them
    auto abs_x = [&]() -> const at::Tensor& {
      if (!a.defined()) a = x.abs();
      return a;
    };
    auto mean_x = [&]() -> const at::Tensor& {
      if (!mean.defined()) mean = x.sum(at::kDouble) / n;
      return mean;
    };
    auto abs_mean_x = [&]() -> const at::Tensor& {
      if (!abs_mean.defined()) abs_mean = abs_x().sum(at::kDouble) / n;
      return abs_mean;
    };
    auto f64 = [](const at::Tensor& v) { return v.to(at::kDouble); };
    std::vector<at::Tensor> parts;
    parts.reserve(wanted.size());
    for (StatsField f : wanted) {
      switch (f) {
        case StatsField::kCount:
          break;
        case StatsField::kNanCount:
          parts.push_back(f64(x.isnan().sum()));
          break;
        case StatsField::kInfCount:
          parts.push_back(f64(x.isinf().sum()));
          break;
        case StatsField::kZeroCount:
          parts.push_back(f64(x.eq(0).sum()));
          break;
        case StatsField::kMin:
          parts.push_back(f64(x.min()));
          break;
        case StatsField::kMax:
          parts.push_back(f64(x.max()));
          break;
        case StatsField::kAbsMin:
          parts.push_back(f64(abs_x().min()));
          break;
        case StatsField::kAbsMax:
          parts.push_back(f64(abs_x().max()));
          break;
        case StatsField::kSum:
          parts.push_back(x.sum(at::kDouble));
          break;
        case StatsField::kAbsSum:
          parts.push_back(abs_x().sum(at::kDouble));
          break;
        case StatsField::kSumSq:
          parts.push_back([&] {
            const at::Tensor d = f64(x);  // squares rounded in x's dtype would lose digits
            return at::dot(d, d);
          }());
          break;
        case StatsField::kMean:
          parts.push_back(mean_x());
          break;
        case StatsField::kM2:
          parts.push_back(f64(x).var(/*unbiased=*/false) * n);
          break;
        case StatsField::kAbsMean:
          parts.push_back(abs_mean_x());
          break;
        case StatsField::kAbsM2:
          parts.push_back(f64(abs_x()).var(/*unbiased=*/false) * n);
          break;
        case StatsField::kProd:
          parts.push_back(x.prod(at::kDouble));
          break;
        case StatsField::kAbsProd:
          parts.push_back(abs_x().prod(at::kDouble));
          break;
      }
    }
    return at::stack(parts);  // 0-d parts -> one 1-D tensor, still on the device
  } catch (const std::exception& e) {
    return TorchError("reducing a tensor", e);
  }
}

Result<TensorStats> TorchTensorStats(const at::Tensor& t, StatsFieldSet fields) {
  if (!t.defined()) return Status::InvalidArgument("the tensor is undefined (no value)");
  TensorStats s = UnreadStats(t.numel());
  const std::vector<StatsField> wanted = FieldsToCompute(fields);
  if (s.count == 0 || wanted.empty()) return s;  // nothing to read: no device work
  TS_ASSIGN_OR_RETURN(at::Tensor on_device, TorchStatsOnDevice(t, fields));
  try {
    const at::Tensor host = on_device.cpu();  // the one transfer (and sync)
    const double* p = host.data_ptr<double>();
    for (size_t i = 0; i < wanted.size(); ++i) s.Set(wanted[i], p[i]);
  } catch (const std::exception& e) {
    return TorchError("reducing a tensor", e);
  }
  return s;
}

}  // namespace trainscope
