#pragma once
// Seeded inputs for the CPU kernel tests: row batches for GEMM / RMSNorm / log-softmax and
// paged-KV batches for attention. A request's data is a pure function of (seed, its stream), so
// the same request carries the same bits whatever batch, position or page layout surrounds it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/core/dtype.h"
#include "lib/core/tensor.h"

namespace nvdet::testing {

inline constexpr uint64_t kSeed = 20261130;

// The first `count` normal(0, 1) values of `stream` (fill_normal with kSeed). Memoised: the sweeps
// ask for the same requests in many contexts, and generating normals dominates their cost.
// Element i is the same whatever `count` is, so a longer request extends a shorter one.
inline const float* stream_values(uint64_t stream, int64_t count) {
  static std::map<uint64_t, std::vector<float>> cache;
  std::vector<float>& v = cache[stream];
  if (static_cast<int64_t>(v.size()) < count) {  // grow geometrically: regrowth regenerates all
    v.resize(std::max(static_cast<size_t>(count), 2 * v.size()));
    fill_normal(std::span<float>(v), kSeed, stream);
  }
  return v.data();
}

// The first `count` values of `stream` times `stddev`, rounded to `dtype`, as raw bytes.
// Memoised like stream_values.
inline const std::byte* stream_bytes(uint64_t stream, int64_t count, DType dtype, float stddev) {
  static std::map<std::tuple<uint64_t, DType, float>, std::vector<std::byte>> cache;
  std::vector<std::byte>& bytes = cache[{stream, dtype, stddev}];
  const size_t size = dtype_size(dtype);
  const int64_t have = static_cast<int64_t>(bytes.size() / size);
  if (have < count) {
    const int64_t want = std::max(count, 2 * have);
    const float* src = stream_values(stream, want);
    bytes.resize(static_cast<size_t>(want) * size);
    for (int64_t i = have; i < want; ++i) {
      const float x = src[i] * stddev;
      if (dtype == DType::kFP32) {
        std::memcpy(bytes.data() + i * size, &x, size);
      } else {
        const uint16_t h = dtype == DType::kBF16 ? float_to_bf16_bits(x) : float_to_fp16_bits(x);
        std::memcpy(bytes.data() + i * size, &h, size);
      }
    }
  }
  return bytes.data();
}

// Copies elements [first, first + n) of stream_bytes(stream, ...) into `t` at element `offset`.
inline void store_stream(HostTensor& t, int64_t offset, uint64_t stream, int64_t first, int64_t n,
                         float stddev = 1.0f) {
  const size_t size = dtype_size(t.dtype());
  const std::byte* src = stream_bytes(stream, first + n, t.dtype(), stddev);
  std::memcpy(t.mutable_data() + offset * size, src + first * size, static_cast<size_t>(n) * size);
}

// A [streams.size(), row_len] tensor whose row i is normal data of stream streams[i].
inline HostTensor seeded_rows(DType dtype, int64_t row_len, const std::vector<uint64_t>& streams,
                              float stddev = 1.0f) {
  HostTensor t(dtype, {static_cast<int64_t>(streams.size()), row_len});
  for (size_t i = 0; i < streams.size(); ++i) {
    store_stream(t, static_cast<int64_t>(i) * row_len, streams[i], 0, row_len, stddev);
  }
  return t;
}

// A rank-1 tensor of `n` normal values of `stream` (weights, biases).
inline HostTensor seeded_vector(DType dtype, int64_t n, uint64_t stream, float stddev = 1.0f) {
  HostTensor t(dtype, {n});
  store_stream(t, 0, stream, 0, n, stddev);
  return t;
}

// Where the probe sits in a batch of `batch`: 0 = first, 1 = middle, 2 = last.
inline int64_t probe_index(int64_t batch, int where) {
  return where == 0 ? 0 : (where == 1 ? batch / 2 : batch - 1);
}

// Streams for a batch of `batch` requests with the probe (stream `probe`) at `index` (-1: no
// probe); filler slot i gets stream 1000 + i, so the neighbours change with the batch size and
// the probe's position.
inline std::vector<uint64_t> batch_streams(int64_t batch, int64_t index, uint64_t probe) {
  std::vector<uint64_t> s(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) s[i] = i == index ? probe : 1000 + i;
  return s;
}

// The raw bits of rows [row, row + count) of `t`.
inline std::vector<uint64_t> row_bits(const HostTensor& t, int64_t row, int64_t count = 1) {
  std::vector<uint64_t> out;
  const int64_t n = t.row_elems();
  for (int64_t i = row * n; i < (row + count) * n; ++i) out.push_back(t.bits(i));
  return out;
}

// One sequence of an attention batch. Its q, K and V rows at absolute position p are functions
// of (stream, p) only.
struct SeqSpec {
  uint64_t stream = 0;
  int32_t kv_len = 0;
  int32_t q_len = 1;   // prefill: new tokens (the last q_len of kv_len)
  int32_t prefix = 0;  // prefill: prefix-cache length
};

// Owns the tensors an attention call borrows.
struct AttentionBatch {
  HostTensor q, k, v;
  PagedKv kv;
  std::vector<int32_t> q_start, prefix_len;
  int32_t num_heads = 0, num_kv_heads = 0, head_dim = 0;

