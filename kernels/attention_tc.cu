// Tensor-core attention over a paged KV cache (sm_90a): the plan is stated in attention_tc.cuh;
// this file is its execution.
//
// A CTA is one producer warpgroup and CONSUMERS consumer warpgroups of 64 query rows each. The
// CTA's rows are the GQA group's heads of consecutive query tokens (row r: token r / group, head
// r % group of the unit's KV head), so every K and V tile is read once for the whole group. CTAs
// are persistent: each walks its list of (unit, KV head) items (the host balances the lists by
// their tiles where the items' lengths differ, as in a causal prefill), else the items
// blockIdx.x, blockIdx.x + gridDim.x, ...
//  - producer: cp.async gathers of Q and of K and V tiles through the page table into
//    128-byte-swizzled shared memory (keys past what the CTA needs zero-filled), or, for a K/V
//    tile with no such keys where the page size allows it (p.kv_tma), TMA boxes of whole pages
//    into the same layout; completing on mbarriers of a ring of NB tile buffers (K and V tiles
//    alternate in the ring); Q in two buffers where that costs no ring slot, so the next item's
//    Q and first tiles load while the consumers finish the current item (decode items are one
//    split of a few tiles); each tile's page-table entries are read one tile ahead;
//  - consumers: per tile, S = Q K^T (wgmma, A and B from shared memory), the online-softmax step
//    in registers, O += P V (wgmma, P from registers, V read transposed from shared memory).
//  - consumers of an item of at most 8 query rows, with one warpgroup (decode): the swapped form
//    (attention_tc_swapped.cuh): S^T = K Q^T and O^T += V^T P^T on m64n8k16, the softmax step by
//    warp 0.
// Split ends: a fused unit folds the split's state into a running state kept in shared memory
// (each thread its own elements); a partial unit writes the state for the merge kernel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "kernels/attention_tc.cuh"
#include "kernels/attention_tc_copy.cuh"
#include "kernels/attention_tc_layout.cuh"
#include "kernels/attention_tc_math.cuh"
#include "kernels/attention_tc_swapped.cuh"
#include "kernels/attention_tc_wgmma.cuh"
#include "kernels/gemm_wgmma_instr.cuh"
#include "kernels/kernel_image.cuh"
#include "kernels/sm90_async.cuh"
#include "kernels/tensor_map.cuh"
#include "kernels/vec_io.cuh"

