#include "trainscope/gpu_source.h"

namespace trainscope {

void FakeGpuSource::Set(std::vector<GpuMetrics> gpus) {
  MutexLock lock(&mu_);
  gpus_ = std::move(gpus);
}

void FakeGpuSource::SetError(Status status) {
  MutexLock lock(&mu_);
  error_ = std::move(status);
}

int FakeGpuSource::DeviceCount() const {
  MutexLock lock(&mu_);
  return static_cast<int>(gpus_.size());
}

Status FakeGpuSource::Sample(std::vector<GpuMetrics>* out) {
  MutexLock lock(&mu_);
  ++calls_;
  if (!error_.ok()) return error_;
  *out = gpus_;
  return Status::OK();
}

std::string FakeGpuSource::Describe() const {
  MutexLock lock(&mu_);
  return "fake (" + std::to_string(gpus_.size()) + " GPUs)";
}

int64_t FakeGpuSource::sample_calls() const {
  MutexLock lock(&mu_);
  return calls_;
}

}  // namespace trainscope
