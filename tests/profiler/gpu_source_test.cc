// NVML source over a fake function table (the code path a real driver takes, minus dlopen), the
// "no NVML" path, and FakeGpuSource.
#include "trainscope/gpu_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

#include "profiler/nvml_api.h"

namespace trainscope {
namespace {

using nvml::nvmlDevice_t;
using nvml::nvmlMemory_t;
using nvml::nvmlReturn_t;
using nvml::nvmlUtilization_t;
using ::testing::HasSubstr;

// A fake driver with two GPUs. Device handles are pointers into this array.
struct FakeDriver {
  static inline int inits = 0, shutdowns = 0;
  static inline nvmlReturn_t init_result = 0;
  static inline char devices[2];
  static int Index(nvmlDevice_t d) {
    return static_cast<int>(reinterpret_cast<char*>(d) - devices);
  }

  static nvmlReturn_t Init() {
    ++inits;
    return init_result;
  }
  static nvmlReturn_t Shutdown() {
    ++shutdowns;
    return 0;
  }
  static const char* ErrorString(nvmlReturn_t rc) { return rc == 9 ? "Driver Not Loaded" : "?"; }
  static nvmlReturn_t DriverVersion(char* buf, unsigned n) {
    std::snprintf(buf, n, "550.54.15");
    return 0;
  }
  static nvmlReturn_t Count(unsigned* n) {
    *n = 2;
    return 0;
  }
  static nvmlReturn_t Handle(unsigned i, nvmlDevice_t* d) {
    if (i >= 2) return 2;
    *d = reinterpret_cast<nvmlDevice_t>(&devices[i]);
    return 0;
  }
  static nvmlReturn_t Name(nvmlDevice_t d, char* buf, unsigned n) {
    std::snprintf(buf, n, "Fake GPU %d", Index(d));
    return 0;
  }
  static nvmlReturn_t Util(nvmlDevice_t d, nvmlUtilization_t* u) {
    u->gpu = Index(d) == 0 ? 93 : 7;
    u->memory = 41;
    return 0;
  }
  static nvmlReturn_t Memory(nvmlDevice_t d, nvmlMemory_t* m) {
    if (Index(d) == 1) return nvml::kErrorNotSupported;
    m->total = 80ull << 30;
    m->used = 60ull << 30;
    m->free = 20ull << 30;
    return 0;
  }
  static nvmlReturn_t Temp(nvmlDevice_t, int sensor, unsigned* t) {
    if (sensor != nvml::kTemperatureGpu) return 2;
    *t = 67;
    return 0;
  }
  static nvmlReturn_t Clock(nvmlDevice_t, int type, unsigned* mhz) {
    *mhz = type == nvml::kClockSm ? 1755 : type == nvml::kClockMem ? 2619 : 0;
    return 0;
  }
};

std::map<std::string, void*> FakeSymbols() {
  return {
      {"nvmlInit_v2", reinterpret_cast<void*>(&FakeDriver::Init)},
      {"nvmlShutdown", reinterpret_cast<void*>(&FakeDriver::Shutdown)},
      {"nvmlErrorString", reinterpret_cast<void*>(&FakeDriver::ErrorString)},
      {"nvmlSystemGetDriverVersion", reinterpret_cast<void*>(&FakeDriver::DriverVersion)},
      {"nvmlDeviceGetCount_v2", reinterpret_cast<void*>(&FakeDriver::Count)},
      {"nvmlDeviceGetHandleByIndex_v2", reinterpret_cast<void*>(&FakeDriver::Handle)},
      {"nvmlDeviceGetName", reinterpret_cast<void*>(&FakeDriver::Name)},
      {"nvmlDeviceGetUtilizationRates", reinterpret_cast<void*>(&FakeDriver::Util)},
      {"nvmlDeviceGetMemoryInfo", reinterpret_cast<void*>(&FakeDriver::Memory)},
      {"nvmlDeviceGetTemperature", reinterpret_cast<void*>(&FakeDriver::Temp)},
      // nvmlDeviceGetPowerUsage missing: an old or restricted driver.
      {"nvmlDeviceGetClockInfo", reinterpret_cast<void*>(&FakeDriver::Clock)},
  };
}

nvml::Api ApiFrom(std::map<std::string, void*> symbols) {
  return nvml::ResolveApi([&symbols](const char* name) -> void* {
    auto it = symbols.find(name);
    return it == symbols.end() ? nullptr : it->second;
  });
}

TEST(NvmlGpuSourceTest, ReadsEveryMetricAndTreatsMissingOnesAsUnsupported) {
  FakeDriver::init_result = 0;
  FakeDriver::inits = FakeDriver::shutdowns = 0;
  bool closed = false;
  {
    auto src = nvml::OpenWithApi(ApiFrom(FakeSymbols()), [&] { closed = true; });
    ASSERT_TRUE(src.ok()) << src.status().ToString();
    EXPECT_EQ((*src)->DeviceCount(), 2);
    EXPECT_EQ((*src)->Describe(), "NVML (driver 550.54.15, 2 GPUs)");
    std::vector<GpuMetrics> g;
    ASSERT_TRUE((*src)->Sample(&g).ok());
    ASSERT_EQ(g.size(), 2u);
    EXPECT_EQ(g[0].index, 0);
    EXPECT_EQ(g[0].name, "Fake GPU 0");
    EXPECT_EQ(g[0].utilization_percent, 93);
    EXPECT_EQ(g[0].memory_bandwidth_percent, 41);
    EXPECT_EQ(g[0].memory_used_bytes, 60ull << 30);
    EXPECT_EQ(g[0].memory_total_bytes, 80ull << 30);
    EXPECT_EQ(g[0].temperature_celsius, 67);
    EXPECT_EQ(g[0].sm_clock_mhz, 1755);
    EXPECT_EQ(g[0].memory_clock_mhz, 2619);
    EXPECT_FALSE(g[0].power_watts.has_value());  // symbol missing
    EXPECT_EQ(g[1].index, 1);
    EXPECT_EQ(g[1].utilization_percent, 7);
    EXPECT_FALSE(g[1].memory_used_bytes.has_value());  // NOT_SUPPORTED for that device
    EXPECT_EQ(FakeDriver::inits, 1);
  }
  EXPECT_EQ(FakeDriver::shutdowns, 1);
  EXPECT_TRUE(closed);
}

TEST(NvmlGpuSourceTest, InitFailureIsUnavailableWithNvmlsWords) {
  FakeDriver::init_result = 9;
  bool closed = false;
  auto src = nvml::OpenWithApi(ApiFrom(FakeSymbols()), [&] { closed = true; });
  FakeDriver::init_result = 0;
  ASSERT_FALSE(src.ok());
  EXPECT_EQ(src.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(src.status().message(), HasSubstr("Driver Not Loaded"));
  EXPECT_THAT(src.status().message(), HasSubstr("GPU metrics off"));
  EXPECT_TRUE(closed);  // the library is let go
}

TEST(NvmlGpuSourceTest, LibraryWithoutInitIsUnavailable) {
  auto symbols = FakeSymbols();
  symbols.erase("nvmlInit_v2");
  auto src = nvml::OpenWithApi(ApiFrom(symbols), nullptr);
  ASSERT_FALSE(src.ok());
  EXPECT_THAT(src.status().message(), HasSubstr("nvmlInit_v2"));
}

TEST(NvmlGpuSourceTest, OnlyInitPresentGivesZeroGpusNotAnError) {
  auto src = nvml::OpenWithApi(
      ApiFrom({{"nvmlInit_v2", reinterpret_cast<void*>(&FakeDriver::Init)}}), nullptr);
  ASSERT_TRUE(src.ok());
  EXPECT_EQ((*src)->DeviceCount(), 0);
  std::vector<GpuMetrics> g(3);
  EXPECT_TRUE((*src)->Sample(&g).ok());
  EXPECT_TRUE(g.empty());
}

TEST(NvmlGpuSourceTest, UnloadableLibraryIsNotFoundWithTheMessageUsersSee) {
  auto src = NvmlGpuSource::Open("libnvidia-ml-does-not-exist.so.1");
  ASSERT_FALSE(src.ok());
  EXPECT_EQ(src.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(src.status().message(),
            "no NVIDIA GPU found (libnvidia-ml-does-not-exist.so.1 not loadable): GPU metrics off");
}

TEST(FakeGpuSourceTest, ServesWhatWasSetAndErrorsOnDemand) {
  FakeGpuSource fake;
  EXPECT_EQ(fake.DeviceCount(), 0);
  GpuMetrics m;
  m.index = 3;
  m.utilization_percent = 12;
  fake.Set({m});
  std::vector<GpuMetrics> out;
  ASSERT_TRUE(fake.Sample(&out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].index, 3);
  fake.SetError(Status::Unavailable("boom"));
  EXPECT_FALSE(fake.Sample(&out).ok());
  fake.SetError(Status::OK());
  EXPECT_TRUE(fake.Sample(&out).ok());
  EXPECT_EQ(fake.sample_calls(), 3);
  EXPECT_EQ(fake.Describe(), "fake (1 GPUs)");
}

}  // namespace
}  // namespace trainscope
