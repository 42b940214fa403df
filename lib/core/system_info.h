#pragma once
// The device and software a run happened on. Recorded in every report and manifest, printed by
// `nvdet info`, and compared by `nvdet audit --verify` to name what changed between two runs.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nvdet {

struct GpuInfo {
  int index = 0;
  std::string name;  // "NVIDIA H200"
  int sm_count = 0;
  std::string compute_capability;  // "9.0"
  size_t memory_bytes = 0;
  size_t l2_bytes = 0;
};

struct SystemInfo {
  std::string nvdet_version;
  std::string host;  // CPU model and core count
  bool cuda_built = false;
  std::string compiled_architectures;  // CMAKE_CUDA_ARCHITECTURES of this build ("" without CUDA)
  std::string cuda_fp_flags;           // nvcc floating-point flags the kernels were built with
  std::string cxx_fp_flags;            // host floating-point flags
  std::string driver_version;          // "" when no driver
  std::string cuda_runtime_version;
  std::string cublas_version;
  std::string device_error;  // why no GPU is listed, when none is
  std::vector<GpuInfo> gpus;
};

// Reads what is there; never throws (a missing device is recorded in device_error).
SystemInfo collect_system_info();

// Free memory of device 0 (cudaMemGetInfo), what the audit's device budget is measured against;
// nullopt in a CPU-only build or where no device answers.
std::optional<uint64_t> device_free_bytes();

}  // namespace nvdet
