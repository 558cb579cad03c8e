/* A stand-in for NVIDIA's libnvidia-ml.so.1, for tests on machines without a GPU: it exports the
 * NVML functions trainscope's sampler resolves with dlsym (src/profiler/nvml_api.h), with NVML's
 * C signatures, and reports GPUs whose readings the environment sets:
 *
 *   NVML_STANDIN_GPUS         number of GPUs (default 2)
 *   NVML_STANDIN_UTIL         utilization percent of every GPU (default 3)
 *   NVML_STANDIN_MEM_MB       memory used per GPU at the first reading, MiB (default 1000)
 *   NVML_STANDIN_MEM_GROW_MB  MiB added to it at every reading (default 0)
 *   NVML_STANDIN_FAIL_INIT    if set, nvmlInit_v2 fails with NVML_ERROR_DRIVER_NOT_LOADED (9)
 *
 * The test compiles it (cc -shared -fPIC) into a folder named by LD_LIBRARY_PATH, so the
 * sampler's dlopen("libnvidia-ml.so.1") takes the same path as on a GPU machine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct {
  unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

static struct nvmlDevice_st {
  int index;
  unsigned long long readings;
} devices[16];

static long env_long(const char* name, long fallback) {
  const char* v = getenv(name);
  return v && *v ? strtol(v, NULL, 10) : fallback;
}

static int gpu_count(void) {
  long n = env_long("NVML_STANDIN_GPUS", 2);
  return n < 0 ? 0 : n > 16 ? 16 : (int)n;
}

int nvmlInit_v2(void) {
  if (getenv("NVML_STANDIN_FAIL_INIT")) return 9;
  for (int i = 0; i < 16; ++i) devices[i].index = i;
  return 0;
}
int nvmlShutdown(void) { return 0; }
const char* nvmlErrorString(int rc) { return rc == 9 ? "Driver Not Loaded" : "Unknown Error"; }
int nvmlSystemGetDriverVersion(char* buf, unsigned len) {
  snprintf(buf, len, "%s", "999.99-standin");
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = (unsigned)gpu_count();
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* d) {
  if ((int)i >= gpu_count()) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  *d = &devices[i];
  return 0;
}
int nvmlDeviceGetName(nvmlDevice_t d, char* buf, unsigned len) {
  snprintf(buf, len, "Stand-in GPU %d", d->index);
  return 0;
}
int nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  (void)d;
  u->gpu = (unsigned)env_long("NVML_STANDIN_UTIL", 3);
  u->memory = u->gpu / 2;
  return 0;
}
int nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  const unsigned long long mib = 1ull << 20;
  m->total = 16000 * mib;
  m->used = ((unsigned long long)env_long("NVML_STANDIN_MEM_MB", 1000) +
             d->readings * (unsigned long long)env_long("NVML_STANDIN_MEM_GROW_MB", 0)) *
            mib;
  if (m->used > m->total) m->used = m->total;
  m->free = m->total - m->used;
  d->readings++;
  return 0;
}
int nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned* t) {
  (void)sensor;
  *t = 40u + (unsigned)d->index;
  return 0;
}
int nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned* mw) {
  *mw = 70000u + 1000u * (unsigned)d->index;
  return 0;
}
int nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned* mhz) {
  (void)d;
  *mhz = type == 1 ? 1410u : 1215u;
  return 0;
}
