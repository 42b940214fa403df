// cpu-variant GEMM: split-K whose split count follows the batch, as cuBLASLt's default heuristic
// does for small m (measured on an H200: 2 or 4 splits at m <= 64 for N=K=4096).
//
// Reduction order of out[i, j], with S = variant_gemm_split_k(m):
//   split_len = ceil(K / S) rounded up to a multiple of 64; split s covers
//   [s*split_len, min((s+1)*split_len, K)) and is summed sequentially from zero (one CTA's k-loop);
//   the split partials (padded with zeros to a power of two) are combined by the tree of
//   tree_sum: for S = 4, (P0 + P2) + (P1 + P3); for S = 2, P0 + P1; for S = 1 there is no combine.
//   out = round(total + bias[j]).
// Not invariant, on purpose: S depends on m, so row i's bits change with the batch size.
#include "lib/core/parallel.h"
#include "lib/reference/cpu_common.h"
#include "lib/reference/cpu_kernels.h"
#include "lib/reference/gemm_panels.h"

namespace nvdet::cpu {
namespace {

int variant_gemm_split_k(int64_t m) { return m <= 16 ? 4 : (m <= 64 ? 2 : 1); }

}  // namespace

HostTensor variant_gemm(const GemmArgs& args, RunNotes* notes) {
  return variant_gemm_with_split_k(args, variant_gemm_split_k(args.a->dim(0)), notes);
}

HostTensor variant_gemm_with_split_k(const GemmArgs& args, int split_k, RunNotes* notes) {
  if (args.is_fp8()) return variant_fp8_gemm_with_split_k(args, split_k, notes);
  const int64_t k = args.a->dim(1);
  return variant_gemm_with_split_len(args, ((k + split_k - 1) / split_k + 63) / 64 * 64, notes);
}

HostTensor variant_gemm_with_split_len(const GemmArgs& args, int64_t split_len, RunNotes* notes) {
  const PackedGemm g = pack_gemm(args);
  const int num_splits = static_cast<int>((g.k + split_len - 1) / split_len);
  int padded = 1;
  while (padded < num_splits) padded *= 2;

  std::vector<float> out(static_cast<size_t>(g.m * g.n));
  parallel_for(g.num_panels(), g.panel_work(), [&](int64_t p) {
    std::vector<float> partials(static_cast<size_t>(padded) * kGemmRows * kGemmLanes, 0.0f);
    auto part_at = [&](int s, int r, int l) -> float& {
      return partials[(static_cast<size_t>(s) * kGemmRows + r) * kGemmLanes + l];
    };
    float part[kGemmRows][kGemmLanes];
    std::vector<float> column(static_cast<size_t>(padded));
    for (int64_t rb = 0; rb < g.num_row_blocks(); ++rb) {
      for (int s = 0; s < num_splits; ++s) {
        const int64_t k0 = s * split_len;
        gemm_segment<float>(g, rb * kGemmRows, p, k0, std::min(g.k, k0 + split_len), part);
        for (int r = 0; r < kGemmRows; ++r) {
          for (int l = 0; l < kGemmLanes; ++l) part_at(s, r, l) = part[r][l];
        }
      }
      for (int r = 0; r < kGemmRows && rb * kGemmRows + r < g.m; ++r) {
        for (int l = 0; l < kGemmLanes && p * kGemmLanes + l < g.n; ++l) {
          for (int s = 0; s < padded; ++s) column[s] = s < num_splits ? part_at(s, r, l) : 0.0f;
          const float total = tree_sum(column.data(), padded);
          const int64_t col = p * kGemmLanes + l;
          out[(rb * kGemmRows + r) * g.n + col] = g.bias.empty() ? total : total + g.bias[col];
        }
      }
    }
  });
  if (notes) {
    (*notes)["split_k"] = std::to_string(num_splits);
    (*notes)["split_len"] = std::to_string(split_len);
  }
  return make_output(args.out_dtype, {g.m, g.n}, std::span<const float>(out));
}

}  // namespace nvdet::cpu
