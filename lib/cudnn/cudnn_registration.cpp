// The cudnn backend's record in the backend registry (lib/backend/backend.h collects it through
// cudnn_backend_registrations()). Compiled in every build, like the CUDA backends' table: a
// CPU-only nvdet, or one built without cuDNN's headers, lists it with the same support table and
// says why it cannot run.
#include "lib/core/error.h"
#include "lib/cuda/cuda_factories.h"
#if NVDET_WITH_CUDA
#include "lib/cudnn/cudnn_backend.h"
#endif

namespace nvdet {

// cuDNN's SDPA: attention only, in the 16-bit dtypes; the build must have the backend (cuDNN's
// headers and cudnn-frontend; the library itself is loaded when the backend is created). It is
// the vendor attention kernel users run (PyTorch's cuDNN SDPA): bench's baseline for attention.
std::vector<BackendRegistration> cudnn_backend_registrations() {
  BackendInfo info{"cudnn", "cuDNN's SDPA forward (graph API) for attention over the paged KV cache",
                   true, false,
                   {{"attention_decode", "cuDNN SDPA, paged K/V, per-sequence KV lengths"},
                    {"attention_prefill",
                     "cuDNN SDPA, paged K/V, bottom-right causal over the cache"}}};
  const std::vector<DType> half = {DType::kBF16, DType::kFP16};
  SupportTable table{{{OpKind::kAttentionDecode, half}, {OpKind::kAttentionPrefill, half}}, true,
                     cuda::needs_sm80};
#if NVDET_WITH_CUDA
  if (const std::string why = cudnn::cudnn_unavailable_reason(); !why.empty()) {
    info.description += " (unavailable: " + why + ")";
    table.device_requirement = [why](const DeviceFacts&) { return "is unavailable: " + why; };
  }
#endif
  BenchRole bench;
  bench.baseline_for = {OpKind::kAttentionDecode, OpKind::kAttentionPrefill};
  BackendRegistration r{info, NVDET_GPU_FACTORY(info, cudnn::make_cudnn_backend(info)),
                        supports_from(std::move(table)),
                        [] {
                          return std::string(
                              "attention: cuDNN's SDPA forward (graph API, cudnn-frontend); the "
                              "engine cuDNN's heuristic chose is in each run's notes");
                        },
                        std::move(bench)};
  return {std::move(r)};
}

}  // namespace nvdet