namespace nvdet::kernels {
namespace {

#ifdef NVDET_SM90A_DEVICE

// The merge of one split-parallel token row of KV head kvh, run in two places: inside the
// attention kernel by the CTA that wrote the row's last split, and in the merge kernel (a group
// of one head, kvh then the head). For each of the group's heads and each element, splits
// 0 .. pos / S are folded in ascending order with the plan's fold, then O / L is rounded once.
// The splits' states are staged in shared memory a chunk at a time (cp.async through L2: other
// SMs wrote them; no registers held while they are in flight), then each thread folds up to two
// quads of four consecutive elements of one head, one (m, l) pair serving four folds. `stage` is
// the running-state region in the attention kernel (a partial item does not use it), and static
// shared memory in the merge kernel. At most two quads a thread: group * HD <= 8 * THREADS
// (attention_tc_fold_in_kernel for the attention kernel; HD <= 256 for the merge kernel's 64
// threads).
template <int HD, int THREADS, int STAGE_FLOATS>
__device__ __forceinline__ void fold_row_in_cta(const TcAttentionParams& p, int token_row, int pos,
                                                int kvh, int group, int thread, float* stage,
                                                uint32_t stage_addr) {
  const int splits = pos / p.split_size + 1;
  const int64_t first = p.row_slot[token_row];
  const float c = p.scale * kTcLog2e;
  const int row_floats = group * HD;  // one split's O for the group's heads (consecutive heads)
  const int quads = row_floats / 4;
  const int chunk = STAGE_FLOATS / (row_floats + 2 * group);
  float2* const ml_stage = reinterpret_cast<float2*>(stage + chunk * row_floats);
  const float* const o_src = p.partial_o + (first * p.num_heads + kvh * group) * HD;
  const float2* const ml_src =
      reinterpret_cast<const float2*>(p.partial_ml) + first * p.num_heads + kvh * group;
  const int64_t o_step = static_cast<int64_t>(p.num_heads) * HD;  // one split further
  float run_m[2], run_l[2], run_o[2][4];
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    run_m[k] = -INFINITY;
    run_l[k] = 0.0f;
#pragma unroll
    for (int e = 0; e < 4; ++e) run_o[k][e] = 0.0f;
  }
  for (int j0 = 0; j0 < splits; j0 += chunk) {
    const int n = min(chunk, splits - j0);
    for (int i = thread; i < n * quads; i += THREADS) {
      const int u = i / quads;
      cp_async16_or_zero(stage_addr + 16 * i, o_src + (j0 + u) * o_step + 4 * (i - u * quads),
                         false);
    }
    for (int i = thread; i < n * group; i += THREADS) {
      const int u = i / group;
      ml_stage[i] = __ldcg(ml_src + static_cast<int64_t>(j0 + u) * p.num_heads + (i - u * group));
    }
    cp_async_wait_all();
    named_barrier(2, THREADS);
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int q = thread + k * THREADS;
      if (q < quads) {
        const int g = q / (HD / 4);
        for (int u = 0; u < n; ++u) {
          const float2 ml = ml_stage[u * group + g];
          const float4 o = *reinterpret_cast<const float4*>(stage + u * row_floats + 4 * q);
          const TcFoldWeights w = tc_fold_weights(run_m[k], ml.x, c);
          run_l[k] = tc_fold_value(run_l[k], ml.y, w);
          run_o[k][0] = tc_fold_value(run_o[k][0], o.x, w);
          run_o[k][1] = tc_fold_value(run_o[k][1], o.y, w);
          run_o[k][2] = tc_fold_value(run_o[k][2], o.z, w);
          run_o[k][3] = tc_fold_value(run_o[k][3], o.w, w);
          run_m[k] = w.m;
        }
      }
    }
    named_barrier(2, THREADS);  // the stage is read before the next chunk lands
  }
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const int q = thread + k * THREADS;
    if (q < quads) {
      const int head = kvh * group + q / (HD / 4);
      const int64_t oi =
          (static_cast<int64_t>(token_row) * p.num_heads + head) * HD + 4 * (q % (HD / 4));
#pragma unroll
      for (int e = 0; e < 4; ++e) tc_store_out(p, oi + e, __fdiv_rn(run_o[k][e], run_l[k]));
    }
  }
}

#endif  // NVDET_SM90A_DEVICE

