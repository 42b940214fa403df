// MoE routing on the device (kernels/moe_route_launch.cuh): one warp per row routes it with the
// host's row function's arithmetic (one thread per row, the row function itself, past
// kRouteWarpMaxExperts experts); then one block per expert counts that expert's assignments, and
// one block per expert places them, in assignment order (r * top_k + j), at its offset (the
// counts of the experts before it). A block finds its entries' places with warp ballots and a
// prefix over its warps, chunk by chunk in ascending assignment order: a stable counting sort.
#include <climits>

#include "kernels/moe_route.cuh"
#include "kernels/moe_route_launch.cuh"

namespace nvdet::kernels {
namespace {

constexpr int kRouteThreads = 128;
constexpr int kSortThreads = 256;
constexpr int kSortWarps = kSortThreads / 32;
constexpr int kNoBadRow = 0x7f7f7f7f;  // what a byte fill of 0x7f writes: no row is bad

__global__ void __launch_bounds__(kRouteThreads)
    route_rows_kernel(const float* logits, int rows, int experts, int top_k, bool norm,
                      int32_t* expert, float* weight, int32_t* bad_row) {
  const int r = blockIdx.x * kRouteThreads + threadIdx.x;
  if (r >= rows) return;
  const long long at = static_cast<long long>(r) * top_k;
  const int bad = moe_route_row(logits + static_cast<long long>(r) * experts, experts, top_k, norm,
                                expert + at, weight + at);
  if (bad >= 0) {
    atomicMin(bad_row, r);  // the smallest bad row, whatever the order of the threads
    for (int j = 0; j < top_k; ++j) expert[at + j] = -1;
  }
}

// The same row function's arithmetic with one warp per row, for the latency of one row: the picks
// by a warp-wide reduction under moe_ranks_before (a strict total order, so any reduction order
// finds the same expert), each expert's exp_f64 by its lane into shared memory, then every lane
// adds them in ascending expert order as moe_route_row does, and the picks' scores are those
// exps divided by the sum: the same operations on the same operands, so the same bits
// (GpuMoeRoute.EqualsTheHostRoutingAndLayoutBitwise compares them with the host's).
constexpr int kRouteWarps = 4;  // rows per block
constexpr int kRouteWarpMaxExperts = 1536;  // kRouteWarps rows of exps in 48 KiB of shared memory

__global__ void __launch_bounds__(kRouteWarps * 32)
    route_rows_warp_kernel(const float* logits, int rows, int experts, int top_k, bool norm,
                           int32_t* expert, float* weight, int32_t* bad_row) {
  namespace pt = portable;
  extern __shared__ double row_exps[];  // [kRouteWarps][experts]
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const int r = blockIdx.x * kRouteWarps + warp;
  if (r >= rows) return;  // the whole warp
  const float* row = logits + static_cast<long long>(r) * experts;
  double* exps = row_exps + static_cast<long long>(warp) * experts;
  const long long at = static_cast<long long>(r) * top_k;
  bool bad = false;
  for (int e = lane; e < experts; e += 32) {
    bad |= moe_logit_not_finite(row[e]);
  }
  if (__any_sync(0xffffffffu, bad)) {
    if (lane == 0) atomicMin(bad_row, r);
    for (int j = lane; j < top_k; j += 32) expert[at + j] = -1;
    return;
  }
  int previous = -1;
  for (int j = 0; j < top_k; ++j) {
    int best = -1;
    for (int e = lane; e < experts; e += 32) {
      if (previous >= 0 && !moe_ranks_before(row, previous, e)) continue;
      if (best < 0 || moe_ranks_before(row, e, best)) best = e;
    }
    for (int step = 16; step >= 1; step /= 2) {
      const int other = __shfl_xor_sync(0xffffffffu, best, step);
      if (other >= 0 && (best < 0 || moe_ranks_before(row, other, best))) best = other;
    }
    if (lane == 0) expert[at + j] = best;
    previous = best;
    if (j == 0) {
      const double max_logit = static_cast<double>(row[best]);
      for (int e = lane; e < experts; e += 32) {
        exps[e] = pt::exp_f64(pt::sub_f64(static_cast<double>(row[e]), max_logit));
      }
    }
  }
  __syncwarp();
  if (lane != 0) return;
  double denom = 0.0;
  for (int e = 0; e < experts; ++e) denom = pt::add_f64(denom, exps[e]);
  double kept = 0.0;
  for (int j = 0; j < top_k; ++j) {
    kept = pt::add_f64(kept, pt::div_f64(exps[expert[at + j]], denom));
  }
  for (int j = 0; j < top_k; ++j) {
    const double score = pt::div_f64(exps[expert[at + j]], denom);
    weight[at + j] = static_cast<float>(norm ? pt::div_f64(score, kept) : score);
  }
}

__global__ void __launch_bounds__(kSortThreads)
    count_kernel(const int32_t* expert, int assignments, int32_t* counts) {
  __shared__ int warp_sum[kSortWarps];
  const int e = blockIdx.x;
  int n = 0;
  for (int i = threadIdx.x; i < assignments; i += kSortThreads) n += expert[i] == e ? 1 : 0;
  for (int s = 16; s >= 1; s /= 2) n += __shfl_xor_sync(0xffffffffu, n, s);
  if ((threadIdx.x & 31) == 0) warp_sum[threadIdx.x / 32] = n;
  __syncthreads();
  if (threadIdx.x == 0) {
    int total = 0;
    for (int w = 0; w < kSortWarps; ++w) total += warp_sum[w];
    counts[e] = total;
  }
}

__global__ void __launch_bounds__(kSortThreads)
    place_kernel(const int32_t* expert, int assignments, int experts, const int32_t* counts,
                 const int32_t* bad_row, int32_t* offsets, int32_t* row, int32_t* position,
                 int top_k) {
  __shared__ int warp_count[kSortWarps];
  __shared__ int base;
  const int e = blockIdx.x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  if (threadIdx.x == 0) {
    int begin = 0;
    for (int q = 0; q < e; ++q) begin += counts[q];
    base = begin;
    offsets[e] = begin;
    if (e == experts - 1) {
      offsets[experts] = begin + counts[e];
      offsets[experts + 1] = *bad_row == kNoBadRow ? 0 : *bad_row + 1;
    }
  }
  __syncthreads();
  for (int chunk = 0; chunk < assignments; chunk += kSortThreads) {
    const int i = chunk + threadIdx.x;
    const bool mine = i < assignments && expert[i] == e;
    const unsigned ballot = __ballot_sync(0xffffffffu, mine);
    if (lane == 0) warp_count[warp] = __popc(ballot);
    __syncthreads();
    int before = base;
    for (int w = 0; w < warp; ++w) before += warp_count[w];
    if (mine) {
      const int slot = before + __popc(ballot & ((1u << lane) - 1u));
      row[slot] = i / top_k;
      position[i] = slot;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 0; w < kSortWarps; ++w) base += warp_count[w];
    }
    __syncthreads();
  }
}

}  // namespace

