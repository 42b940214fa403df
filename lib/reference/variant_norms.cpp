// cpu-variant RMSNorm and log-softmax: the reduction tree follows the row count, as serving-stack
// norm kernels do (split rows across blocks when the batch is small; bigger blocks for few rows).
//
// Reduction order of one row of length d in a batch of `rows` rows:
//   S = vendor_norm_row_splits(rows, d, 132), T = vendor_norm_block_threads(rows);
//   the row is cut into S contiguous parts of ceil(d / S) elements;
//   within a part, "thread" t sums elements t, t+T, t+2T, ... sequentially from zero; each warp of
//   32 threads is combined by the tree of tree_sum, then the T/32 warp sums by the same tree
//   (padded with zeros to 32) — the shape of a CUDA block reduction;
//   the S part results are combined sequentially, in part order.
// RMSNorm:     ss = sum of x*x as above; out = (x * (1 / sqrt(ss / d + eps))) * weight.
// log-softmax: part p reduces exp(x - max_p) with its own max_p; the parts are combined as
//              sum = sum_p part_p * exp(max_p - max) in part order; out = (x - max) - log(sum).
// Not invariant, on purpose: S and T depend on the number of rows in the batch.
#include <cmath>

#include "lib/core/parallel.h"
#include "lib/ops/split_policies.h"
#include "lib/reference/cpu_common.h"
#include "lib/reference/cpu_kernels.h"

namespace nvdet::cpu {
namespace {

inline constexpr int kWarp = 32;

// A CUDA-style block reduction of f(x[j]) over x[0, n) with `threads` threads (a multiple of 32).
template <class F>
float block_sum(const float* x, int64_t n, int threads, F f, std::vector<float>& scratch) {
  scratch.assign(static_cast<size_t>(threads), 0.0f);
  for (int64_t j = 0; j < n; ++j) scratch[static_cast<size_t>(j % threads)] += f(x[j]);
  float warps[kWarp] = {};
  for (int w = 0; w < threads / kWarp; ++w) warps[w] = tree_sum(scratch.data() + w * kWarp, kWarp);
  return tree_sum(warps, kWarp);
}

struct RowPlan {
  int splits;
  int threads;
  int64_t part_len;
};

RowPlan row_plan(int64_t rows, int64_t d) {
  const int s = vendor_norm_row_splits(rows, d, kNotionalSmCount);
  return {s, vendor_norm_block_threads(rows), (d + s - 1) / s};
}

void add_notes(RunNotes* notes, const RowPlan& plan) {
  if (!notes) return;
  (*notes)["row_splits"] = std::to_string(plan.splits);
  (*notes)["block_threads"] = std::to_string(plan.threads);
}

}  // namespace

HostTensor variant_rmsnorm(const RmsNormArgs& args, RunNotes* notes) {
  const int64_t rows = args.x->dim(0), d = args.x->dim(1);
  const RowPlan plan = row_plan(rows, d);
  const std::vector<float> w = to_float(*args.weight);
  std::vector<float> out(static_cast<size_t>(rows * d));
  parallel_for(rows, 4 * d, [&](int64_t r) {
    std::vector<float> scratch;
    float* x = out.data() + r * d;
    to_float(*args.x, r * d, d, x);
    float ss = 0.0f;
    for (int64_t b = 0; b < d; b += plan.part_len) {
      ss += block_sum(
          x + b, std::min(plan.part_len, d - b), plan.threads, [](float v) { return v * v; },
          scratch);
    }
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + args.eps);
    for (int64_t j = 0; j < d; ++j) x[j] = (x[j] * inv) * w[j];
  });
  add_notes(notes, plan);
  return make_output(args.out_dtype, {rows, d}, std::span<const float>(out));
}

HostTensor variant_log_softmax(const LogSoftmaxArgs& args, RunNotes* notes) {
  const int64_t rows = args.x->dim(0), v = args.x->dim(1);
  const RowPlan plan = row_plan(rows, v);
  std::vector<float> out(static_cast<size_t>(rows * v));
  parallel_for(rows, 4 * v, [&](int64_t r) {
    std::vector<float> scratch;
    float* x = out.data() + r * v;
    to_float(*args.x, r * v, v, x);
    std::vector<float> part_max, part_sum;
    for (int64_t b = 0; b < v; b += plan.part_len) {
      const int64_t n = std::min(plan.part_len, v - b);
      float mx = -INFINITY;
      for (int64_t j = 0; j < n; ++j) mx = std::max(mx, x[b + j]);
      part_max.push_back(mx);
      part_sum.push_back(block_sum(
          x + b, n, plan.threads, [mx](float e) { return std::exp(e - mx); }, scratch));
    }
    float mx = -INFINITY;
    for (float m : part_max) mx = std::max(mx, m);
    float sum = 0.0f;
    for (size_t p = 0; p < part_max.size(); ++p) sum += part_sum[p] * std::exp(part_max[p] - mx);
    const float lse = std::log(sum);
    for (int64_t j = 0; j < v; ++j) x[j] = (x[j] - mx) - lse;
  });
  add_notes(notes, plan);
  return make_output(args.out_dtype, {rows, v}, std::span<const float>(out));
}

}  // namespace nvdet::cpu