// FOLD: the split-parallel rows are folded by their last CTA (p.merge_count set). A template
// parameter so that the kernels without it carry none of its code or registers (with it compiled
// into every kernel, head_dim 128 with one warpgroup took 255 registers against 242).
template <class T, int HD, int CONSUMERS, bool FOLD>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
    attention_tc_kernel(const __grid_constant__ TcAttentionParams p) {
#ifdef NVDET_SM90A_DEVICE
  using S = TcShape<HD, CONSUMERS>;
  constexpr int kKeys = S::kKeys, kNb = S::kNbUsed, kRows = S::kRows;
  constexpr int kChunks = HD / 8;  // 16-byte chunks per row
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const uint32_t base = smem_addr(smem_raw);
  if ((base & 1023u) != 0) __trap();
  const uint32_t ring = base + S::kQBufs * S::kQBytes;
  const uint32_t run_smem = ring + kNb * S::kTileBytes;
  const uint32_t off_smem = run_smem + S::kRunBytes;
  const uint32_t flag_smem = off_smem + S::kOffBytes;
  const uint32_t bars = flag_smem + S::kFlagBytes;
  auto q_smem = [&](int b) { return base + b * S::kQBytes; };
  auto q_full = [&](int b) { return bars + 8 * b; };
  auto q_empty = [&](int b) { return bars + 16 + 8 * b; };
  const TcRing<S::kTileBytes, kNb> ring_view{ring, bars + 32};
  auto full_bar = [&](int s) { return ring_view.full(s); };
  auto empty_bar = [&](int s) { return ring_view.empty(s); };
  auto tile_smem = [&](int s) { return ring_view.tile(s); };
  // Generic pointers to the parts the threads read and write with ordinary instructions.
  unsigned char* const run_o_bytes = smem_raw + (run_smem - base);
  float* const run_o = reinterpret_cast<float*>(run_o_bytes);
  int64_t* const key_off = reinterpret_cast<int64_t*>(smem_raw + (off_smem - base));
  int* const fold_here = reinterpret_cast<int*>(smem_raw + (flag_smem - base));

  const int group = p.num_heads / p.num_kv_heads;
  const int num_items = p.num_units * p.num_kv_heads;
  const int warpgroup = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    for (int b = 0; b < S::kQBufs; ++b) {
      mbar_init(q_full(b), 128);
      mbar_init(q_empty(b), 4 * CONSUMERS);
    }
    for (int s = 0; s < kNb; ++s) {
      mbar_init(full_bar(s), 128);
      mbar_init(empty_bar(s), 4 * CONSUMERS);
    }
    mbar_init_fence();
  }
  __syncthreads();
  // The merge kernel (split-parallel rows) is this grid's programmatic dependent: it may be
  // scheduled from now on, and its griddepcontrol.wait holds it until this grid has finished and
  // its partial states are visible, so only its launch overlaps this kernel.
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");

  if (warpgroup == 0) {
    // ---------------------------------------------------------------- producer
    if constexpr (CONSUMERS == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n");
    const int t = threadIdx.x;
    const T* q = static_cast<const T*>(p.q);
    const T* kv[2] = {static_cast<const T*>(p.k), static_cast<const T*>(p.v)};
    const int64_t token_stride = static_cast<int64_t>(p.num_kv_heads) * HD;
    const bool pow2 = (p.page_size & (p.page_size - 1)) == 0;
    const int shift = __ffs(p.page_size) - 1;
    int use = 0, items_done = 0, tiles_done = 0;
    constexpr TcTileCopy kCopy(HD);
    static_assert(128 % kChunks == 0 && kCopy.passes(kKeys) % 8 == 0, "whole passes over a tile");
    const int copy_chunk = kCopy.chunk(t);
    if (t == 0 && p.kv_tma) {
      tma_prefetch_map(&p.k_map);
      tma_prefetch_map(&p.v_map);
    }
    for (int item; (item = tc_cta_item(p, items_done, num_items)) >= 0; ++items_done) {
      const TcItem it = tc_load_item(p, item);
      const int32_t* pages = p.page_table + static_cast<int64_t>(it.u.seq) * p.max_pages_per_seq;
      const int qb = items_done % S::kQBufs;
      // Q: row r is token r / group, head r % group of this KV head; rows past the unit's tokens
      // are zero.
      mbar_wait(q_empty(qb), ((items_done / S::kQBufs) & 1) ^ 1);
      // Only the unit's rows (all of them in prefill, the group's heads in decode) divide by the
      // group.
      const int q_rows = it.u.num_tokens * group;
#pragma unroll
      for (int n = 0; n < kCopy.passes(kRows); ++n) {
        const int r = kCopy.row(t, n);
        const bool ok = r < q_rows;
        const T* src = q;
        if (ok) {
          const int token = r / group;
          src = q + (static_cast<int64_t>(it.u.q_row + token) * p.num_heads + it.kvh * group +
                     (r - token * group)) * HD + copy_chunk * 8;
        }
        cp_async16_or_zero(q_smem(qb) + tc_swizzled_offset(r, copy_chunk, kRows), src, !ok);
      }
      cp_async_arrive(q_full(qb));
      // The item's tiles in plan order; thread t < kKeys owns key t0 + t of each. Its page-table
      // entry for the next tile is loaded before this tile's copies are issued, so the copies of
      // the next tile do not wait for that load.
      const auto page_of = [&](int key) {
        return pages[pow2 ? (key >> shift) : (key / p.page_size)];
      };
      int j = it.u.split_begin;
      int t0 = tc_split_lo(j, p.split_size);
      int hi = tc_split_hi(j, p.split_size, it.last_pos);
      int32_t page = t < kKeys && t0 + t < hi ? page_of(t0 + t) : 0;
      while (j < it.u.split_end) {
        int nj = j, nt0 = t0 + kKeys, nhi = hi;
        if (nt0 >= hi) {
          ++nj;
          nt0 = tc_split_lo(nj, p.split_size);
          nhi = tc_split_hi(nj, p.split_size, it.last_pos);
        }
        const int32_t next_page = nj < it.u.split_end && t < kKeys && nt0 + t < nhi ? page_of(nt0 + t) : 0;
        // The tile's key offsets (element index of (key, kvh, 0)), -1 past `hi`; double
        // buffered, so one barrier per tile orders both the writes and the previous reads.
        int64_t* offs = key_off + (tiles_done & 1) * kKeys;
        if (t < kKeys) {
          const int key = t0 + t;
          int64_t off = -1;
          if (key < hi) {
            const int slot = pow2 ? (key & (p.page_size - 1)) : (key % p.page_size);
            off = (static_cast<int64_t>(page) * p.page_size + slot) * token_stride +
                  static_cast<int64_t>(it.kvh) * HD;
          }
          offs[t] = off;
        }
        named_barrier(1, 128);
        // Whole pages by TMA where every key of the tile is below `hi` (no zero fill needed); the
        // page size divides the tile width and the split size, so the tile starts on a page.
        const bool tma_tile = p.kv_tma && t0 + kKeys <= hi;
#pragma unroll
        for (int operand = 0; operand < 2; ++operand, ++use) {
          const int s = use % kNb;
          mbar_wait(empty_bar(s), ((use / kNb) & 1) ^ 1);
          const uint32_t dst = tile_smem(s);
          if (tma_tile) {
            if (t < kKeys && (t & (p.page_size - 1)) == 0) {
              // This thread's arrival carries the page's bytes; the others arrive with none.
              mbar_expect_tx(full_bar(s), static_cast<uint32_t>(HD * sizeof(T)) * p.page_size);
              const CUtensorMap* map = operand == 0 ? &p.k_map : &p.v_map;
#pragma unroll
              for (int cb = 0; cb < HD / 64; ++cb) {
                tma_load_4d(dst + tc_page_box_offset(t, cb, kKeys), map, full_bar(s), cb * 64,
                            it.kvh, 0, page);
              }
            } else {
              mbar_arrive(full_bar(s));
            }
            continue;
          }
          const T* const base = kv[operand] + copy_chunk * 8;
          // The thread's chunk is fixed for the tile (attention_tc_copy.cuh), and its rows'
          // offsets are read eight at a time before their copies are issued (a generic
          // i / kChunks walk took ~40 dependent instructions a copy and left the consumers
          // waiting for K tiles).
#pragma unroll
          for (int n0 = 0; n0 < kCopy.passes(kKeys); n0 += 8) {
            int64_t off[8];
#pragma unroll
            for (int k = 0; k < 8; ++k) off[k] = offs[kCopy.row(t, n0 + k)];
#pragma unroll
            for (int k = 0; k < 8; ++k) {
              const int r = kCopy.row(t, n0 + k);
              cp_async16_or_zero(dst + tc_swizzled_offset(r, copy_chunk, kKeys), base + max(off[k], int64_t{0}),
                                 off[k] < 0);
            }
          }
          cp_async_arrive(full_bar(s));
        }
        page = next_page;
        j = nj;
        t0 = nt0;
        hi = nhi;
        ++tiles_done;
      }
    }
  } else {
    // ---------------------------------------------------------------- consumers
    if constexpr (CONSUMERS == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 224;\n");
    const int wg = warpgroup - 1;
    const int tid = threadIdx.x - 128 * warpgroup;  // 0..127 inside the warpgroup
    const int warp = tid / 32, lane = tid & 31;
    const int quad = lane & 3;
    const float c = p.scale * kTcLog2e;
    // This thread's two rows of the CTA block, and its accumulator columns 8 j + 2 quad + {0, 1}.
    const int row0 = wg * 64 + warp * 16 + (lane >> 2);
    const int rows[2] = {row0, row0 + 8};
    float* const my_run = run_o + wg * 128 * S::kORegs + tid;  // element i at my_run[i * 128]
    int use = 0, items_done = 0;
    for (int item; (item = tc_cta_item(p, items_done, num_items)) >= 0; ++items_done) {
      const TcItem it = tc_load_item(p, item);
      int pos[2];
      bool valid[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int token = rows[h] / group;
        valid[h] = token < it.u.num_tokens;
        pos[h] = valid[h] ? it.u.first_pos + token : -1;
      }
      // The running-state region is the swapped form's scratch: no thread writes it for this
      // item before every thread is done with it for the last one.
      if constexpr (CONSUMERS == 1) named_barrier(3, 128);
      const int qb = items_done % S::kQBufs;
      mbar_wait(q_full(qb), (items_done / S::kQBufs) & 1);
      fence_proxy_async();
      if (CONSUMERS == 1 && p.swap_small_blocks &&
          it.u.num_tokens * group <= attention_tc_small_block_rows) {
        static_assert(TcSwapScratch<kKeys>::kBytes <= S::kRunBytes,
                      "the swapped form's scratch fits the running-state region");
        run_swapped_item<T, HD>(p, it, group, ring_view, q_smem(qb), q_empty(qb), use, run_o_bytes,
                                run_smem);
      } else {
        float run_m[2] = {-INFINITY, -INFINITY}, run_l[2] = {0.0f, 0.0f};
        // The products' descriptors, built once and moved on by their offsets (desc_advance).
        const uint64_t q_desc0 = smem_desc(q_smem(qb) + wg * 64 * 128);
        const uint64_t k_desc0 = smem_desc(tile_smem(0));
        const uint64_t v_desc0 = smem_desc_sw128(tile_smem(0), kKeys * 128, 1024);
        if (!it.u.partial) {
#pragma unroll
          for (int i = 0; i < S::kORegs; ++i) my_run[i * 128] = 0.0f;
        }
        const int last_split = it.u.split_end - 1;
        for (int j = it.u.split_begin; j < it.u.split_end; ++j) {
          const int lo = tc_split_lo(j, p.split_size);
          const int hi = tc_split_hi(j, p.split_size, it.last_pos);
          const int split_end_key = (j + 1) * p.split_size;
          // A key k is in row h's split range when k < lim[h] (its own position + 1, or the split
          // end); rows that are padding have lim -1 (their scores reach nothing: tc_softmax_step).
          int lim[2];
#pragma unroll
          for (int h = 0; h < 2; ++h) lim[h] = valid[h] ? min(pos[h] + 1, split_end_key) : -1;
          float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
          float o[S::kORegs];
          zero_accumulators(o);
          for (int t0 = lo; t0 < hi; t0 += kKeys) {
            // ---- S = Q K^T
            const int sk = use % kNb;
            mbar_wait(full_bar(sk), (use / kNb) & 1);
            fence_proxy_async();
            float s[S::kSRegs];
            zero_accumulators(s);
            wgmma_fence();
            const uint64_t dk0 = desc_advance(k_desc0, sk * (S::kTileBytes >> 4));
#pragma unroll
            for (int kk = 0; kk < HD / 16; ++kk) {
              const uint64_t dq =
                  desc_advance(q_desc0, ((kk / 4) * (kRows * 128) + (kk % 4) * 32) >> 4);
              const uint64_t dk =
                  desc_advance(dk0, ((kk / 4) * (kKeys * 128) + (kk % 4) * 32) >> 4);
              Wgmma<kKeys, T>::mma(s, dq, dk);
            }
            wgmma_commit();
            wgmma_wait<0>();
            fence_operands(s);
            if (lane == 0) {
              mbar_arrive(empty_bar(sk));
              if (j == last_split && t0 + kKeys >= hi) mbar_arrive(q_empty(qb));
            }
            ++use;
            // ---- the online-softmax step (one arithmetic body for every tile and form)
            float alpha[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              alpha[h] = tc_softmax_step<kKeys, 4>(s + 2 * h, t0, lim[h], quad, c, m[h], l[h]);
            }
            // O scaled by alpha, skipped where both rows' alpha is exactly 1 (an unchanged max,
            // most tiles of a long row): o * 1 is o, and the skip saves a tenth of a tile's
            // instructions.
            if (alpha[0] != 1.0f || alpha[1] != 1.0f) {
#pragma unroll
              for (int i = 0; i < S::kORegs; ++i) o[i] = __fmul_rn(o[i], alpha[(i >> 1) & 1]);
            }
            uint32_t pa[kKeys / 16][4];
            tc_pack_p<T, kKeys>(s, pa);
            // ---- O += P V
            const int sv = use % kNb;
            mbar_wait(full_bar(sv), (use / kNb) & 1);
            fence_proxy_async();
            fence_operands(o);
            wgmma_fence();
            const uint64_t dv0 = desc_advance(v_desc0, sv * (S::kTileBytes >> 4));
#pragma unroll
            for (int kc = 0; kc < kKeys / 16; ++kc) {
              WgmmaRegA<HD, T>::mma(o, pa[kc], desc_advance(dv0, (kc * 16 * 128) >> 4));
            }
            wgmma_commit();
            wgmma_wait<0>();
            fence_operands(o);
            if (lane == 0) mbar_arrive(empty_bar(sv));
            ++use;
          }
          // ---- the split's state: l summed over the quad (butterfly: every lane the same bits)
#pragma unroll
          for (int h = 0; h < 2; ++h) l[h] = tc_quad_sum(l[h]);
          if (!it.u.partial) {
            TcFoldWeights w[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              w[h] = tc_fold_weights(run_m[h], m[h], c);
              run_l[h] = tc_fold_value(run_l[h], l[h], w[h]);
              run_m[h] = w[h].m;
            }
#pragma unroll
            for (int i = 0; i < S::kORegs; ++i) {
              my_run[i * 128] = tc_fold_value(my_run[i * 128], o[i], w[(i >> 1) & 1]);
            }
          } else {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              if (!valid[h] || pos[h] < lo) continue;
              const int token_row = it.u.q_row + rows[h] / group;
              const int head = it.kvh * group + rows[h] % group;
              const int64_t slot = static_cast<int64_t>(p.row_slot[token_row]) + j;
              const int64_t sh = slot * p.num_heads + head;
              float* dst = p.partial_o + sh * HD + 2 * quad;
#pragma unroll
              for (int jb = 0; jb < HD / 8; ++jb) {
                *reinterpret_cast<float2*>(dst + 8 * jb) =
                    make_float2(o[4 * jb + 2 * h], o[4 * jb + 2 * h + 1]);
              }
              if (quad == 0) {
                *reinterpret_cast<float2*>(p.partial_ml + 2 * sh) = make_float2(m[h], l[h]);
              }
            }
          }
        }
        if (!it.u.partial) {
          // ---- out = O / L, rounded once
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            if (!valid[h]) continue;
            const int token_row = it.u.q_row + rows[h] / group;
            const int head = it.kvh * group + rows[h] % group;
            const int64_t oi =
                (static_cast<int64_t>(token_row) * p.num_heads + head) * HD + 2 * quad;
            const float total = run_l[h];
#pragma unroll
            for (int jb = 0; jb < HD / 8; ++jb) {
              const float a = __fdiv_rn(my_run[(4 * jb + 2 * h) * 128], total);
              const float b = __fdiv_rn(my_run[(4 * jb + 2 * h + 1) * 128], total);
              if (p.out_dtype == ElemType::kBF16) {
                tc_store_pair(static_cast<__nv_bfloat16*>(p.out) + oi + 8 * jb, a, b);
              } else if (p.out_dtype == ElemType::kFP16) {
                tc_store_pair(static_cast<__half*>(p.out) + oi + 8 * jb, a, b);
              } else {
                tc_store_pair(static_cast<float*>(p.out) + oi + 8 * jb, a, b);
              }
            }
          }
        }
      }
      if (FOLD && it.u.partial) {
        // ---- the fold by the last CTA of each row: this item's states are published (fence,
        // then the consumers' barrier), each of its tokens counts one more split written, and
        // the item that writes a token's last split folds the token's splits in ascending order.
        const int ctid = threadIdx.x - 128;
        constexpr int kConsumerThreads = 128 * CONSUMERS;
        __threadfence();
        named_barrier(2, kConsumerThreads);
        if (ctid < it.u.num_tokens) {
          const int token_pos = it.u.first_pos + ctid;
          int last = 0;
          if (token_pos >= tc_split_lo(it.u.split_begin, p.split_size)) {
            int* const count =
                p.merge_count + static_cast<int64_t>(it.u.q_row + ctid) * p.num_kv_heads + it.kvh;
            if (atomicAdd(count, 1) == token_pos / p.split_size) {
              atomicExch(count, 0);  // every split written: zero again for the next launch
              last = 1;
            }
          }
          fold_here[ctid] = last;
        }
        __threadfence();  // the other CTAs' states, published before their counts, are read after
        named_barrier(2, kConsumerThreads);
        for (int token = 0; token < it.u.num_tokens; ++token) {
          if (fold_here[token]) {
            fold_row_in_cta<HD, kConsumerThreads, S::kRunBytes / 4>(
                p, it.u.q_row + token, it.u.first_pos + token, it.kvh, group, ctid, run_o,
                run_smem);
          }
        }
      }
    }
  }
