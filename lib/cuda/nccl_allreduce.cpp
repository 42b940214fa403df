// nccl_all_reduce (lib/backend/nccl_collective.h): NCCL's all-reduce of the ranks' partials across
// the GPUs of this process, so that the simulated orders can be checked against the real one and
// a sharded GEMM audited with the summation NCCL actually does.
//
// One process drives GPUs 0 .. n-1 with one communicator each (ncclCommInitAll) and one stream
// per GPU; the n ncclAllReduce calls are fused in one group, as a single-process multi-GPU program
// must do. NCCL reads several of its settings once per process (its parameters are cached on first
// use), so the first call's settings hold for the process: a later call with other settings is
// refused rather than silently run with the old ones.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "lib/backend/nccl_collective.h"
#include "lib/core/error.h"

namespace nvdet {
namespace {

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw_runtime_error(std::string("the 'nccl' all-reduce failed: ") + what + ": " +
                        cudaGetErrorString(e));
}

void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess)
    throw_runtime_error(std::string("the 'nccl' all-reduce failed: ") + what + ": " +
                        ncclGetErrorString(r));
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::kBF16: return ncclBfloat16;
    case DType::kFP16: return ncclFloat16;
    case DType::kFP32: return ncclFloat32;
  }
  return ncclFloat32;
}

std::string settings_text(const NcclSettings& s) {
  const auto or_default = [](const std::string& v) { return v.empty() ? std::string("default") : v; };
  const auto channels = [](int c) { return c > 0 ? std::to_string(c) : std::string("default"); };
  return "NCCL_ALGO=" + or_default(s.algo) + " NCCL_PROTO=" + or_default(s.proto) +
         " NCCL_MIN_NCHANNELS=" + channels(s.min_channels) +
         " NCCL_MAX_NCHANNELS=" + channels(s.max_channels) + " NCCL_NVLS_ENABLE=0";
}

void export_setting(const char* name, const std::string& value) {
  if (value.empty())
    unsetenv(name);
  else
    setenv(name, value.c_str(), 1);
}

// The process's communicators: created by the first call, kept until exit.
struct Communicators {
  std::mutex mutex;
  int ranks = 0;
  std::string settings;
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
};
Communicators& communicators() {
  static Communicators* c = new Communicators();  // never destroyed: NCCL may outlive statics
  return *c;
}

void ensure_communicators(Communicators& c, int ranks, const NcclSettings& s) {
  const std::string text = settings_text(s);
  if (!c.comms.empty()) {
    if (c.ranks == ranks && c.settings == text) return;
    throw_runtime_error("the 'nccl' all-reduce was set up for " + std::to_string(c.ranks) +
                        " GPUs with " + c.settings + "; NCCL keeps its settings for the whole "
                        "process, so " + std::to_string(ranks) + " GPUs with " + text +
                        " need a run of their own");
  }
  // A machine without a usable device is a runtime condition like too few GPUs: one sentence
  // that names the all-reduce, not the CUDA call that found it out.
  std::string why_not;
  const int devices = nccl_device_count(&why_not);
  if (devices < ranks)
    throw_runtime_error("the 'nccl' all-reduce of tp " + std::to_string(ranks) + " needs " +
                        std::to_string(ranks) + " GPUs, this machine has " +
                        std::to_string(devices) + (why_not.empty() ? "" : " (" + why_not + ")"));
  // NVLink SHARP (NVLS) would reduce inside the switch, in an order and precision that nvdet does
  // not simulate, and would allocate multicast objects shared by the whole machine: never on.
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  export_setting("NCCL_ALGO", s.algo);
  export_setting("NCCL_PROTO", s.proto);
  export_setting("NCCL_MIN_NCHANNELS", s.min_channels > 0 ? std::to_string(s.min_channels) : "");
  export_setting("NCCL_MAX_NCHANNELS", s.max_channels > 0 ? std::to_string(s.max_channels) : "");
  std::vector<int> list(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) list[r] = r;
  c.comms.assign(static_cast<size_t>(ranks), nullptr);
  check_nccl(ncclCommInitAll(c.comms.data(), ranks, list.data()), "ncclCommInitAll");
  c.streams.assign(static_cast<size_t>(ranks), nullptr);
  for (int r = 0; r < ranks; ++r) {
    check_cuda(cudaSetDevice(r), "cudaSetDevice");
    check_cuda(cudaStreamCreateWithFlags(&c.streams[r], cudaStreamNonBlocking), "cudaStreamCreate");
  }
  c.ranks = ranks;
  c.settings = text;
}