  AttentionDecodeArgs decode(DType out = DType::kFP32) const {
    AttentionDecodeArgs a;
    a.q = &q;
    a.kv = kv;
    a.kv.k = &k;
    a.kv.v = &v;
    a.num_heads = num_heads;
    a.num_kv_heads = num_kv_heads;
    a.head_dim = head_dim;
    a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    a.out_dtype = out;
    return a;
  }
  AttentionPrefillArgs prefill(DType out = DType::kFP32) const {
    AttentionPrefillArgs a;
    a.q = &q;
    a.q_start = q_start;
    a.prefix_len = prefix_len;
    a.kv = kv;
    a.kv.k = &k;
    a.kv.v = &v;
    a.num_heads = num_heads;
    a.num_kv_heads = num_kv_heads;
    a.head_dim = head_dim;
    a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    a.out_dtype = out;
    return a;
  }
};

// Builds a paged batch. Physical pages are handed out in a shuffled order seeded by `layout_seed`
// (so a probe's pages move between contexts), with two spare pages at the end.
inline std::unique_ptr<AttentionBatch> make_attention_batch(
    DType dtype, const std::vector<SeqSpec>& seqs, int32_t num_heads, int32_t num_kv_heads,
    int32_t head_dim, bool prefill, uint64_t layout_seed = 1, int32_t page_size = 16) {
  auto b = std::make_unique<AttentionBatch>();
  b->num_heads = num_heads;
  b->num_kv_heads = num_kv_heads;
  b->head_dim = head_dim;
  const int64_t row = int64_t{num_heads} * head_dim;
  const int64_t kv_row = int64_t{num_kv_heads} * head_dim;
  int32_t max_pages = 1, total_pages = 2;
  int64_t total_q = 0;
  for (const SeqSpec& s : seqs) {
    const int32_t pages = (s.kv_len + page_size - 1) / page_size;
    max_pages = std::max(max_pages, pages);
    total_pages += pages;
    total_q += prefill ? s.q_len : 1;
  }
  std::vector<int32_t> order(static_cast<size_t>(total_pages));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(layout_seed);
  std::shuffle(order.begin(), order.end(), rng);

  b->q = HostTensor(dtype, {total_q, num_heads, head_dim});
  b->k = HostTensor(dtype, {total_pages, page_size, num_kv_heads, head_dim});
  b->v = HostTensor(dtype, {total_pages, page_size, num_kv_heads, head_dim});
  b->kv.page_size = page_size;
  b->kv.max_pages_per_seq = max_pages;
  b->kv.page_table.assign(seqs.size() * max_pages, -1);
  b->q_start.push_back(0);
  size_t next_page = 0;
  int64_t q_row = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const SeqSpec& s = seqs[i];
    b->kv.kv_lens.push_back(s.kv_len);
    b->prefix_len.push_back(s.prefix);
    const int32_t pages = (s.kv_len + page_size - 1) / page_size;
    for (int32_t p = 0; p < pages; ++p) {
      b->kv.page_table[i * max_pages + p] = order[next_page++];
    }
    for (int64_t t = 0; t < s.kv_len; ++t) {
      const int64_t page = b->kv.page_table[i * max_pages + t / page_size];
      const int64_t dst = (page * page_size + t % page_size) * kv_row;
      store_stream(b->k, dst, s.stream * 8 + 2, t * kv_row, kv_row);
      store_stream(b->v, dst, s.stream * 8 + 3, t * kv_row, kv_row);
    }
    const int32_t q_len = prefill ? s.q_len : 1;
    for (int64_t t = s.kv_len - q_len; t < s.kv_len; ++t, ++q_row) {
      store_stream(b->q, q_row * row, s.stream * 8 + 1, t * row, row);
    }
    b->q_start.push_back(static_cast<int32_t>(q_row));
  }
  // Unused page-table slots point at a real page, as a serving stack's padding would.
  for (auto& p : b->kv.page_table) p = p < 0 ? order.back() : p;
  return b;
}

