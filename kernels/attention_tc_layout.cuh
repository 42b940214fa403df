#pragma once
// The tensor-core attention kernel's shapes and the per-item bookkeeping its producer and
// consumers share (attention_tc.cu, attention_tc_swapped.cuh): the shared-memory budget of each
// (head_dim, warpgroups) instance, an item's unit and KV head, the plan's split bounds, output
// stores and the consumers' view of the K/V ring. Included by attention_tc.cu only.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/attention_tc.cuh"
#include "kernels/attention_tc_wgmma.cuh"
#include "kernels/gemm_wgmma_instr.cuh"
#include "kernels/sm90_async.cuh"
#include "kernels/vec_io.cuh"

namespace nvdet::kernels {

inline constexpr float kTcLog2e = 1.4426950408889634f;

template <int HD, int CONSUMERS>
struct TcShape {
  static constexpr int kKeys = HD <= 128 ? 128 : 64;  // the plan's tile width
  static constexpr int kRows = 64 * CONSUMERS;
  static constexpr int kQBytes = kRows * HD * 2;
  static constexpr int kTileBytes = kKeys * HD * 2;
  // Ring buffers: as many as fit beside Q and the running state (at least 4).
  static constexpr int kORegs = HD / 2;   // O accumulators per thread
  static constexpr int kSRegs = kKeys / 2;  // S accumulators per thread
  static_assert(kSRegs == Wgmma<kKeys, __nv_bfloat16>::kRegs, "one S accumulator per 2 keys");
  static_assert(kORegs == WgmmaRegA<HD, __nv_bfloat16>::kRegs, "one O accumulator per 2 dims");
  static constexpr int kRunBytes = CONSUMERS * 128 * kORegs * 4;
  // The largest dynamic shared memory a block may have. The layout needs a 1024-aligned base
  // (swizzle atoms), which the dynamic window of a kernel without static shared memory has; the
  // kernel checks it rather than spending 1 KB on padding.
  static constexpr int kSmemLimit = 227 * 1024;
  static constexpr int kBarBytes = 256;
  static constexpr int kOffBytes = 2 * kKeys * 8;
  static constexpr int kFlagBytes = 4 * kRows;  // per token of an item: fold it here (0/1)
  static constexpr int ring_slots(int q_bufs) {
    const int n = (kSmemLimit - q_bufs * kQBytes - kRunBytes - kBarBytes - kOffBytes - kFlagBytes) /
                  kTileBytes;
    return n > 8 ? 8 : n;
  }
  // A second Q buffer where it costs no ring slot (one warpgroup, head_dim <= 128): the producer
  // then loads the next item's Q while the consumers finish the current one, so a short item
  // (a decode split of 4 tiles) does not start with the ring drained.
  static constexpr int kQBufs = ring_slots(2) == ring_slots(1) ? 2 : 1;
  static constexpr int kNbUsed = ring_slots(kQBufs);
  static_assert(kNbUsed >= 4, "shared memory for at least 4 ring buffers");
  static constexpr int kSmemBytes =
      kQBufs * kQBytes + kNbUsed * kTileBytes + kRunBytes + kOffBytes + kFlagBytes + kBarBytes;
  static constexpr int kThreads = 128 * (CONSUMERS + 1);
};

#ifdef NVDET_SM90A_DEVICE

template <class TO>
__device__ __forceinline__ void tc_store_pair(TO* dst, float a, float b) {
  dst[0] = from_float<TO>(a);
  dst[1] = from_float<TO>(b);
}

// Everything the producer and the consumers derive from an item index identically.
struct TcItem {
  TcAttentionUnit u;
  int kvh;
  int last_pos;
};

__device__ __forceinline__ TcItem tc_load_item(const TcAttentionParams& p, int item) {
  TcItem it;
  it.u = p.units[item / p.num_kv_heads];
  it.kvh = item % p.num_kv_heads;
  it.last_pos = it.u.first_pos + it.u.num_tokens - 1;
  return it;
}
// The n-th item this CTA runs, or -1 after its last: from its list where the host made one, else
// every gridDim.x-th item from blockIdx.x. The producer and the consumers walk the same sequence.
__device__ __forceinline__ int tc_cta_item(const TcAttentionParams& p, int n, int num_items) {
  if (p.cta_item_begin == nullptr) {
    const int64_t item = blockIdx.x + static_cast<int64_t>(n) * gridDim.x;
    return item < num_items ? static_cast<int>(item) : -1;
  }
  const int i = p.cta_item_begin[blockIdx.x] + n;
  return i < p.cta_item_begin[blockIdx.x + 1] ? p.cta_items[i] : -1;
}
// Keys [lo, hi) of split j that a unit ending at last_pos needs.
__device__ __forceinline__ int tc_split_lo(int j, int s) { return j * s; }
__device__ __forceinline__ int tc_split_hi(int j, int s, int last_pos) {
  return min((j + 1) * s, last_pos + 1);
}

// Stores out[i] = v for the output's dtype.
__device__ __forceinline__ void tc_store_out(const TcAttentionParams& p, int64_t i, float v) {
  if (p.out_dtype == ElemType::kBF16) {
    static_cast<__nv_bfloat16*>(p.out)[i] = from_float<__nv_bfloat16>(v);
  } else if (p.out_dtype == ElemType::kFP16) {
    static_cast<__half*>(p.out)[i] = from_float<__half>(v);
  } else {
    static_cast<float*>(p.out)[i] = v;
  }
}

// The consumers' view of the ring of K/V tile buffers and their barriers.
template <int TILE_BYTES, int NB>
struct TcRing {
  uint32_t tiles;  // the first tile buffer
  uint32_t bars;   // the first full barrier; the empty barriers follow the NB full ones
  __device__ __forceinline__ uint32_t tile(int s) const { return tiles + s * TILE_BYTES; }
  __device__ __forceinline__ uint32_t full(int s) const { return bars + 8 * s; }
  __device__ __forceinline__ uint32_t empty(int s) const { return bars + 8 * (NB + s); }
};

#endif  // NVDET_SM90A_DEVICE

}  // namespace nvdet::kernels
