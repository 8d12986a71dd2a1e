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
  int nodeDevices;            // GPUs of the server this process runs on
  int devices;                // the ones it sees (CUDA_VISIBLE_DEVICES)
  int physical[kMaxDevices];  // visible device -> physical device of the server
  int server;                 // -1: unknown (a plain run, gpusim-launch)
  int gpusPerServer;
};

// Stable fake UUID of physical device `phys` of server `server` (distinct across the cluster).
void FakeUuid(int server, int phys, unsigned char out[16]) {
  for (int i = 0; i < 16; ++i) out[i] = (unsigned char)(0x47 + i * 7 + phys + (i == 15 ? server * 13 : 0));
}

// The fake UUID as CUDA_VISIBLE_DEVICES and nvidia-smi write it ("GPU-xxxxxxxx-xxxx-...").
std::string UuidString(int server, int phys) {
  unsigned char b[16];
  FakeUuid(server, phys, b);
  char s[48];
  snprintf(s, sizeof s, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
           b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return s;
}

// One CUDA_VISIBLE_DEVICES entry: an index, or a UUID (or a unique prefix of one). -1 if it
// names no device of the node.
int ParseVisibleEntry(const std::string& e, int server, int nodeDevices) {
  if (e.empty()) return -1;
  if (e.compare(0, 4, "GPU-") == 0) {
    int found = -1;
    for (int d = 0; d < nodeDevices; ++d)
      if (UuidString(server, d).compare(0, e.size(), e) == 0) {
        if (found >= 0) return -1;  // ambiguous prefix
        found = d;
      }
    return found;
  }
  char* end = nullptr;
  long v = strtol(e.c_str(), &end, 10);
  if (*end || v < 0 || v >= nodeDevices) return -1;
  return (int)v;
}

int EnvInt(const char* name, int dflt) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

// The rank an MPI launcher gave this process (-1: none), and the job's size.
int MpiRank(int* size) {
  for (const auto& [r, n] : {std::pair<const char*, const char*>{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                             {"PMIX_RANK", "PMIX_SIZE"},
                             {"PMI_RANK", "PMI_SIZE"}}) {
    if (getenv(r) && getenv(n)) {
      *size = EnvInt(n, 0);
      return EnvInt(r, -1);
    }
  }
  return -1;
}

// The ranks an MPI launcher started (GPUSIM_SERVERS set, no GPUSIM_SERVER of their own) are
// placed on the servers by their MPI rank, block by block as mpirun places them on nodes by
// default: the server, and the rank's number and count among its server's ranks.
bool MpiPlacement(int* server, int* localRank, int* localSize) {
  if (EnvInt("GPUSIM_SERVER", -1) >= 0) return false;
  const int servers = EnvInt("GPUSIM_SERVERS", 0);
  if (servers <= 0) return false;
  int size = 0;
  const int rank = MpiRank(&size);
  if (rank < 0 || size <= 0 || rank >= size) return false;
  const int perServer = (size + servers - 1) / servers;
  *server = rank / perServer;
  *localRank = rank % perServer;
  *localSize = size - *server * perServer < perServer ? size - *server * perServer : perServer;
  return true;
}

// The simulated server of this process: GPUSIM_SERVER from gpusim run/record, or its MPI
// placement.
int ServerFromEnv(int* gpusPerServer) {
  *gpusPerServer = EnvInt("GPUSIM_GPUS_PER_SERVER", 0);
  int server = EnvInt("GPUSIM_SERVER", -1);
  if (server >= 0) return server;
  int local = 0, localSize = 0;
  return MpiPlacement(&server, &local, &localSize) ? server : -1;
}

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
  c.nodeDevices = 8;
  if (const char* n = getenv("GPUSIM_DEVICES")) {
    int v = atoi(n);
    if (v >= 1 && v <= kMaxDevices) c.nodeDevices = v;
  }
  c.server = ServerFromEnv(&c.gpusPerServer);
  if (c.gpusPerServer <= 0) c.gpusPerServer = c.nodeDevices;
  for (int d = 0; d < kMaxDevices; ++d) c.physical[d] = d;
  c.devices = c.nodeDevices;
  // Programs pinned to GPUs the usual way see only those, renumbered from 0 in the order
  // listed. As in CUDA, the list ends at the first entry that names no device (or repeats
  // one), and an empty list hides every GPU.
  if (const char* vis = getenv("CUDA_VISIBLE_DEVICES")) {
    c.devices = 0;
    std::string list = vis, entry;
    bool used[kMaxDevices] = {};
    for (size_t i = 0; i <= list.size(); ++i) {
      if (i < list.size() && list[i] != ',') {
        if (list[i] != ' ') entry += list[i];
        continue;
      }
      int phys = ParseVisibleEntry(entry, c.server < 0 ? 0 : c.server, c.nodeDevices);
      if (phys < 0 || used[phys]) break;
      used[phys] = true;
      c.physical[c.devices++] = phys;
      entry.clear();
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
int PhysicalDevice(int device) { return device >= 0 && device < kMaxDevices ? Cfg().physical[device] : device; }
int ServerIndex() { return Cfg().server; }
int GlobalRank(int device) {
  const Config& c = Cfg();
  if (c.server < 0 || device < 0 || device >= c.devices) return -1;
  return c.server * c.gpusPerServer + c.physical[device];
}
void DeviceUuid(int device, char out[16]) {
  FakeUuid(Cfg().server < 0 ? 0 : Cfg().server, PhysicalDevice(device), (unsigned char*)out);
}
int CurrentDevice() { return t_device; }
void SetCurrentDevice(int device) { t_device = device; }

void WarnOnce(const char* what) {
  static std::mutex mu;
  static std::set<std::string>* seen = new std::set<std::string>;  // never freed: used at exit
  std::lock_guard<std::mutex> lock(mu);
  if (seen->insert(what).second) fprintf(stderr, "gpusim: %s\n", what);
}

int JobProcess() {
  static const int process = [] {
    int size = 0;
    const int mpi = MpiRank(&size);  // mpirun's ranks inherit the GPUSIM_RANK of mpirun itself
    return mpi >= 0 ? mpi : EnvInt("GPUSIM_RANK", -1);
  }();
  return process;
}

}  // namespace gpusim

// libgpusim-node.so asks where an MPI launcher's rank runs (shim/src/node.cc).
extern "C" __attribute__((visibility("default"))) int gpusim_mpi_placement(int* server, int* localRank,
                                                                          int* localSize) {
  return gpusim::MpiPlacement(server, localRank, localSize) ? 1 : 0;
}