#else
  __trap();  // never launched: attention_tc_available() is false without sm_90a code
#endif
}

// The merge of split-parallel rows, one block per (token row, head): fold_row_in_cta with a
// group of one head, so its reads and folds are the in-kernel fold's (splits 0 .. pos / S in
// ascending order, then O / L rounded once). Every thread's copies of a chunk of splits' states
// are in flight together before any fold, so a row of up to kMergeStageFloats / (HD + 2) splits
// (86 at head_dim 128: KV 44032 at the default split) costs one round trip to memory. The
// register form it replaced, each thread loading 16 splits' states ahead of folding them, took
// four round trips for KV 32768 (10.3 us under ncu on an H100, against 4.5 us for cuDNN's
// reduction); loading 64 at a time was slower still (245 registers a thread).
constexpr int kMergeThreads = 64;
template <int HD>
__global__ void __launch_bounds__(kMergeThreads)
    attention_tc_merge_kernel(const __grid_constant__ TcAttentionParams p) {
#ifdef NVDET_SM90A_DEVICE
  // Launched as the attention grid's programmatic dependent (launch_merge): nothing is read
  // before that grid has finished and its writes are visible.
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  constexpr int kMergeStageFloats = 11264;  // 44 KiB of static shared memory
  __shared__ __align__(16) float stage[kMergeStageFloats];
  const int r = blockIdx.x;
  fold_row_in_cta<HD, kMergeThreads, kMergeStageFloats>(p, p.merge_rows[r], p.merge_pos[r],
                                                        static_cast<int>(blockIdx.y), 1,
                                                        threadIdx.x, stage, smem_addr(stage));
#else
  __trap();  // never launched: attention_tc_available() is false without sm_90a code
#endif
}

