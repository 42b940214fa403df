#include "lib/cuda/gemm_settings.h"

#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kernels/gemm_fp8.cuh"
#include "kernels/gemm_invariant.cuh"
#include "lib/core/error.h"

namespace nvdet::cuda {
namespace {

// The variable's integer value in [lo, hi], or `unset` when it is absent, empty or "auto".
int setting(const char* name, int lo, int hi, int unset) {
  const char* raw = std::getenv(name);
  const std::string_view v = raw ? std::string_view(raw) : std::string_view();
  if (v.empty() || v == "auto") return unset;
  int value = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
  if (ec != std::errc() || end != v.data() + v.size() || value < lo || value > hi) {
    throw_input_error(std::string(name) + " must be auto or an integer from " + std::to_string(lo) +
                      " to " + std::to_string(hi) + ", got '" + std::string(v) + "'");
  }
  return value;
}

}  // namespace

kernels::GemmDevice gemm_device(const DeviceContext& ctx) {
  kernels::GemmDevice d;
  d.cc_major = ctx.props().major;
  d.cc_minor = ctx.props().minor;
  d.sm_count = ctx.sm_count();
  return d;
}

int forced_wgmma_config() {
  return setting("NVDET_GEMM_WGMMA_CONFIG", 0, kernels::kGemmWgmmaConfigCount - 1, -1);
}

int forced_fp8_config() {
  return setting("NVDET_FP8_GEMM_CONFIG", 0, kernels::kFp8GemmConfigCount - 1, -1);
}

int forced_gemm_ctas() { return setting("NVDET_GEMM_CTAS", 1, 1 << 20, 0); }

}  // namespace nvdet::cuda
