// The part of NVIDIA's NVML C API the sampler uses, declared here (the ABI is C and stable; no
// header or library is needed at build time), and a GpuSource over a table of its functions.
// NvmlGpuSource::Open fills the table with dlsym; tests fill it with fakes. Private.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "trainscope/gpu_source.h"

namespace trainscope::nvml {

// NVML's own C names, kept so that each declaration can be checked against nvml.h.
// NOLINTBEGIN(readability-identifier-naming)
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef int nvmlReturn_t;  // 0 = NVML_SUCCESS
inline constexpr nvmlReturn_t kSuccess = 0;
inline constexpr nvmlReturn_t kErrorNotSupported = 3;
inline constexpr unsigned kDeviceNameBufferSize = 96;     // NVML_DEVICE_NAME_V2_BUFFER_SIZE
inline constexpr unsigned kDriverVersionBufferSize = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
inline constexpr int kTemperatureGpu = 0;                 // NVML_TEMPERATURE_GPU
inline constexpr int kClockSm = 1;                        // NVML_CLOCK_SM
inline constexpr int kClockMem = 2;                       // NVML_CLOCK_MEM

struct nvmlUtilization_t {
  unsigned int gpu;     // percent
  unsigned int memory;  // percent of time the memory controller was busy
};
struct nvmlMemory_t {                    // v1
  unsigned long long total, free, used;  // bytes
};

// Function table. Any entry may be null: that metric is then not supported.
struct Api {
  nvmlReturn_t (*Init)() = nullptr;                                   // nvmlInit_v2
  nvmlReturn_t (*Shutdown)() = nullptr;                               // nvmlShutdown
  const char* (*ErrorString)(nvmlReturn_t) = nullptr;                 // nvmlErrorString
  nvmlReturn_t (*SystemGetDriverVersion)(char*, unsigned) = nullptr;  // nvmlSystemGetDriverVersion
  nvmlReturn_t (*DeviceGetCount)(unsigned*) = nullptr;                // nvmlDeviceGetCount_v2
  nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned, nvmlDevice_t*) = nullptr;  // ..._v2
  nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*DeviceGetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*DeviceGetTemperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetPowerUsage)(nvmlDevice_t, unsigned*) = nullptr;      // milliwatts
  nvmlReturn_t (*DeviceGetClockInfo)(nvmlDevice_t, int, unsigned*) = nullptr;  // MHz
};
// NOLINTEND(readability-identifier-naming)

// Fills an Api from a symbol resolver (dlsym over a handle, or a test's table).
Api ResolveApi(const std::function<void*(const char* symbol)>& resolve);

// Initialises NVML through `api` and returns a source over it. `on_close` runs after
// nvmlShutdown when the source is destroyed (dlclose). Errors: Unavailable when Init is missing or
// fails, with NVML's error string.
Result<std::unique_ptr<GpuSource>> OpenWithApi(const Api& api, std::function<void()> on_close);

}  // namespace trainscope::nvml