template <class T, int HD, int CONSUMERS, bool FOLD>
cudaError_t launch_units(const TcAttentionParams& p, cudaStream_t stream) {
  using S = TcShape<HD, CONSUMERS>;
  auto kernel = attention_tc_kernel<T, HD, CONSUMERS, FOLD>;
  static const cudaError_t attr =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, S::kSmemBytes);
  if (attr != cudaSuccess) return attr;
  const int64_t items = static_cast<int64_t>(p.num_units) * p.num_kv_heads;
  if (items > INT32_MAX) return cudaErrorInvalidValue;
  int ctas = p.ctas;
  if (p.cta_item_begin != nullptr && (ctas <= 0 || p.cta_items == nullptr)) return cudaErrorInvalidValue;
  if (ctas <= 0) {
    int device = 0, sms = 0;
    cudaError_t st = cudaGetDevice(&device);
    if (st == cudaSuccess) st = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (st != cudaSuccess) return st;
    ctas = sms;
  }
  // With item lists every CTA is launched (a list may be empty); else no more CTAs than items.
  const int grid = p.cta_item_begin != nullptr ? ctas : static_cast<int>(items < ctas ? items : ctas);
  kernel<<<grid, S::kThreads, S::kSmemBytes, stream>>>(p);
  return cudaGetLastError();
}

