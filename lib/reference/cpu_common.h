#pragma once
// Pieces shared by the three CPU backends (reference, invariant, variant): exact conversion of
// inputs to float, output rounding, float copies of one sequence's paged K/V, and the
// online-softmax state used by the attention kernels. Nothing here reduces in a batch-dependent
// way; the reduction plans live in the kernel files.
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "lib/core/parallel.h"
#include "lib/core/tensor.h"
#include "lib/ops/op_args.h"

namespace nvdet::cpu {

// Converts `count` elements of `t` starting at flat index `offset` to float (exact).
void to_float(const HostTensor& t, int64_t offset, int64_t count, float* out);
// The whole tensor as floats (exact), converted on all cores.
std::vector<float> to_float(const HostTensor& t);

// A tensor of `dtype` and `shape` from fp32 values, each rounded to nearest even once.
HostTensor make_output(DType dtype, std::vector<int64_t> shape, std::span<const float> values);
// Same from double values (cpu-reference): each value is rounded to float, then to `dtype`.
HostTensor make_output(DType dtype, std::vector<int64_t> shape, std::span<const double> values);

// One sequence's K and V for one KV head, as floats: token t's row at [t * head_dim].
struct SequenceKv {
  int64_t len = 0;
  int32_t head_dim = 0;
  std::vector<float> k, v;
  const float* k_row(int64_t t) const { return k.data() + t * head_dim; }
  const float* v_row(int64_t t) const { return v.data() + t * head_dim; }
};
// Reads tokens [0, kv.kv_lens[seq]) of sequence `seq`, KV head `kv_head`, through the page table.
void gather_sequence_kv(const PagedKv& kv, int64_t seq, int32_t kv_head, int32_t num_kv_heads,
                        int32_t head_dim, SequenceKv& out);

// The mean cached length of the batch's sequences (0 when there are none).
inline int64_t mean_kv_len(const PagedKv& kv) {
  if (kv.kv_lens.empty()) return 0;
  int64_t total = 0;
  for (const auto len : kv.kv_lens) total += len;
  return total / static_cast<int64_t>(kv.kv_lens.size());
}

// The loops every CPU attention kernel shares: one parallel task per (sequence, KV head) gathers
// that head's cache once, then calls `row_fn` for each query head that reads it. `row` indexes
// the [rows * num_heads] rows of q and of the output (head_dim values each).
// Decode: row_fn(seq, kv, row).
template <class RowFn>
void for_each_decode_row(const AttentionDecodeArgs& args, RowFn&& row_fn) {
  const int64_t seqs = args.q->dim(0);
  const int32_t H = args.num_heads, KH = args.num_kv_heads, group = H / KH;
  // An item's work: its group's rows, each two dot products per cached key (the average length).
  const int64_t work = mean_kv_len(args.kv) * args.head_dim * 2 * (group + 1);
  parallel_for(seqs * KH, work, [&](int64_t item) {
    const int64_t s = item / KH;
    const int32_t kvh = static_cast<int32_t>(item % KH);
    SequenceKv kv;
    gather_sequence_kv(args.kv, s, kvh, KH, args.head_dim, kv);
    for (int32_t h = kvh * group; h < (kvh + 1) * group; ++h) row_fn(s, kv, s * H + h);
  });
}
// Prefill: row_fn(seq, kv, chunk_start, pos, row) for each new token, which sits at absolute
// position pos (the chunk starts at chunk_start) and attends to cached positions [0, pos].
template <class RowFn>
void for_each_prefill_row(const AttentionPrefillArgs& args, RowFn&& row_fn) {
  const int64_t seqs = static_cast<int64_t>(args.q_start.size()) - 1;
  const int32_t H = args.num_heads, KH = args.num_kv_heads, group = H / KH;
  // An item's work: every new row of its group against the (average) cache; causal halves it.
  const int64_t new_rows = seqs > 0 ? (args.q_start.back() - args.q_start.front()) / seqs : 0;
  const int64_t work = mean_kv_len(args.kv) * args.head_dim * (2 * group * new_rows + 2);
  parallel_for(seqs * KH, work, [&](int64_t item) {
    const int64_t s = item / KH;
    const int32_t kvh = static_cast<int32_t>(item % KH);
    SequenceKv kv;
    gather_sequence_kv(args.kv, s, kvh, KH, args.head_dim, kv);
    const int64_t q0 = args.q_start[s], q_len = args.q_start[s + 1] - q0;
    const int64_t chunk_start = kv.len - q_len;
    for (int64_t i = 0; i < q_len; ++i) {
      for (int32_t h = kvh * group; h < (kvh + 1) * group; ++h) {
        row_fn(s, kv, chunk_start, chunk_start + i, (q0 + i) * H + h);
      }
    }
  });
}

// Online-softmax state of one query over a set of KV tokens: running max m, running sum of
// exp(score - m), and the exp-weighted sum of V rows. Empty state: m = -inf, l = 0, acc = 0.
struct SoftmaxState {
  float m = -std::numeric_limits<float>::infinity();
  float l = 0.0f;
  std::vector<float> acc;
  explicit SoftmaxState(int32_t head_dim = 0) : acc(static_cast<size_t>(head_dim), 0.0f) {}
  bool empty() const { return l == 0.0f && std::isinf(m) && m < 0; }
};

inline constexpr int64_t kAttentionTile = 64;

// Folds KV tokens [begin, end) into `state`, one tile at a time. Tile boundaries are the
// positions t with (t - tile_origin) % 64 == 0, so the plan is fixed by (begin, end, origin).
// Per tile, in this order:
//   s_t = (sum over d, sequentially, of q[d] * k_t[d]) * scale             (fp32)
//   m_new = max(state.m, max_t s_t); c = exp(state.m - m_new); p_t = exp(s_t - m_new)
//   state.l   = state.l * c + (sum over t, sequentially from 0, of p_t)
//   state.acc = state.acc * c + (sum over t, sequentially from 0, of p_t * v_t)
void attend_tiles(const float* q, const SequenceKv& kv, int64_t begin, int64_t end,
                  int64_t tile_origin, float scale, SoftmaxState& state);

// Log-sum-exp merge of `b` into `a` (a = a ⊕ b): M = max(a.m, b.m),
// l = a.l * exp(a.m - M) + b.l * exp(b.m - M), acc likewise. An empty `b` leaves `a` unchanged.
void merge_state(SoftmaxState& a, const SoftmaxState& b);

// out[d] = acc[d] / l.
void finish_state(const SoftmaxState& s, float* out);

// Fixed tree over a power-of-two count of values: for w = n/2, n/4, ..., 1:
// v[i] = v[i] + v[i + w] for i < w. Returns v[0].
float tree_sum(float* v, int n);

// Decode's split-KV plan for one query row: KV tokens in consecutive splits of `split` tokens,
// each folded from an empty state by attend_tiles (tiles aligned to the split start), the split
// states merged in order; writes acc / l to `out`.
void attend_split_kv(const float* q, const SequenceKv& kv, int64_t split, float scale, float* out);
// The same over the sequence's first `len` tokens only (a prefill token at position len - 1).
void attend_split_kv(const float* q, const SequenceKv& kv, int64_t len, int64_t split, float scale,
                     float* out);

}  // namespace nvdet::cpu
