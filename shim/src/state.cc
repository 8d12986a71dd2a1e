// Process-wide configuration: which GPU the shim pretends to be, how many, the clock.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <set>
#include <string>

#include "cudart-internal.h"

namespace gpusim {
namespace {

// Datasheet numbers of the presets; names match what nvidia-smi / cudaGetDeviceProperties print.
const GpuConfig kPresets[] = {
    {"h100-sxm", "NVIDIA H100 80GB HBM3", 80ull << 30, 132, 9, 0, 50 << 20, 5120, 228 << 10, 227 << 10, 2048, 32},
    {"h200", "NVIDIA H200", 141ull << 30, 132, 9, 0, 50 << 20, 6144, 228 << 10, 227 << 10, 2048, 32},
    {"a100-sxm", "NVIDIA A100-SXM4-80GB", 80ull << 30, 108, 8, 0, 40 << 20, 5120, 164 << 10, 163 << 10, 2048, 32},
    {"a100-40gb", "NVIDIA A100-SXM4-40GB", 40ull << 30, 108, 8, 0, 40 << 20, 5120, 164 << 10, 163 << 10, 2048, 32},
};

struct Config {
  GpuConfig gpu;
  int devices;
};

Config LoadConfig() {
  Config c;
  c.gpu = kPresets[0];
  const char* want = getenv("GPUSIM_GPU");
  if (want && *want) {
    bool found = false;
    for (const GpuConfig& p : kPresets) {
      // Accept the short aliases used by gpusim's GpuSpec presets ("h100", "a100").
      if (strcmp(want, p.key) == 0 || (strncmp(want, p.key, strlen(want)) == 0 && p.key[strlen(want)] == '-')) {
        c.gpu = p;
        found = true;
        break;
      }
    }
    if (!found) fprintf(stderr, "gpusim: unknown GPUSIM_GPU=%s, using %s\n", want, c.gpu.key);
  }
  if (const char* mem = getenv("GPUSIM_GPU_MEM_GIB")) {
    long gib = atol(mem);
    if (gib > 0) c.gpu.memBytes = (size_t)gib << 30;
  }
  c.devices = 8;
  if (const char* n = getenv("GPUSIM_DEVICES")) {
    int v = atoi(n);
    if (v >= 1 && v <= kMaxDevices) c.devices = v;
  }
  // Programs pinned to GPUs the usual way see only those (renumbered from 0).
  if (const char* vis = getenv("CUDA_VISIBLE_DEVICES")) {
    if (*vis) {
      int n = 1;
      for (const char* p = vis; *p; ++p) n += *p == ',';
      if (n < c.devices) c.devices = n;
    }
  }
  return c;
}

const Config& Cfg() {
  static const Config c = LoadConfig();
  return c;
}

thread_local int t_device = 0;

}  // namespace

const GpuConfig& Gpu() { return Cfg().gpu; }
int DeviceCount() { return Cfg().devices; }
int CurrentDevice() { return t_device; }
void SetCurrentDevice(int device) { t_device = device; }


void WarnOnce(const char* what) {
  static std::mutex mu;
  static std::set<std::string>* seen = new std::set<std::string>;  // never freed: used at exit
  std::lock_guard<std::mutex> lock(mu);
  if (seen->insert(what).second) fprintf(stderr, "gpusim: %s\n", what);
}

}  // namespace gpusim