template <class T, int HD, bool FOLD>
cudaError_t launch_consumers(const TcAttentionParams& p, cudaStream_t stream) {
  if constexpr (HD == 256) {
    return launch_units<T, HD, 1, FOLD>(p, stream);
  } else {
    return p.consumers == 2 ? launch_units<T, HD, 2, FOLD>(p, stream)
                            : launch_units<T, HD, 1, FOLD>(p, stream);
  }
}

template <class T, int HD>
cudaError_t launch_head_dim(const TcAttentionParams& p, cudaStream_t stream) {
  return p.merge_count != nullptr ? launch_consumers<T, HD, true>(p, stream)
                                  : launch_consumers<T, HD, false>(p, stream);
}

template <class T>
cudaError_t launch_typed(const TcAttentionParams& p, cudaStream_t stream) {
  switch (p.head_dim) {
    case 64: return launch_head_dim<T, 64>(p, stream);
    case 128: return launch_head_dim<T, 128>(p, stream);
    case 256: return launch_head_dim<T, 256>(p, stream);
    default: break;
  }
  return cudaErrorInvalidValue;
}

// The merge as a programmatic dependent launch of the attention grid before it on `stream`: its
// blocks are scheduled while the attention CTAs still run and wait in griddepcontrol.wait, so
// the launch gap between the two kernels leaves a split-parallel decode's time.
cudaError_t launch_merge(const TcAttentionParams& p, cudaStream_t stream) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(p.num_merge_rows), static_cast<unsigned>(p.num_heads));
  config.blockDim = dim3(kMergeThreads);
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attr;
  // Without the attribute the launch waits for the attention grid as any stream-ordered launch
  // does, and griddepcontrol.wait returns at once.
  config.numAttrs = p.dependent_merge ? 1 : 0;
  switch (p.head_dim) {
    case 64: return cudaLaunchKernelEx(&config, attention_tc_merge_kernel<64>, p);
    case 128: return cudaLaunchKernelEx(&config, attention_tc_merge_kernel<128>, p);
    case 256: return cudaLaunchKernelEx(&config, attention_tc_merge_kernel<256>, p);
    default: break;
  }
  return cudaErrorInvalidValue;
}

}  // namespace

