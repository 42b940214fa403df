#pragma once
// The MoE block (op moe, MoeArgs) as every backend computes it: the steps and their order are
// fixed here, and a backend supplies only its GEMM and its combine order. So two backends can
// differ only where serving kernels differ: the plan of each GEMM (which may follow the expert's
// row count and the batch's total) and the order in which a row's k expert outputs are added.
//
// Where each step runs: the GEMMs on the backend (device GEMMs for the GPU backends); the
// router softmax and top-k (lib/ops/moe_routing.h), the gather of each expert's rows, SwiGLU and
// the combine on the host, between GEMM calls, in plain IEEE fp32 (cpu-reference: double). GPU
// backends therefore share the host steps' bits with the CPU backends.
#include <functional>

#include "lib/backend/backend.h"
#include "lib/ops/fused_moe_plan.h"
#include "lib/ops/moe_routing.h"

namespace nvdet {

// Which GEMM of the block a call is, with the counts a vendor heuristic looks at.
struct MoeGemmSite {
  enum class Stage { kRouter, kGateUp, kDown };
  Stage stage = Stage::kRouter;
  int32_t expert = -1;      // -1 for the router
  int64_t rows = 0;         // rows of this GEMM (the expert's row count, or all rows)
  int64_t total_rows = 0;   // rows of the whole batch
  int64_t assignments = 0;  // rows x top_k: the sorted layout's length
  // Set by a fused-MoE plan (MoeKernels::fused_plan): the split-K every expert GEMM of this stage
  // takes (K cut into parts of split_len elements, their fp32 partials added by a fixed tree);
  // 0 where the backend's GEMM chooses for itself.
  int split_k = 0;
  int64_t split_len = 0;
};

// How a row's k expert outputs are added (fp32, from zero, one product w * y at a time).
enum class MoeCombineOrder {
  kRank,          // ascending top-k rank: fixed by the row's own routing
  kSortedLayout,  // ascending expert, the order of the sorted token layout
};

struct MoeKernels {
  // One GEMM of the block; `notes` (nullable) receives the plan it chose (tile, split_k, ...).
  std::function<HostTensor(const GemmArgs&, const MoeGemmSite&, RunNotes*)> gemm;
  // Optional: every active expert's GEMM of one stage (gate_up or down) in one call, as a grouped
  // GEMM launches them; entry i of each vector is one expert (notes entries may be null). When
  // absent, the pipeline calls `gemm` once per expert in ascending expert order.
  std::function<std::vector<HostTensor>(
      const std::vector<GemmArgs>&, const std::vector<MoeGemmSite>&, const std::vector<RunNotes*>&)>
      gemm_group;
  // silu(g) * u in fp32 (ignored when `in_double`).
  float (*silu_mul)(float g, float u) = nullptr;
  // The combine order for a batch of `total_rows` rows.
  std::function<MoeCombineOrder(int64_t total_rows)> combine_order;
  // cpu-reference: SwiGLU and the combine in double (its GEMMs accumulate in double too).
  bool in_double = false;
  // Optional: a vendor-style fused MoE (lib/ops/fused_moe_plan.h), planned per block from
  // (tokens, experts, top_k, expert width). With it, the expert GEMMs get the plan's split-K in
  // their sites, each down output is weighted in fp32 and rounded to the activations' dtype, and
  // the combine follows the plan (combine_order is not used).
  std::function<FusedMoePlan(int64_t tokens, int experts, int top_k, int64_t expert_width)>
      fused_plan;
};

// Computes the block. Notes: "router" (its GEMM's plan), "combine" (the order), and for each
// expert that a row of args.noted_rows selects, "expert E" = its row count and its GEMMs' plans,
// e.g. "3 rows; gate_up split_k 4; down split_k 4". With a fused plan, "fused_moe" gives its
// config and block assignment, and each expert note its padded row count.
HostTensor run_moe(const MoeArgs& args, const MoeKernels& kernels, RunNotes* notes);

// The plan facts an MoE note keeps from a GEMM's notes (tile, split_k, split_len, algo_id,
// chunk_k, problems), "key value" joined with ", "; "" when it has none of them.
std::string gemm_plan_summary(const RunNotes& gemm_notes);

// The notes' text, shared with the device blocks that reproduce the pipeline (lib/cuda/):
// an expert a probed row selects ("3 rows[ -> 16]; gate_up <plan>; down <plan>", padded < 0 for
// no padding), a fused plan ("fused_moe") and its combine ("combine").
std::string moe_expert_note(int64_t rows, int64_t padded, const RunNotes& gate_up,
                            const RunNotes& down);
std::string fused_plan_note(const FusedMoePlan& plan, const std::vector<int32_t>& expert_rows,
                            int gate_up_split, int down_split);
std::string fused_combine_note(const FusedMoePlan& plan, DType activations);
// The notes of one expert GEMM of a fused plan: its split (none where the plan keeps K whole).
RunNotes fused_plan_gemm_notes(int split_k, int64_t split_len);

}  // namespace nvdet