// Device buffers of one call, freed on every path.
struct RankBuffers {
  std::vector<void*> send, recv;
  ~RankBuffers() {
    for (size_t r = 0; r < send.size(); ++r) {
      cudaSetDevice(static_cast<int>(r));
      cudaFree(send[r]);
      cudaFree(recv[r]);
    }
  }
};

// Puts back the device the backends use (the calls above move it).
struct DeviceRestore {
  int device = 0;
  DeviceRestore() { cudaGetDevice(&device); }
  ~DeviceRestore() { cudaSetDevice(device); }
};

}  // namespace

int nccl_device_count(std::string* why_not) {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess) {
    if (why_not) *why_not = std::string("no CUDA device answers: ") + cudaGetErrorString(e);
    return 0;
  }
  if (devices == 0 && why_not) *why_not = "no CUDA device is present";
  return devices;
}

HostTensor nccl_all_reduce(const std::vector<const HostTensor*>& ranks, const NcclSettings& settings,
                           RunNotes* notes) {
  if (ranks.empty() || ranks.front() == nullptr)
    throw_input_error("an all-reduce needs at least one rank's tensor");
  const HostTensor& first = *ranks.front();
  for (const HostTensor* t : ranks)
    if (t == nullptr || t->dtype() != first.dtype() || t->shape() != first.shape())
      throw_input_error("every rank of an all-reduce must hold a tensor of shape " +
                        first.shape_string() + " and one dtype");
  const int n = static_cast<int>(ranks.size());
  Communicators& c = communicators();
  std::lock_guard<std::mutex> lock(c.mutex);
  const DeviceRestore restore;
  ensure_communicators(c, n, settings);

  const size_t bytes = first.nbytes();
  RankBuffers buffers;
  buffers.send.assign(static_cast<size_t>(n), nullptr);
  buffers.recv.assign(static_cast<size_t>(n), nullptr);
  for (int r = 0; r < n; ++r) {
    check_cuda(cudaSetDevice(r), "cudaSetDevice");
    check_cuda(cudaMalloc(&buffers.send[r], bytes), "cudaMalloc");
    check_cuda(cudaMalloc(&buffers.recv[r], bytes), "cudaMalloc");
    check_cuda(cudaMemcpyAsync(buffers.send[r], ranks[r]->data(), bytes, cudaMemcpyHostToDevice,
                               c.streams[r]),
               "cudaMemcpyAsync");
  }
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (int r = 0; r < n; ++r) {
    check_nccl(ncclAllReduce(buffers.send[r], buffers.recv[r], static_cast<size_t>(first.numel()),
                             nccl_type(first.dtype()), ncclSum, c.comms[r], c.streams[r]),
               "ncclAllReduce");
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  std::vector<HostTensor> results;
  for (int r = 0; r < n; ++r) {
    check_cuda(cudaSetDevice(r), "cudaSetDevice");
    HostTensor out(first.dtype(), first.shape());
    check_cuda(cudaMemcpyAsync(out.mutable_data(), buffers.recv[r], bytes, cudaMemcpyDeviceToHost,
                               c.streams[r]),
               "cudaMemcpyAsync");
    check_cuda(cudaStreamSynchronize(c.streams[r]), "cudaStreamSynchronize");
    results.push_back(std::move(out));
  }
  bool agree = true;
  for (int r = 1; r < n; ++r) agree &= std::memcmp(results[r].data(), results[0].data(), bytes) == 0;
  if (notes) {
    int version = 0;
    ncclGetVersion(&version);
    (*notes)["nccl_version"] = std::to_string(version);
    (*notes)["nccl_settings"] = c.settings;
    (*notes)["nccl_ranks_agree"] = agree ? "yes" : "no";
  }
  return std::move(results[0]);
}

}  // namespace nvdet
