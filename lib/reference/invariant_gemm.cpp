// cpu-invariant GEMM.
//
// Reduction order of out[i, j] (fixed by K alone):
//   K is cut into chunks [0,256), [256,512), ... (the last one may be shorter);
//   chunk c's partial P_c = sum over k in the chunk, sequentially from zero, of a[i,k]*w[j,k];
//   total = ((0 + P_0) + P_1) + ... in chunk order; out = round(total + bias[j]).
// Invariance: nothing in the plan refers to m, to other rows or to the thread that computes it;
// the register blocking (4 rows x 8 columns) only decides which accumulators live together, and
// each accumulator sees exactly the sequence above. So row i's bits are the same at any batch
// size and position, and a token's row of a decode step (m = batch) equals its row of a
// scoring pass over whole sequences (m = thousands): sampler/trainer parity.
#include "lib/core/error.h"
#include "lib/core/parallel.h"
#include "lib/reference/cpu_common.h"
#include "lib/reference/cpu_kernels.h"
#include "lib/reference/gemm_panels.h"

namespace nvdet::cpu {

HostTensor invariant_gemm(const GemmArgs& args, RunNotes* notes) {
  if (args.is_fp8()) return invariant_fp8_gemm(args, notes);
  const PackedGemm g = pack_gemm(args);
  std::vector<float> out(static_cast<size_t>(g.m * g.n));
  parallel_for(g.num_panels(), g.panel_work(), [&](int64_t p) {
    float part[kGemmRows][kGemmLanes];
    float total[kGemmRows][kGemmLanes];
    for (int64_t rb = 0; rb < g.num_row_blocks(); ++rb) {
      for (auto& row : total) std::fill(row, row + kGemmLanes, 0.0f);
      for (int64_t k0 = 0; k0 < g.k; k0 += kInvariantKChunk) {
        gemm_segment<float>(g, rb * kGemmRows, p, k0, std::min(g.k, k0 + kInvariantKChunk), part);
        for (int r = 0; r < kGemmRows; ++r) {
          for (int l = 0; l < kGemmLanes; ++l) total[r][l] += part[r][l];
        }
      }
      for (int r = 0; r < kGemmRows && rb * kGemmRows + r < g.m; ++r) {
        for (int l = 0; l < kGemmLanes && p * kGemmLanes + l < g.n; ++l) {
          const int64_t col = p * kGemmLanes + l;
          out[(rb * kGemmRows + r) * g.n + col] =
              g.bias.empty() ? total[r][l] : total[r][l] + g.bias[col];
        }
      }
    }
  });
  if (notes) {
    (*notes)["k_chunk"] = std::to_string(kInvariantKChunk);
    (*notes)["split_k"] = std::string("1");
  }
  return make_output(args.out_dtype, {g.m, g.n}, std::span<const float>(out));
}

HostTensor invariant_gemm_chunk_partials(const GemmArgs& args, RunNotes* notes) {
  if (args.is_fp8()) throw_input_error("gemm: the K-chunk partials of an FP8 GEMM are not given");
  const PackedGemm g = pack_gemm(args);
  const int64_t chunks = (g.k + kInvariantKChunk - 1) / kInvariantKChunk;
  std::vector<float> out(static_cast<size_t>(chunks * g.m * g.n));
  parallel_for(g.num_panels(), g.panel_work(), [&](int64_t p) {
    float part[kGemmRows][kGemmLanes];
    for (int64_t rb = 0; rb < g.num_row_blocks(); ++rb) {
      for (int64_t c = 0; c < chunks; ++c) {
        const int64_t k0 = c * kInvariantKChunk;
        gemm_segment<float>(g, rb * kGemmRows, p, k0, std::min(g.k, k0 + kInvariantKChunk), part);
        for (int r = 0; r < kGemmRows && rb * kGemmRows + r < g.m; ++r) {
          for (int l = 0; l < kGemmLanes && p * kGemmLanes + l < g.n; ++l) {
            out[(c * g.m + rb * kGemmRows + r) * g.n + p * kGemmLanes + l] = part[r][l];
          }
        }
      }
    }
  });
  if (notes) (*notes)["k_chunk"] = std::to_string(kInvariantKChunk);
  return make_output(DType::kFP32, {chunks, g.m, g.n}, std::span<const float>(out));
}

}  // namespace nvdet::cpu