int attention_tc_tile_keys(int head_dim) {
  switch (head_dim) {
    case 64: return TcShape<64, 1>::kKeys;
    case 128: return TcShape<128, 1>::kKeys;
    case 256: return TcShape<256, 1>::kKeys;
    default: return 0;
  }
}

bool attention_tc_supported(ElemType dtype, int head_dim, int group) {
  return (dtype == ElemType::kBF16 || dtype == ElemType::kFP16) && attention_tc_tile_keys(head_dim) > 0 &&
         group >= 1 && group <= 64;
}

bool attention_tc_fold_in_kernel(int head_dim, int group, int consumers) {
  return group * head_dim <= 8 * 128 * consumers;
}

bool attention_tc_kv_tma_applies(int head_dim, int page_size, int split_size) {
  return tc_kv_tma_applies(attention_tc_tile_keys(head_dim), page_size, split_size);
}

bool attention_tc_use_kv_tma(TcAttentionParams& p, int64_t num_pages) {
  p.kv_tma = false;
  if (num_pages <= 0 || p.k == nullptr || p.v == nullptr ||
      !attention_tc_kv_tma_applies(p.head_dim, p.page_size, p.split_size) ||
      (reinterpret_cast<uintptr_t>(p.k) | reinterpret_cast<uintptr_t>(p.v)) % 16 != 0)
    return false;
  const CUtensorMapDataType type = p.dtype == ElemType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                              : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const auto encode = [&](CUtensorMap* map, const void* base) {
    return encode_paged_kv_map(map, type, base, static_cast<uint64_t>(num_pages),
                               static_cast<uint32_t>(p.page_size),
                               static_cast<uint32_t>(p.num_kv_heads),
                               static_cast<uint32_t>(p.head_dim), 2);
  };
  p.kv_tma = encode(&p.k_map, p.k) && encode(&p.v_map, p.v);
  return p.kv_tma;
}

