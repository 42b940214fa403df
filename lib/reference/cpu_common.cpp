#include "lib/reference/cpu_common.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "lib/core/host_memory.h"
#include "lib/core/parallel.h"

namespace nvdet::cpu {

void to_float(const HostTensor& t, int64_t offset, int64_t count, float* out) {
  switch (t.dtype()) {
    case DType::kFP32:
      std::memcpy(out, t.data_as<float>() + offset, static_cast<size_t>(count) * sizeof(float));
      return;
    case DType::kBF16: {
      const uint16_t* src = t.data_as<uint16_t>() + offset;
      for (int64_t i = 0; i < count; ++i) out[i] = std::bit_cast<float>(uint32_t{src[i]} << 16);
      return;
    }
    case DType::kFP16: {
      const uint16_t* src = t.data_as<uint16_t>() + offset;
      for (int64_t i = 0; i < count; ++i) out[i] = fp16_bits_to_float(src[i]);
      return;
    }
  }
}

std::vector<float> to_float(const HostTensor& t) {
  const int64_t n = t.numel();
  std::vector<float> out;
  try {
    out.resize(static_cast<size_t>(n));
  } catch (const std::bad_alloc&) {
    throw HostAllocationError("an fp32 copy of a " + std::string(dtype_name(t.dtype())) +
                                  " tensor of " + std::to_string(n) + " elements",
                              static_cast<uint64_t>(n) * sizeof(float));
  }
  constexpr int64_t kBlock = 1 << 16;
  parallel_for((n + kBlock - 1) / kBlock, kBlock, [&](int64_t b) {
    const int64_t begin = b * kBlock;
    to_float(t, begin, std::min(kBlock, n - begin), out.data() + begin);
  });
  return out;
}

HostTensor make_output(DType dtype, std::vector<int64_t> shape, std::span<const float> values) {
  HostTensor out(dtype, std::move(shape));
  floats_to_dtype(values.data(), out.numel(), dtype, out.mutable_data());
  return out;
}

HostTensor make_output(DType dtype, std::vector<int64_t> shape, std::span<const double> values) {
  std::vector<float> f(values.size());
  for (size_t i = 0; i < values.size(); ++i) f[i] = static_cast<float>(values[i]);
  return make_output(dtype, std::move(shape), std::span<const float>(f));
}

void gather_sequence_kv(const PagedKv& kv, int64_t seq, int32_t kv_head, int32_t num_kv_heads,
                        int32_t head_dim, SequenceKv& out) {
  const int64_t len = kv.kv_lens[seq];
  out.len = len;
  out.head_dim = head_dim;
  out.k.resize(static_cast<size_t>(len * head_dim));
  out.v.resize(static_cast<size_t>(len * head_dim));
  const int32_t* pages = kv.page_table.data() + seq * kv.max_pages_per_seq;
  for (int64_t t = 0; t < len; ++t) {
    const int64_t page = pages[t / kv.page_size];
    const int64_t row = (page * kv.page_size + t % kv.page_size) * num_kv_heads + kv_head;
    to_float(*kv.k, row * head_dim, head_dim, out.k.data() + t * head_dim);
    to_float(*kv.v, row * head_dim, head_dim, out.v.data() + t * head_dim);
  }
}

void attend_tiles(const float* q, const SequenceKv& kv, int64_t begin, int64_t end,
                  int64_t tile_origin, float scale, SoftmaxState& state) {
  const int32_t d = kv.head_dim;
  float scores[kAttentionTile];
  std::vector<float> tile_acc(static_cast<size_t>(d));
  int64_t t0 = begin;
  while (t0 < end) {
    // End of the tile that contains t0: the next boundary after t0 on the origin's grid.
    const int64_t offset = ((t0 - tile_origin) % kAttentionTile + kAttentionTile) % kAttentionTile;
    const int64_t t1 = std::min(end, t0 + (kAttentionTile - offset));
    const int64_t n = t1 - t0;
    float tile_max = -std::numeric_limits<float>::infinity();
    // Four tokens' dot products at a time, for instruction-level parallelism only: each one is
    // still the sequential sum over d described in the header.
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      const float *k0 = kv.k_row(t0 + i), *k1 = kv.k_row(t0 + i + 1);
      const float *k2 = kv.k_row(t0 + i + 2), *k3 = kv.k_row(t0 + i + 3);
      float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
      for (int32_t j = 0; j < d; ++j) {
        d0 += q[j] * k0[j];
        d1 += q[j] * k1[j];
        d2 += q[j] * k2[j];
        d3 += q[j] * k3[j];
      }
      scores[i] = d0 * scale;
      scores[i + 1] = d1 * scale;
      scores[i + 2] = d2 * scale;
      scores[i + 3] = d3 * scale;
    }
    for (; i < n; ++i) {
      const float* k = kv.k_row(t0 + i);
      float dot = 0.0f;
      for (int32_t j = 0; j < d; ++j) dot += q[j] * k[j];
      scores[i] = dot * scale;
    }
    for (i = 0; i < n; ++i) tile_max = std::max(tile_max, scores[i]);
    const float m_new = std::max(state.m, tile_max);
    const float c = std::exp(state.m - m_new);
    float tile_l = 0.0f;
    std::fill(tile_acc.begin(), tile_acc.end(), 0.0f);
    for (i = 0; i < n; ++i) {
      const float p = std::exp(scores[i] - m_new);
      tile_l += p;
      const float* v = kv.v_row(t0 + i);
      for (int32_t j = 0; j < d; ++j) tile_acc[j] += p * v[j];
    }
    state.l = state.l * c + tile_l;
    for (int32_t j = 0; j < d; ++j) state.acc[j] = state.acc[j] * c + tile_acc[j];
    state.m = m_new;
    t0 = t1;
  }
}

void merge_state(SoftmaxState& a, const SoftmaxState& b) {
  if (b.empty()) return;
  if (a.empty()) {
    a = b;
    return;
  }
  const float m = std::max(a.m, b.m);
  const float ea = std::exp(a.m - m), eb = std::exp(b.m - m);
  a.l = a.l * ea + b.l * eb;
  for (size_t j = 0; j < a.acc.size(); ++j) a.acc[j] = a.acc[j] * ea + b.acc[j] * eb;
  a.m = m;
}

void finish_state(const SoftmaxState& s, float* out) {
  for (size_t j = 0; j < s.acc.size(); ++j) out[j] = s.acc[j] / s.l;
}

float tree_sum(float* v, int n) {
  for (int w = n / 2; w >= 1; w /= 2) {
    for (int i = 0; i < w; ++i) v[i] = v[i] + v[i + w];
  }
  return v[0];
}

void attend_split_kv(const float* q, const SequenceKv& kv, int64_t split, float scale, float* out) {
  attend_split_kv(q, kv, kv.len, split, scale, out);
}

void attend_split_kv(const float* q, const SequenceKv& kv, int64_t len, int64_t split, float scale,
                     float* out) {
  SoftmaxState total(kv.head_dim);
  for (int64_t b = 0; b < len; b += split) {
    SoftmaxState part(kv.head_dim);
    attend_tiles(q, kv, b, std::min(len, b + split), b, scale, part);
    merge_state(total, part);
  }
  finish_state(total, out);
}

}  // namespace nvdet::cpu
