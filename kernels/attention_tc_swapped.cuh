#pragma once
// The swapped form of the tensor-core attention products (attention_tc.cuh's plan, run by
// attention_tc.cu's consumers for items of at most 8 query rows with one warpgroup).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "kernels/attention_tc.cuh"
#include "kernels/attention_tc_copy.cuh"
#include "kernels/attention_tc_layout.cuh"
#include "kernels/attention_tc_math.cuh"
#include "kernels/attention_tc_wgmma.cuh"
#include "kernels/sm90_async.cuh"
#include "kernels/vec_io.cuh"

namespace nvdet::kernels {

#ifdef NVDET_SM90A_DEVICE

// The swapped form's scratch, in the running-state region (which its items do not use): P as
// wgmma's B operand [8 query rows][KEYS] in the input type, K-major and 128-byte swizzled, at the
// region's 1024-aligned start; the S^T accumulators by query row [8][KEYS + 4] fp32 (the padding
// puts a warp's stores of 8 keys x 4 row pairs in 32 distinct banks); per query row alpha, the
// fold weights wa and wb, and the running l.
template <int KEYS>
struct TcSwapScratch {
  static constexpr int kRows = attention_tc_small_block_rows;
  static_assert(kRows == 8, "wgmma m64n8k16: 8 query rows");
  static constexpr int kSStride = KEYS + 4;
  static constexpr int kSOff = kRows * KEYS * 2;
  static constexpr int kRowOff = kSOff + kRows * kSStride * 4;
  static constexpr int kBytes = kRowOff + 4 * kRows * 4;
};

// One item of at most 8 query rows (tokens x heads) by the swapped form, with one consumer
// warpgroup: per tile S^T = K Q^T (wgmma m64n8k16, the keys in 64-row halves on the A side, Q's
// first 8 rows as B) and O^T += V^T P^T (m64n8k16, head_dim in 64-row halves, V read transposed
// as A, P from shared memory as B), each element with the bits of the 64-row form's m64nNk16
// (same operands, same k order; tests/gpu_attention_swap_test.cpp shows it, and the plan tests
// compare this form with the other). The 64-row form computes 64 rows of which a decode block
// uses 4 to 8; this one computes 8 of each product's 64 x 8.
// Between the products the S^T values go through shared memory to warp 0, whose lanes then hold
// query row lane / 4's scores for keys 8 jb + 2 quad + e: the 64-row form's registers for rows
// 0-7, so tc_softmax_step runs on them as it does there, and l is summed in the same order. Its
// lanes keep each row's (m, l) and running (m, l); alpha and the fold weights reach the other
// warps through the scratch. Each thread keeps its O^T elements (dims warp * 16 + lane / 4 + 8 h
// of each 64-dim half, query rows 2 quad + e) and their running fold in registers.
template <class T, int HD, int TILE_BYTES, int NB>
__device__ __forceinline__ void run_swapped_item(const TcAttentionParams& p, const TcItem& it,
                                                 int group, const TcRing<TILE_BYTES, NB>& ring,
                                                 uint32_t q_addr, uint32_t q_empty, int& use,
                                                 unsigned char* scratch, uint32_t scratch_addr) {
  constexpr int kKeys = TcShape<HD, 1>::kKeys;
  constexpr int kSHalves = kKeys / 64, kOHalves = HD / 64;
  using X = TcSwapScratch<kKeys>;
  const int tid = threadIdx.x - 128;
  const int warp = tid / 32, lane = tid & 31, quad = lane & 3, srow = lane >> 2;
  const float c = p.scale * kTcLog2e;
  float* const s_rows = reinterpret_cast<float*>(scratch + X::kSOff);
  float* const row_vals = reinterpret_cast<float*>(scratch + X::kRowOff);  // [4][8]
  float* const alpha_of = row_vals;
  float* const wa_of = row_vals + 8;
  float* const wb_of = row_vals + 16;
  float* const total_of = row_vals + 24;
  const int rows_used = it.u.num_tokens * group;
  // This thread's O^T columns (query rows 2 quad + e), and warp 0's softmax row (srow).
  int col_pos[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const int r = 2 * quad + e;
    col_pos[e] = r < rows_used ? it.u.first_pos + r / group : -1;
  }
  const int srow_pos = srow < rows_used ? it.u.first_pos + srow / group : -1;
  float run_m = -INFINITY, run_l = 0.0f;  // warp 0: query row srow's running state
  float run[kOHalves][4];
#pragma unroll
  for (int hf = 0; hf < kOHalves; ++hf) {
#pragma unroll
    for (int i = 0; i < 4; ++i) run[hf][i] = 0.0f;
  }
  // The products' shared-memory descriptors, each built once and moved on by its offset
  // (desc_advance) rather than encoded for every wgmma: a decode CTA's walk is bound by its
  // warps' instruction latency, integer work around the wgmmas being most of a tile's
  // instructions (ncu, H100, KV 1000 batch 1: reports/h100/decode-walk-2026-12-07).
  const uint64_t k_desc0 = smem_desc(ring.tile(0));
  const uint64_t v_desc0 = smem_desc_sw128(ring.tile(0), kKeys * 128, 1024);
  const uint64_t q_desc0 = smem_desc(q_addr);
  const uint64_t p_desc0 = smem_desc(scratch_addr);
  const int last_split = it.u.split_end - 1;
  for (int j = it.u.split_begin; j < it.u.split_end; ++j) {
    const int lo = tc_split_lo(j, p.split_size);
    const int hi = tc_split_hi(j, p.split_size, it.last_pos);
    const int lim = srow_pos >= 0 ? min(srow_pos + 1, (j + 1) * p.split_size) : -1;
    float m = -INFINITY, l = 0.0f;  // warp 0
    float o[kOHalves][4];
#pragma unroll
    for (int hf = 0; hf < kOHalves; ++hf) zero_accumulators(o[hf]);
    for (int t0 = lo; t0 < hi; t0 += kKeys) {
      // ---- S^T = K Q^T
      const int sk = use % NB;
      mbar_wait(ring.full(sk), (use / NB) & 1);
      fence_proxy_async();
      float st[kSHalves][4];
#pragma unroll
      for (int hf = 0; hf < kSHalves; ++hf) zero_accumulators(st[hf]);
      wgmma_fence();
      const uint64_t dk0 = desc_advance(k_desc0, sk * (TILE_BYTES >> 4));
#pragma unroll
      for (int hf = 0; hf < kSHalves; ++hf) {
#pragma unroll
        for (int kk = 0; kk < HD / 16; ++kk) {
          const uint64_t dk =
              desc_advance(dk0, (hf * 64 * 128 + (kk / 4) * (kKeys * 128) + (kk % 4) * 32) >> 4);
          const uint64_t dq = desc_advance(q_desc0, ((kk / 4) * (64 * 128) + (kk % 4) * 32) >> 4);
          WgmmaN8<T, false>::mma(st[hf], dk, dq);
        }
      }
      wgmma_commit();
      wgmma_wait<0>();
#pragma unroll
      for (int hf = 0; hf < kSHalves; ++hf) fence_operands(st[hf]);
      if (lane == 0) {
        mbar_arrive(ring.empty(sk));
        if (j == last_split && t0 + kKeys >= hi) mbar_arrive(q_empty);
      }
      ++use;
#pragma unroll
      for (int hf = 0; hf < kSHalves; ++hf) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int key = hf * 64 + warp * 16 + srow + 8 * (i >> 1);
          s_rows[(2 * quad + (i & 1)) * X::kSStride + key] = st[hf][i];
        }
      }
      named_barrier(3, 128);
      // ---- the online-softmax step, by warp 0 in the 64-row form's register order
      if (warp == 0) {
        float sv[kKeys / 4];
#pragma unroll
        for (int jb = 0; jb < kKeys / 8; ++jb) {
          const float2 v =
              *reinterpret_cast<const float2*>(s_rows + srow * X::kSStride + 8 * jb + 2 * quad);
          sv[2 * jb] = v.x;
          sv[2 * jb + 1] = v.y;
        }
        const float alpha = tc_softmax_step<kKeys, 2>(sv, t0, lim, quad, c, m, l);
        // P rounded to T, pairs of keys 8 jb + 2 quad + {0, 1}: word quad of 16-byte chunk jb.
#pragma unroll
        for (int jb = 0; jb < kKeys / 8; ++jb) {
          *reinterpret_cast<uint32_t*>(scratch + tc_swizzled_offset(srow, jb, 8) + 4 * quad) =
              pack2<T>(sv[2 * jb], sv[2 * jb + 1]);
        }
        if (quad == 0) alpha_of[srow] = alpha;
        fence_proxy_async();  // P, stored by this thread, is read by the wgmma below
      }
      named_barrier(3, 128);
      const float alpha[2] = {alpha_of[2 * quad], alpha_of[2 * quad + 1]};
#pragma unroll
      for (int hf = 0; hf < kOHalves; ++hf) {
#pragma unroll
        for (int i = 0; i < 4; ++i) o[hf][i] = __fmul_rn(o[hf][i], alpha[i & 1]);
      }
      // ---- O^T += V^T P^T
      const int sv_slot = use % NB;
      mbar_wait(ring.full(sv_slot), (use / NB) & 1);
      fence_proxy_async();
#pragma unroll
      for (int hf = 0; hf < kOHalves; ++hf) fence_operands(o[hf]);
      wgmma_fence();
      const uint64_t dv0 = desc_advance(v_desc0, sv_slot * (TILE_BYTES >> 4));
#pragma unroll
      for (int hf = 0; hf < kOHalves; ++hf) {
#pragma unroll
        for (int kc = 0; kc < kKeys / 16; ++kc) {
          const uint64_t dv = desc_advance(dv0, (hf * (kKeys * 128) + kc * 16 * 128) >> 4);
          const uint64_t dp = desc_advance(p_desc0, ((kc / 4) * (8 * 128) + (kc % 4) * 32) >> 4);
          WgmmaN8<T, true>::mma(o[hf], dv, dp);
        }
      }
      wgmma_commit();
      wgmma_wait<0>();
#pragma unroll
      for (int hf = 0; hf < kOHalves; ++hf) fence_operands(o[hf]);
      if (lane == 0) mbar_arrive(ring.empty(sv_slot));
      ++use;
    }
    // ---- the split's state
    if (warp == 0) l = tc_quad_sum(l);
    if (!it.u.partial) {
      if (warp == 0) {
        const TcFoldWeights w = tc_fold_weights(run_m, m, c);
        run_l = tc_fold_value(run_l, l, w);
        run_m = w.m;
        if (quad == 0) {
          wa_of[srow] = w.wa;
          wb_of[srow] = w.wb;
          total_of[srow] = run_l;
        }
      }
      named_barrier(3, 128);
      TcFoldWeights w[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) w[e] = {0.0f, wa_of[2 * quad + e], wb_of[2 * quad + e]};
#pragma unroll
      for (int hf = 0; hf < kOHalves; ++hf) {
#pragma unroll
        for (int i = 0; i < 4; ++i) run[hf][i] = tc_fold_value(run[hf][i], o[hf][i], w[i & 1]);
      }
    } else {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        if (col_pos[e] < lo) continue;  // padding (-1), or a token before this split
        const int r = 2 * quad + e;
        const int token_row = it.u.q_row + r / group;
        const int64_t sh = (static_cast<int64_t>(p.row_slot[token_row]) + j) * p.num_heads +
                           it.kvh * group + r % group;
#pragma unroll
        for (int hf = 0; hf < kOHalves; ++hf) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            p.partial_o[sh * HD + hf * 64 + warp * 16 + srow + 8 * h] = o[hf][2 * h + e];
          }
        }
      }
      if (warp == 0 && quad == 0 && srow_pos >= lo) {
        const int64_t sh =
            (static_cast<int64_t>(p.row_slot[it.u.q_row + srow / group]) + j) * p.num_heads +
            it.kvh * group + srow % group;
        *reinterpret_cast<float2*>(p.partial_ml + 2 * sh) = make_float2(m, l);
      }
    }
  }
  if (!it.u.partial) {
    // ---- out = O / L, rounded once (total_of: written before the last fold's barrier)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      if (col_pos[e] < 0) continue;
      const int r = 2 * quad + e;
      const float total = total_of[r];
      const int64_t oi =
          (static_cast<int64_t>(it.u.q_row + r / group) * p.num_heads + it.kvh * group +
           r % group) * HD;
#pragma unroll
      for (int hf = 0; hf < kOHalves; ++hf) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          tc_store_out(p, oi + hf * 64 + warp * 16 + srow + 8 * h,
                    __fdiv_rn(run[hf][2 * h + e], total));
        }
      }
    }
  }
}

#endif  // NVDET_SM90A_DEVICE

}  // namespace nvdet::kernels
