// GpuSource: where the system sampler gets per-GPU metrics. NvmlGpuSource reads NVIDIA's NVML
// (libnvidia-ml.so.1, loaded with dlopen at run time, so trainscope neither links nor needs it);
// FakeGpuSource serves fixed numbers to tests. A metric a driver does not offer is left empty.
//
// Thread safety: a GpuSource is used by one thread at a time (the sampler's thread).
// FakeGpuSource::Set may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/status.h"
#include "trainscope/thread_annotations.h"

namespace trainscope {

// One GPU at one instant. Empty optionals: not supported by this GPU or driver.
struct GpuMetrics {
  int index = 0;     // 0-based device index; the series name is "gpu<index>"
  std::string name;  // e.g. "NVIDIA H100 80GB HBM3"; may be empty
  std::optional<double> utilization_percent;       // kernel busy time, 0..100
  std::optional<double> memory_bandwidth_percent;  // memory controller busy, 0..100
  std::optional<uint64_t> memory_used_bytes;
  std::optional<uint64_t> memory_total_bytes;
  std::optional<double> temperature_celsius;
  std::optional<double> power_watts;
  std::optional<double> sm_clock_mhz;
  std::optional<double> memory_clock_mhz;
};

class GpuSource {
 public:
  virtual ~GpuSource() = default;
  // Number of GPUs this source reports.
  virtual int DeviceCount() const = 0;
  // Replaces *out with one entry per GPU. A failing device is skipped, not an error; an error
  // means the source as a whole failed this time (the sampler reports it once and goes on).
  virtual Status Sample(std::vector<GpuMetrics>* out) = 0;
  // e.g. "NVML (driver 550.54, 8 GPUs)" or "fake (2 GPUs)".
  virtual std::string Describe() const = 0;
};

// NVML through dlopen. Open() returns:
//  - a source (possibly of 0 GPUs) when the library loads and nvmlInit_v2 succeeds;
//  - NotFound "no NVIDIA GPU found (libnvidia-ml.so.1 not loadable): GPU metrics off" when the
//    library does not load (the ordinary case on a machine without an NVIDIA driver);
//  - Unavailable when nvmlInit_v2 fails (driver present but not usable), message names the error.
// A symbol missing from the library makes that metric unsupported, never an error.
class NvmlGpuSource {
 public:
  static constexpr const char* kDefaultLibrary = "libnvidia-ml.so.1";
  static Result<std::unique_ptr<GpuSource>> Open(const std::string& library = kDefaultLibrary);
};

// Serves what Set() last stored. Thread-safe.
class FakeGpuSource : public GpuSource {
 public:
  explicit FakeGpuSource(std::vector<GpuMetrics> gpus = {}) : gpus_(std::move(gpus)) {}
  void Set(std::vector<GpuMetrics> gpus);
  // Makes the next Sample calls fail with `status` (OK clears it).
  void SetError(Status status);
  int DeviceCount() const override;
  Status Sample(std::vector<GpuMetrics>* out) override;
  std::string Describe() const override;
  int64_t sample_calls() const;

 private:
  mutable Mutex mu_;
  std::vector<GpuMetrics> gpus_ TS_GUARDED_BY(mu_);
  Status error_ TS_GUARDED_BY(mu_);
  int64_t calls_ TS_GUARDED_BY(mu_) = 0;
};

}  // namespace trainscope