cudaError_t launch_moe_route(const float* logits, int rows, int experts, int top_k,
                             bool norm_topk_prob, const MoeRouteOutputs& out, cudaStream_t stream) {
  if (rows < 0 || experts < 1 || top_k < 1 || top_k > experts) return cudaErrorInvalidValue;
  const long long assignments = static_cast<long long>(rows) * top_k;
  if (assignments >= INT_MAX || rows >= kNoBadRow) return cudaErrorInvalidValue;
  // offsets[experts + 1] holds the smallest bad row until place_kernel turns it into the flag.
  int32_t* bad_row = out.offsets + experts + 1;
  cudaError_t st = cudaMemsetAsync(bad_row, 0x7f, sizeof(int32_t), stream);
  if (st != cudaSuccess) return st;
  if (rows > 0 && experts <= kRouteWarpMaxExperts) {
    const size_t smem = static_cast<size_t>(kRouteWarps) * experts * sizeof(double);
    route_rows_warp_kernel<<<(rows + kRouteWarps - 1) / kRouteWarps, kRouteWarps * 32, smem,
                             stream>>>(logits, rows, experts, top_k, norm_topk_prob, out.expert,
                                       out.weight, bad_row);
    if ((st = cudaGetLastError()) != cudaSuccess) return st;
  } else if (rows > 0) {
    route_rows_kernel<<<(rows + kRouteThreads - 1) / kRouteThreads, kRouteThreads, 0, stream>>>(
        logits, rows, experts, top_k, norm_topk_prob, out.expert, out.weight, bad_row);
    if ((st = cudaGetLastError()) != cudaSuccess) return st;
  }
  count_kernel<<<experts, kSortThreads, 0, stream>>>(out.expert, static_cast<int>(assignments),
                                                     out.counts);
  if ((st = cudaGetLastError()) != cudaSuccess) return st;
  place_kernel<<<experts, kSortThreads, 0, stream>>>(out.expert, static_cast<int>(assignments),
                                                     experts, out.counts, bad_row, out.offsets,
                                                     out.row, out.position, top_k);
  return cudaGetLastError();
}

}  // namespace nvdet::kernels
