// The MoE block on the four CPU backends: lib/backend/moe_pipeline.h fixes the steps; each flavor
// gives its GEMM and its combine order.
//
//  - cpu-reference: every GEMM accumulates in double (each output rounded once), SwiGLU and the
//    combine in double;
//  - cpu-invariant: the invariant GEMM per expert (a row's bits depend only on K, never on how
//    many rows its expert received), combine in ascending top-k rank in fp32: a row's result is
//    a function of the row alone;
//  - cpu-variant: a vendor-style fused MoE (vLLM fused_moe's shape of decisions): its config,
//    looked up from the batch's total rows M, takes tile_m 16 when M <= experts and 64 above;
//    at tile_m 16 each expert's GEMMs split K by that expert's row count (4 splits up to 4 rows,
//    2 up to 16, none above), at tile_m 64 they do not split and the combine is fused into the
//    down GEMM's epilogue in the sorted token layout's order (ascending expert) instead of
//    ascending rank. So an expert's row count and the batch's total both change a row's bits;
//  - cpu-portable: kernels/portable_ops.cuh's GEMM, combine in rank order: bitwise equal to
//    cuda-portable, which runs the same pipeline with its device GEMM.
// The router GEMM is each flavor's ordinary GEMM (cpu-variant's split-K follows the total rows).
#include <fmt/format.h>

#include "kernels/silu_mul.cuh"
#include "lib/backend/moe_pipeline.h"
#include "lib/reference/cpu_kernels.h"

namespace nvdet::cpu {
namespace {

using Stage = MoeGemmSite::Stage;

// A flavor that runs its one GEMM at every site (router and experts alike) and combines in
// ascending top-k rank whatever the batch: cpu-reference, cpu-invariant and cpu-portable.
MoeKernels rank_order_kernels(HostTensor (*gemm)(const GemmArgs&, RunNotes*)) {
  MoeKernels k;
  k.gemm = [gemm](const GemmArgs& g, const MoeGemmSite&, RunNotes* n) { return gemm(g, n); };
  k.combine_order = [](int64_t) { return MoeCombineOrder::kRank; };
  return k;
}

// vLLM's default fused_moe config rule in outline: small batches (no more rows than experts) get
// the small tile, larger ones the large tile.
int vendor_moe_tile_m(int64_t total_rows, int64_t experts) {
  return total_rows <= experts ? 16 : 64;
}

int vendor_moe_split_k(int tile_m, int64_t expert_rows) {
  if (tile_m >= 64) return 1;
  return expert_rows <= 4 ? 4 : (expert_rows <= 16 ? 2 : 1);
}

}  // namespace

HostTensor reference_moe(const MoeArgs& args, RunNotes* notes) {
  MoeKernels k = rank_order_kernels(reference_gemm);
  k.in_double = true;
  return run_moe(args, k, notes);
}

HostTensor invariant_moe(const MoeArgs& args, RunNotes* notes) {
  MoeKernels k = rank_order_kernels(invariant_gemm);
  k.silu_mul = kernels::portable::silu_mul;
  return run_moe(args, k, notes);
}

HostTensor variant_moe(const MoeArgs& args, RunNotes* notes) {
  const int64_t experts = args.router->dim(0);
  MoeKernels k;
  k.gemm = [experts](const GemmArgs& g, const MoeGemmSite& site, RunNotes* n) {
    if (site.stage == Stage::kRouter) return variant_gemm(g, n);
    const int tile_m = vendor_moe_tile_m(site.total_rows, experts);
    HostTensor out = variant_gemm_with_split_k(g, vendor_moe_split_k(tile_m, site.rows), n);
    if (n) (*n)["tile"] = fmt::format("{}x64", tile_m);
    return out;
  };
  k.silu_mul = kernels::portable::silu_mul;
  k.combine_order = [experts](int64_t total_rows) {
    return vendor_moe_tile_m(total_rows, experts) >= 64 ? MoeCombineOrder::kSortedLayout
                                                        : MoeCombineOrder::kRank;
  };
  return run_moe(args, k, notes);
}

HostTensor portable_moe(const MoeArgs& args, RunNotes* notes) {
  MoeKernels k = rank_order_kernels(portable_gemm);
  k.silu_mul = kernels::portable::silu_mul;
  return run_moe(args, k, notes);
}

}  // namespace nvdet::cpu