bool attention_tc_consumers_supported(int head_dim, int consumers) {
  return consumers == 1 || (consumers == 2 && head_dim <= 128);
}

bool attention_tc_available() {
  static const bool available = [] {
    const KernelImage& img = kernel_image();
    if (!img.ok || !img.arch_specific || img.device_arch != 90) return false;
    cudaFuncAttributes attr{};
    if (cudaFuncGetAttributes(&attr, attention_tc_kernel<__nv_bfloat16, 128, 2, false>) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return attr.binaryVersion == 90;
  }();
  return available;
}

size_t attention_tc_partial_o_bytes(int64_t slots, int num_heads, int head_dim) {
  return static_cast<size_t>(slots) * num_heads * head_dim * sizeof(float);
}
size_t attention_tc_partial_ml_bytes(int64_t slots, int num_heads) {
  return static_cast<size_t>(slots) * num_heads * 2 * sizeof(float);
}

cudaError_t launch_attention_tc(const TcAttentionParams& p, cudaStream_t stream) {
  if (p.num_units < 0 || p.num_merge_rows < 0) return cudaErrorInvalidValue;
  if (p.num_units == 0) return cudaSuccess;
  if (p.num_kv_heads <= 0 || p.num_heads % p.num_kv_heads != 0 || p.split_size <= 0 ||
      p.num_heads > 65535)
    return cudaErrorInvalidValue;
  if (!attention_tc_supported(p.dtype, p.head_dim, p.num_heads / p.num_kv_heads) ||
      !attention_tc_consumers_supported(p.head_dim, p.consumers) ||
      p.num_heads / p.num_kv_heads > attention_tc_block_rows(p.consumers))
    return cudaErrorInvalidValue;
  cudaError_t st = cudaErrorInvalidValue;
  if (p.dtype == ElemType::kBF16) st = launch_typed<__nv_bfloat16>(p, stream);
  if (p.dtype == ElemType::kFP16) st = launch_typed<__half>(p, stream);
  if (st != cudaSuccess || p.num_merge_rows == 0 || p.merge_count != nullptr) return st;
  return launch_merge(p, stream);
}

}  // namespace nvdet::kernels
