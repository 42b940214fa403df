#pragma once
// nvdet's batch-invariant GEMM: out[m, n] = a[m, k] · w[n, k]^T (+ bias[n]).
//
// Invariance argument (shared by every path and schedule below):
//   The reduction plan depends only on K and the input type. K is cut into chunks of
//   gemm_invariant_chunk_k(type) elements (the last chunk may be shorter). For every output
//   element, each chunk's partial p_c starts from 0 and is accumulated by the same sequence of
//   MMA instructions (same instruction shape, same k order, k tails zero-filled identically);
//   the element is then ((0 + p_0) + p_1) + ... + p_{C-1} in fp32 (round to nearest), then
//   + bias[n], then rounded once to the output type. Nothing in that sequence depends on M, on
//   the row's position in the batch or on the tile the row falls in, so every row's bits are a
//   function of that row's inputs, K and the type alone.
//
// What may depend on M is the *schedule* (how the work is spread over CTAs), never the
// arithmetic:
//   - split-chunks: one CTA per (m tile, n tile, chunk) writes p_c to an fp32 workspace; a second
//     kernel sums the partials in chunk order, adds the bias and converts (decode-size M: fills
//     the GPU even at M = 1).
//   - in-cta: one CTA walks all chunks of its tile, keeping the running sum in registers.
// Both schedules of one path use the same MMA instruction shape; the tests force each schedule
// and compare bits.
//
// Paths (chosen from the device's compute capability, the compiled code, K and alignment, never
// from M): wgmma + TMA on sm_90a, mma.sync m16n8k16 + cp.async elsewhere (and for K or strides
// that TMA cannot address), FFMA for fp32 inputs. Different paths are not required to agree
// bitwise with each other; each is invariant on its own.
//
// This header is plain C++ (no device code), so host code may include it.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace nvdet_kernels {

// The element types the kernels understand (kernel-side; nvdet's DType stays out of .cu files).
enum class GemmType : int { kBF16 = 0, kFP16 = 1, kFP32 = 2 };

enum class GemmSchedule : int { kAuto = 0, kSplitChunks, kInCta };
enum class GemmPath : int { kAuto = 0, kMmaSync, kWgmma, kFfma };

const char* gemm_path_name(GemmPath path);          // "mma.sync-m16n8k16", "wgmma-m64n128k16", ...
const char* gemm_schedule_name(GemmSchedule schedule);  // "split-chunks", "in-cta"

struct GemmProblem {
  const void* a = nullptr;     // [m, k], row stride lda (elements)
  const void* w = nullptr;     // [n, k], row stride ldw
  const void* bias = nullptr;  // [n] in in_type, or null
  void* out = nullptr;         // [m, n], row stride ldo, in out_type
  int m = 0, n = 0, k = 0;
  int64_t lda = 0, ldw = 0, ldo = 0;
  GemmType in_type = GemmType::kBF16;
  GemmType out_type = GemmType::kFP32;
};

struct GemmPlan {
  GemmPath path = GemmPath::kMmaSync;
  GemmSchedule schedule = GemmSchedule::kInCta;
  int chunk_k = 0;  // KC
  int chunks = 0;   // ceil(K / KC)
  int tile_m = 0, tile_n = 0, tile_k = 0;
  int stages = 0;  // pipeline depth (prefetch only; never changes the arithmetic)
  size_t workspace_bytes = 0;  // needed by split-chunks (fp32 partials), 0 for in-cta
};

// KC: fixed per input type, never a function of M or N.
int gemm_invariant_chunk_k(GemmType in_type);

// Facts about the device the plan is for (from cudaDeviceProp).
struct GemmDevice {
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
};

// Chooses path, schedule and tiles. The path depends on the device, the compiled code, the types,
// K and the alignment of pointers and strides; the schedule may also depend on M and N (it never
// changes the arithmetic). `force_*` pin a choice (tests); a forced path the device or problem
// cannot run falls back to the automatic one.
GemmPlan gemm_invariant_plan(const GemmProblem& problem, const GemmDevice& device,
                             GemmSchedule force_schedule = GemmSchedule::kAuto,
                             GemmPath force_path = GemmPath::kAuto);

// Enqueues the kernels of `plan` on `stream`. Never allocates: split-chunks needs
// plan.workspace_bytes of `workspace` (cudaErrorInvalidValue otherwise).
cudaError_t gemm_invariant_launch(const GemmProblem& problem, const GemmPlan& plan, void* workspace,
                                  size_t workspace_bytes, cudaStream_t stream);

// Vendor-path helper: out[m, n] (out_type) = src[m, n] (fp32) + bias[n] (bias_type, may be null),
// rounded once. Used when cuBLASLt cannot write the requested output type directly.
cudaError_t gemm_convert_output(const float* src, const void* bias, GemmType bias_type, void* out,
                                GemmType out_type, int m, int n, cudaStream_t stream);

}  // namespace nvdet_kernels
