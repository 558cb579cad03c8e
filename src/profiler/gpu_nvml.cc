// NvmlGpuSource: NVML loaded with dlopen; see nvml_api.h.
#include <dlfcn.h>

#include "profiler/nvml_api.h"

namespace trainscope {
namespace nvml {
namespace {

class NvmlSource final : public GpuSource {
 public:
  NvmlSource(Api api, std::function<void()> on_close, std::string driver,
             std::vector<nvmlDevice_t> devices)
      : api_(api),
        on_close_(std::move(on_close)),
        driver_(std::move(driver)),
        devices_(std::move(devices)) {
    names_.resize(devices_.size());
    for (size_t i = 0; i < devices_.size(); ++i) {
      char name[kDeviceNameBufferSize] = {0};
      if (api_.DeviceGetName && api_.DeviceGetName(devices_[i], name, sizeof(name)) == kSuccess) {
        names_[i] = name;
      }
    }
  }
  ~NvmlSource() override {
    if (api_.Shutdown) api_.Shutdown();
    if (on_close_) on_close_();
  }

  int DeviceCount() const override { return static_cast<int>(devices_.size()); }

  Status Sample(std::vector<GpuMetrics>* out) override {
    out->resize(devices_.size());
    for (size_t i = 0; i < devices_.size(); ++i) {
      nvmlDevice_t d = devices_[i];
      GpuMetrics& m = (*out)[i];
      m = GpuMetrics();
      m.index = static_cast<int>(i);
      m.name = names_[i];
      if (api_.DeviceGetUtilizationRates) {
        nvmlUtilization_t u{};
        if (api_.DeviceGetUtilizationRates(d, &u) == kSuccess) {
          m.utilization_percent = u.gpu;
          m.memory_bandwidth_percent = u.memory;
        }
      }
      if (api_.DeviceGetMemoryInfo) {
        nvmlMemory_t mem{};
        if (api_.DeviceGetMemoryInfo(d, &mem) == kSuccess) {
          m.memory_used_bytes = mem.used;
          m.memory_total_bytes = mem.total;
        }
      }
      unsigned v = 0;
      if (api_.DeviceGetTemperature &&
          api_.DeviceGetTemperature(d, kTemperatureGpu, &v) == kSuccess) {
        m.temperature_celsius = v;
      }
      if (api_.DeviceGetPowerUsage && api_.DeviceGetPowerUsage(d, &v) == kSuccess) {
        m.power_watts = v / 1000.0;
      }
      if (api_.DeviceGetClockInfo && api_.DeviceGetClockInfo(d, kClockSm, &v) == kSuccess) {
        m.sm_clock_mhz = v;
      }
      if (api_.DeviceGetClockInfo && api_.DeviceGetClockInfo(d, kClockMem, &v) == kSuccess) {
        m.memory_clock_mhz = v;
      }
    }
    return Status::OK();
  }

  std::string Describe() const override {
    std::string s = "NVML";
    if (!driver_.empty()) {
      s += " (driver " + driver_ + ", ";
    } else {
      s += " (";
    }
    return s + std::to_string(devices_.size()) + " GPUs)";
  }

 private:
  Api api_;
  std::function<void()> on_close_;
  std::string driver_;
  std::vector<nvmlDevice_t> devices_;
  std::vector<std::string> names_;
};

std::string ErrorText(const Api& api, nvmlReturn_t rc) {
  std::string s = "NVML error " + std::to_string(rc);
  if (api.ErrorString) {
    const char* msg = api.ErrorString(rc);
    if (msg) s += " (" + std::string(msg) + ")";
  }
  return s;
}

}  // namespace

Api ResolveApi(const std::function<void*(const char*)>& resolve) {
  Api a;
  auto get = [&](auto** fn, const char* name) {
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(resolve(name));
  };
  get(&a.Init, "nvmlInit_v2");
  get(&a.Shutdown, "nvmlShutdown");
  get(&a.ErrorString, "nvmlErrorString");
  get(&a.SystemGetDriverVersion, "nvmlSystemGetDriverVersion");
  get(&a.DeviceGetCount, "nvmlDeviceGetCount_v2");
  get(&a.DeviceGetHandleByIndex, "nvmlDeviceGetHandleByIndex_v2");
  get(&a.DeviceGetName, "nvmlDeviceGetName");
  get(&a.DeviceGetUtilizationRates, "nvmlDeviceGetUtilizationRates");
  get(&a.DeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo");
  get(&a.DeviceGetTemperature, "nvmlDeviceGetTemperature");
  get(&a.DeviceGetPowerUsage, "nvmlDeviceGetPowerUsage");
  get(&a.DeviceGetClockInfo, "nvmlDeviceGetClockInfo");
  return a;
}

Result<std::unique_ptr<GpuSource>> OpenWithApi(const Api& api, std::function<void()> on_close) {
  if (api.Init == nullptr) {
    if (on_close) on_close();
    return Status::Unavailable("NVML library has no nvmlInit_v2: GPU metrics off");
  }
  nvmlReturn_t rc = api.Init();
  if (rc != kSuccess) {
    Status s =
        Status::Unavailable("nvmlInit_v2 failed: " + ErrorText(api, rc) + ": GPU metrics off");
    if (on_close) on_close();
    return s;
  }
  std::string driver;
  if (api.SystemGetDriverVersion) {
    char buf[kDriverVersionBufferSize] = {0};
    if (api.SystemGetDriverVersion(buf, sizeof(buf)) == kSuccess) driver = buf;
  }
  std::vector<nvmlDevice_t> devices;
  unsigned count = 0;
  if (api.DeviceGetCount && api.DeviceGetCount(&count) == kSuccess && api.DeviceGetHandleByIndex) {
    for (unsigned i = 0; i < count; ++i) {
      nvmlDevice_t d = nullptr;
      if (api.DeviceGetHandleByIndex(i, &d) == kSuccess) devices.push_back(d);
    }
  }
  return std::unique_ptr<GpuSource>(
      new NvmlSource(api, std::move(on_close), std::move(driver), std::move(devices)));
}

}  // namespace nvml

Result<std::unique_ptr<GpuSource>> NvmlGpuSource::Open(const std::string& library) {
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return Status::NotFound("no NVIDIA GPU found (" + library + " not loadable): GPU metrics off");
  }
  nvml::Api api = nvml::ResolveApi([handle](const char* name) { return ::dlsym(handle, name); });
  return nvml::OpenWithApi(api, [handle] { ::dlclose(handle); });
}

}  // namespace trainscope