// Largest |x| over a tensor.
inline double max_abs(const HostTensor& t) {
  double m = 0.0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::abs(static_cast<double>(t.get(i))));
  return m;
}

// Checks `got` against the cpu-reference result `ref`. With scale = max |ref|:
//  - fp32 outputs: every |got - ref| <= rel_tol * scale;
//  - bf16 / fp16 outputs: every element within `max_ulp` units in the last place of ref, or, for
//    elements much smaller than the row (cancellation, where the fp32 accumulation error is
//    larger than their ulp), within rel_tol * scale.
inline void expect_close_to_reference(const HostTensor& got, const HostTensor& ref, double rel_tol,
                                      uint64_t max_ulp, const std::string& what) {
  ASSERT_EQ(got.shape(), ref.shape()) << what;
  ASSERT_EQ(got.dtype(), ref.dtype()) << what;
  const double abs_tol = rel_tol * max_abs(ref);
  const bool fp32 = got.dtype() == DType::kFP32;
  int64_t bad = 0, first_bad = -1;
  double worst_diff = 0.0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double diff = std::abs(static_cast<double>(got.get(i)) - ref.get(i));
    worst_diff = std::max(worst_diff, diff);
    const bool ok = diff <= abs_tol ||
                    (!fp32 && ulp_distance(got.dtype(), got.bits(i), ref.bits(i)) <= max_ulp);
    if (!ok && bad++ == 0) first_bad = i;
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " elements out of tolerance (abs tol " << abs_tol
                    << ", worst diff " << worst_diff << "); first at " << first_bad << ": got "
                    << (first_bad >= 0 ? got.get(first_bad) : 0.0f) << " want "
                    << (first_bad >= 0 ? ref.get(first_bad) : 0.0f);
}

// One point of a batch sweep: the batch size and where the probe sits (see probe_index).
struct SweepPoint {
  int64_t batch = 1;
  int where = 0;
  std::string label() const {
    static const char* names[] = {"first", "middle", "last"};
    return "batch " + std::to_string(batch) + ", " + names[where];
  }
};

// Batch sizes 1..64 plus `extra`, each with the probe first, in the middle and last (positions
// that coincide for tiny batches are visited once).
inline std::vector<SweepPoint> batch_sweep(std::vector<int64_t> extra = {},
                                           bool all_positions = true) {
  std::vector<int64_t> sizes;
  for (int64_t b = 1; b <= 64; ++b) sizes.push_back(b);
  sizes.insert(sizes.end(), extra.begin(), extra.end());
  std::vector<SweepPoint> points;
  for (int64_t b : sizes) {
    for (int where = 0; where < (all_positions ? 3 : 1); ++where) {
      if (where > 0 && probe_index(b, where) == probe_index(b, where - 1)) continue;
      points.push_back({b, where});
    }
  }
  return points;
}

// The distinct results a probe takes over labelled contexts, in first-seen order, each with the
// first context that produced it.
struct DistinctResults {
  std::vector<std::pair<std::string, std::vector<uint64_t>>> results;
  void add(const std::string& context, std::vector<uint64_t> bits) {
    for (const auto& r : results) {
      if (r.second == bits) return;
    }
    results.emplace_back(context, std::move(bits));
  }
  size_t count() const { return results.size(); }
  std::string contexts() const {
    std::string s;
    for (const auto& r : results) s += (s.empty() ? "" : "; ") + r.first;
    return s;
  }
};

}  // namespace nvdet::testing
