#pragma once
// Tensor-parallel GEMMs simulated on one device: each rank's shard GEMM is its own backend call
// on that rank's weights (sliced once, so a GPU backend uploads each rank's shard once), and a
// row-parallel layer's partial outputs are combined by an all-reduce.
//
//  column-parallel (q/k/v, gate/up; `tp_split: column`): the weight's rows (output columns) are
//    split evenly over the ranks, group by group (the fused qkv matrix: Q heads, K heads, V heads
//    each split, so every rank holds whole heads); rank r computes its columns, and gathering the
//    ranks' columns changes no bits (an all-gather copies).
//  row-parallel (o_proj, down; `tp_split: row`): K is split evenly (K % tp == 0); rank r computes
//    x[:, K_r] · w[:, K_r]^T in the output dtype, rank 0's GEMM adds the bias (as vLLM's
//    RowParallelLinear does), and the partials are all-reduced in the output dtype:
//      - `allreduce` auto / ring / tree / fixed: the simulated orders of lib/ops/allreduce.h;
//      - `fixed` on a backend with K-chunk partials (Backend::gemm_k_chunk > 0: cpu-invariant): the
//        TP-invariant plan. Shard boundaries fall on the backend's K chunks (K / tp must be a
//        multiple of its chunk), every rank returns its fp32 chunk partials, and they are added
//        in global chunk order, ((0 + P_0) + P_1) + ..., then + bias and one rounding: exactly the
//        unsharded GEMM's order, so every tp gives the unsharded bits. Its wire traffic is an
//        all-gather of fp32 partials (chunks x m x n x 4 bytes), not a bf16 all-reduce;
//      - `nccl`: the partials go to GPUs 0 .. tp-1 and NCCL's ncclAllReduce sums them
//        (lib/backend/nccl_collective.h).
// With tp = 1 both are the plain GEMM (bias included), except that the K-chunk plan runs at tp 1
// too (its one rank's partials summed in chunk order), so that a backend whose run() reduces K in
// another order (cuda-invariant on sm_90a: one wgmma chain) is compared like with like.
#include <cstdint>
#include <functional>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/ops/allreduce.h"
#include "lib/scenario/context.h"

namespace nvdet {

// How a context shards: the axes tp, allreduce, channels and the scenario key nccl.
struct TpOptions {
  int tp = 1;
  AllReduceAlgo allreduce = AllReduceAlgo::kAuto;
  int channels = 0;
  NcclSettings nccl;
};

// A context's options: its tp, allreduce and channels values (1, auto, 0 when not swept) and the
// scenario's nccl settings. Throws kBadInput for a tp out of [1, kMaxTp].
TpOptions tp_options(const Scenario& s, const Context& c);
// Every tp value a scenario sweeps ({1} without the axis).
std::vector<int> tp_values(const Scenario& s);
// Calls `check` with every tp value the scenario sweeps (none without the axis); a kBadInput it
// throws is thrown again at the tp axis's place in the file.
void check_each_tp(const Scenario& s, const std::function<void(int tp)>& check);
// Whether tp splits a row-parallel weight's k columns / a column-parallel weight's output
// groups evenly; throws kBadInput otherwise ("tp 3 does not divide k = 1024 evenly ...").
void check_row_split(int64_t k, int tp);
void check_column_split(const std::vector<int64_t>& groups, int tp);

// x's columns [begin, begin + count) (a 2-D tensor).
HostTensor column_slice(const HostTensor& x, int64_t begin, int64_t count);
// Pieces of equal row count side by side.
HostTensor concat_columns(const std::vector<HostTensor>& pieces);

class ColumnParallelLinear {
 public:
  // w [n, k], bias [n] or null; `groups` (sizes summing to n, each divisible by tp), default {n}.
  ColumnParallelLinear(const HostTensor& w, const HostTensor* bias, int tp,
                       std::vector<int64_t> groups = {});
  int tp() const { return static_cast<int>(w_.size()); }
  // Rank r's output [m, n / tp], its groups' columns side by side.
  std::vector<HostTensor> run(Backend& backend, const HostTensor& x, DType out_dtype,
                              RunNotes* notes) const;
  // The ranks' outputs back in the unsharded column order.
  HostTensor gather(const std::vector<HostTensor>& per_rank) const;

 private:
  std::vector<HostTensor> w_, bias_;
  std::vector<int64_t> groups_;
};

class RowParallelLinear {
 public:
  // w [n, k] with k % tp == 0, bias [n] or null.
  RowParallelLinear(const HostTensor& w, const HostTensor* bias, int tp);
  int tp() const { return static_cast<int>(w_.size()); }
  int64_t shard_k() const { return shard_k_; }
  // x_shards[r]: rank r's input [m, k / tp]. Returns the all-reduced [m, n] in out_dtype; notes
  // get tp, allreduce (the plan used) and rank 0's backend notes.
  HostTensor run(Backend& backend, const std::vector<HostTensor>& x_shards, DType out_dtype,
                 const TpOptions& options, RunNotes* notes) const;
  // x's K columns cut for the ranks.
  std::vector<HostTensor> split(const HostTensor& x) const;

 private:
  HostTensor run_k_chunk_plan(Backend& backend, const std::vector<HostTensor>& x_shards,
                              DType out_dtype, int64_t k_chunk, RunNotes* notes) const;

  std::vector<HostTensor> w_;
  HostTensor bias_;
  int64_t shard_k_ = 0;
};

}  // namespace nvdet
