#include "trainscope/gpu_source.h"

namespace trainscope {

void FakeGpuSource::Set(std::vector<GpuMetrics> gpus) {
  std::lock_guard<std::mutex> lock(mu_);
  gpus_ = std::move(gpus);
}

void FakeGpuSource::SetError(Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  error_ = std::move(status);
}

int FakeGpuSource::DeviceCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(gpus_.size());
}

Status FakeGpuSource::Sample(std::vector<GpuMetrics>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  ++calls_;
  if (!error_.ok()) return error_;
  *out = gpus_;
  return Status::OK();
}

std::string FakeGpuSource::Describe() const {
  std::lock_guard<std::mutex> lock(mu_);
  return "fake (" + std::to_string(gpus_.size()) + " GPUs)";
}

int64_t FakeGpuSource::sample_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

}  // namespace trainscope
