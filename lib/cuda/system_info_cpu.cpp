// CPU-only build: no device facts to read.
#include "lib/core/host_info.h"
#include "lib/core/system_info.h"

namespace nvdet {

SystemInfo collect_system_info() {
  SystemInfo s;
  s.nvdet_version = NVDET_VERSION;
  s.host = host_cpu_description();
  s.cxx_fp_flags = NVDET_CXX_FP_FLAGS;
  s.device_error = "this nvdet was built without CUDA";
  return s;
}

std::optional<uint64_t> device_free_bytes() { return std::nullopt; }

}  // namespace nvdet
