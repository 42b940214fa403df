// cpu-portable on the CPU: bitwise equal to an independent evaluation of the documented formulas
// (kernels/portable_ops.cuh's header comment) written here with plain float operators; within
// tolerance of cpu-reference (double accumulation) for every op and dtype pair; and
// batch-invariant under the sweeps cpu-invariant passes. Its identity with cuda-portable is
// checked on the GPU by gpu_portable_test.cpp.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "kernels/portable_math.cuh"
#include "lib/backend/backend.h"
#include "tests/cpu_kernel_fixtures.h"
#include "tests/cpu_sweeps.h"

namespace nvdet {
namespace {

using namespace nvdet::testing;
namespace pt = nvdet::kernels::portable;

std::vector<uint64_t> streams(int64_t n, uint64_t base) {
  std::vector<uint64_t> s(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) s[i] = base + i;
  return s;
}

std::vector<float> floats(const HostTensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.get(i);
  return v;
}

// The expected tensor: `values` rounded to `dtype` by lib/core's (independent) rounding.
HostTensor expected(DType dtype, std::vector<int64_t> shape, const std::vector<float>& values) {
  HostTensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, values[i]);
  return t;
}

void expect_bitwise(const HostTensor& got, const HostTensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < got.numel(); ++i) {
    if (got.bits(i) != want.bits(i) && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0) << what << ": first differing element " << first << ": got "
                    << (first >= 0 ? got.get(first) : 0.0f) << " want "
                    << (first >= 0 ? want.get(first) : 0.0f);
}

// ---- the formulas, evaluated independently ------------------------------------------------------

std::vector<float> formula_gemm(const HostTensor& a, const HostTensor& w, const HostTensor* bias) {
  const int64_t m = a.dim(0), k = a.dim(1), n = w.dim(0);
  const std::vector<float> av = floats(a), wv = floats(w);
  std::vector<float> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t kk = 0; kk < k; ++kk) acc = acc + av[i * k + kk] * wv[j * k + kk];
      out[i * n + j] = bias ? acc + bias->get(j) : acc;
    }
  }
  return out;
}

// 32 lanes, lane l over elements l, l+32, ... from `init`, then the pairwise tree.
template <class Step>
float lanes_then_tree(const float* x, int64_t d, float init, Step step) {
  float lane[32];
  for (int l = 0; l < 32; ++l) {
    lane[l] = init;
    for (int64_t j = l; j < d; j += 32) lane[l] = step(lane[l], x[j]);
  }
  for (int w = 16; w >= 1; w /= 2) {
    for (int i = 0; i < w; ++i) lane[i] = step(lane[i], lane[i + w]);
  }
  return lane[0];
}

std::vector<float> formula_rmsnorm(const HostTensor& x, const HostTensor& weight, float eps) {
  const int64_t rows = x.dim(0), d = x.dim(1);
  const std::vector<float> xv = floats(x), wv = floats(weight);
  std::vector<float> out(xv.size());
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> sq(static_cast<size_t>(d));
    for (int64_t j = 0; j < d; ++j) sq[j] = xv[r * d + j] * xv[r * d + j];
    const float ss = lanes_then_tree(sq.data(), d, 0.0f, [](float a, float b) { return a + b; });
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + eps);
    for (int64_t j = 0; j < d; ++j) out[r * d + j] = (xv[r * d + j] * inv) * wv[j];
  }
  return out;
}

std::vector<float> formula_log_softmax(const HostTensor& x) {
  const int64_t rows = x.dim(0), v = x.dim(1);
  const std::vector<float> xv = floats(x);
  std::vector<float> out(xv.size());
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = xv.data() + r * v;
    const float mx =
        lanes_then_tree(row, v, -INFINITY, [](float a, float b) { return b > a ? b : a; });
    std::vector<float> e(static_cast<size_t>(v));
    for (int64_t j = 0; j < v; ++j) e[j] = pt::exp(row[j] - mx);
    const float lse =
        pt::log(lanes_then_tree(e.data(), v, 0.0f, [](float a, float b) { return a + b; }));
    for (int64_t j = 0; j < v; ++j) out[r * v + j] = (row[j] - mx) - lse;
  }
  return out;
}

// One query's online softmax over KV tokens [begin, end), tiles of 64 aligned to `origin`.
struct State {
  float m = -INFINITY, l = 0.0f;
  std::vector<float> acc;
};
State formula_attend(const std::vector<float>& q, const std::vector<std::vector<float>>& k,
                     const std::vector<std::vector<float>>& v, int64_t begin, int64_t end,
                     int64_t origin, float scale) {
  const size_t d = q.size();
  State s;
  s.acc.assign(d, 0.0f);
  int64_t t0 = begin;
  while (t0 < end) {
    const int64_t t1 = std::min(end, t0 + 64 - (t0 - origin) % 64);
    std::vector<float> sc;
    for (int64_t t = t0; t < t1; ++t) {
      float dot = 0.0f;
      for (size_t j = 0; j < d; ++j) dot = dot + q[j] * k[t][j];
      sc.push_back(dot * scale);
    }
    float m_new = s.m;
    for (float x : sc) m_new = x > m_new ? x : m_new;
    const float c = std::isinf(s.m) ? 0.0f : pt::exp(s.m - m_new);
    std::vector<float> p;
    float tl = 0.0f;
    for (float x : sc) {
      p.push_back(pt::exp(x - m_new));
      tl = tl + p.back();
    }
    s.l = s.l * c + tl;
    for (size_t j = 0; j < d; ++j) {
      float ta = 0.0f;
      for (size_t i = 0; i < p.size(); ++i) ta = ta + p[i] * v[t0 + i][j];
      s.acc[j] = s.acc[j] * c + ta;
    }
    s.m = m_new;
    t0 = t1;
  }
  return s;
}

// Rows of q / K / V for (sequence, head) read through the batch's page table.
struct HeadData {
  std::vector<float> q;
  std::vector<std::vector<float>> k, v;
};
HeadData head_data(const AttentionBatch& b, int64_t seq, int64_t q_row, int32_t h) {
  const int32_t D = b.head_dim, KH = b.num_kv_heads, group = b.num_heads / KH, kvh = h / group;
  HeadData hd;
  for (int32_t j = 0; j < D; ++j) hd.q.push_back(b.q.get((q_row * b.num_heads + h) * D + j));
  for (int64_t t = 0; t < b.kv.kv_lens[seq]; ++t) {
    const int64_t page = b.kv.page_table[seq * b.kv.max_pages_per_seq + t / b.kv.page_size];
    const int64_t base = ((page * b.kv.page_size + t % b.kv.page_size) * KH + kvh) * D;
    std::vector<float> kr, vr;
    for (int32_t j = 0; j < D; ++j) {
      kr.push_back(b.k.get(base + j));
      vr.push_back(b.v.get(base + j));
    }
    hd.k.push_back(kr);
    hd.v.push_back(vr);
  }
  return hd;
}

// The portable plan for one row over KV tokens [0, len): splits of `split` tokens, each folded
// from an empty state in tiles aligned to its start, merged in split order.
State formula_split_kv(const HeadData& hd, int64_t len, float scale, int64_t split) {
  State total;
  bool have = false;
  for (int64_t b0 = 0; b0 < len; b0 += split) {
    const State part = formula_attend(hd.q, hd.k, hd.v, b0, std::min(len, b0 + split), b0, scale);
    if (!have) {
      total = part;
      have = true;
      continue;
    }
    const float m = part.m > total.m ? part.m : total.m;
    const float ea = pt::exp(total.m - m), eb = pt::exp(part.m - m);
    total.l = total.l * ea + part.l * eb;
    for (size_t j = 0; j < total.acc.size(); ++j)
      total.acc[j] = total.acc[j] * ea + part.acc[j] * eb;
    total.m = m;
  }
  return total;
}

std::vector<float> formula_decode(const AttentionBatch& b, float scale, int64_t split) {
  const int64_t seqs = b.q.dim(0);
  const int32_t H = b.num_heads, D = b.head_dim;
  std::vector<float> out(static_cast<size_t>(seqs * H * D));
  for (int64_t s = 0; s < seqs; ++s) {
    for (int32_t h = 0; h < H; ++h) {
      const State total = formula_split_kv(head_data(b, s, s, h), b.kv.kv_lens[s], scale, split);
      for (int32_t j = 0; j < D; ++j) out[(s * H + h) * D + j] = total.acc[j] / total.l;
    }
  }
  return out;
}

// Prefill of the token at position p: the decode plan of kv_len = p + 1.
std::vector<float> formula_prefill(const AttentionBatch& b, float scale, int64_t split) {
  const int32_t H = b.num_heads, D = b.head_dim;
  std::vector<float> out(static_cast<size_t>(b.q.dim(0) * H * D));
  for (size_t s = 0; s + 1 < b.q_start.size(); ++s) {
    const int64_t q_len = b.q_start[s + 1] - b.q_start[s];
    for (int64_t i = 0; i < q_len; ++i) {
      const int64_t row = b.q_start[s] + i, pos = b.kv.kv_lens[s] - q_len + i;
      for (int32_t h = 0; h < H; ++h) {
        const HeadData hd = head_data(b, static_cast<int64_t>(s), row, h);
        const State st = formula_split_kv(hd, pos + 1, scale, split);
        for (int32_t j = 0; j < D; ++j) out[(row * H + h) * D + j] = st.acc[j] / st.l;
      }
    }
  }
  return out;
}

// ---- tests --------------------------------------------------------------------------------------

class CpuPortable : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> portable = make_cpu_backend("cpu-portable");
  std::unique_ptr<Backend> reference = make_cpu_backend("cpu-reference");
};

const std::pair<DType, DType> kTypePairs[] = {{DType::kBF16, DType::kFP32},
                                              {DType::kFP16, DType::kFP16},
                                              {DType::kFP32, DType::kFP32},
                                              {DType::kBF16, DType::kBF16}};

std::string pair_name(const std::pair<DType, DType>& p) {
  return std::string(dtype_name(p.first)) + " -> " + std::string(dtype_name(p.second));
}

TEST_F(CpuPortable, GemmEqualsTheFormulaAndIsCloseToReference) {
  for (const auto& [in, out] : kTypePairs) {
    const HostTensor a = seeded_rows(in, 1000, streams(13, 1));
    const HostTensor w = seeded_rows(in, 1000, streams(37, 500), 0.05f);
    const HostTensor bias = seeded_vector(in, 37, 999);
    for (const HostTensor* b : {&bias, static_cast<const HostTensor*>(nullptr)}) {
      const GemmArgs args{&a, &w, b, out};
      const HostTensor got = portable->run(args, nullptr);
      const std::string what = "gemm " + pair_name({in, out}) + (b ? " bias" : "");
      expect_bitwise(got, expected(out, {13, 37}, formula_gemm(a, w, b)), what);
      expect_close_to_reference(got, reference->run(args, nullptr), 1e-5, 1, what);
    }
  }
}

TEST_F(CpuPortable, RmsNormEqualsTheFormulaAndIsCloseToReference) {
  for (const auto& [in, out] : kTypePairs) {
    for (int64_t d : {1, 31, 4096, 1000}) {
      const HostTensor x = seeded_rows(in, d, streams(5, 40));
      const HostTensor w = seeded_vector(in, d, 41);
      const RmsNormArgs args{&x, &w, 1e-6f, out};
      const HostTensor got = portable->run(args, nullptr);
      const std::string what = "rmsnorm d=" + std::to_string(d) + " " + pair_name({in, out});
      expect_bitwise(got, expected(out, {5, d}, formula_rmsnorm(x, w, 1e-6f)), what);
      expect_close_to_reference(got, reference->run(args, nullptr), 2e-6, 1, what);
    }
  }
}

TEST_F(CpuPortable, LogSoftmaxEqualsTheFormulaAndIsCloseToReference) {
  for (const auto& [in, out] : kTypePairs) {
    for (int64_t v : {1, 33, 32000}) {
      const HostTensor x = seeded_rows(in, v, streams(3, 60), 4.0f);
      const LogSoftmaxArgs args{&x, out};
      const HostTensor got = portable->run(args, nullptr);
      const std::string what = "log_softmax v=" + std::to_string(v) + " " + pair_name({in, out});
      expect_bitwise(got, expected(out, {3, v}, formula_log_softmax(x)), what);
      // Outputs are about -log(v) +- a few: 2 ulp of exp/log plus fp32 sums over v terms.
      expect_close_to_reference(got, reference->run(args, nullptr), 2e-6, 1, what);
    }
  }
}

TEST_F(CpuPortable, DecodeEqualsTheFormulaAndIsCloseToReference) {
  const std::vector<SeqSpec> seqs = {{1, 1000}, {2, 1}, {3, 257}, {4, 64}, {5, 77}};
  for (const auto& [in, out] : kTypePairs) {
    const auto b = make_attention_batch(in, seqs, 4, 2, 64, false, 3, 16);
    for (int32_t split : {0, 100}) {
      AttentionDecodeArgs args = b->decode(out);
      args.splits.split_size = split;
      const HostTensor got = portable->run(args, nullptr);
      const std::string what = "decode split " + std::to_string(split) + " " + pair_name({in, out});
      expect_bitwise(
          got, expected(out, got.shape(), formula_decode(*b, args.scale, split ? split : 512)),
          what);
      expect_close_to_reference(got, reference->run(args, nullptr), 2e-5, 1, what);
    }
  }
}

TEST_F(CpuPortable, PrefillEqualsTheFormulaAndIsCloseToReference) {
  // The third sequence's chunk crosses the 512-token split boundary (and the 100-token ones).
  const std::vector<SeqSpec> seqs = {
      {1, 150, 150, 0}, {2, 70, 5, 64}, {3, 1, 1, 0}, {4, 560, 60, 500}};
  for (const auto& [in, out] : kTypePairs) {
    const auto b = make_attention_batch(in, seqs, 4, 1, 32, true, 5, 16);
    for (int32_t split : {0, 100}) {
      AttentionPrefillArgs args = b->prefill(out);
      args.splits.split_size = split;
      const HostTensor got = portable->run(args, nullptr);
      const std::string what =
          "prefill split " + std::to_string(split) + " " + pair_name({in, out});
      expect_bitwise(
          got, expected(out, got.shape(), formula_prefill(*b, args.scale, split ? split : 512)),
          what);
      expect_close_to_reference(got, reference->run(args, nullptr), 2e-5, 1, what);
    }
  }
}

TEST_F(CpuPortable, OutputsDifferFromCpuInvariant) {
  // A different reduction order and different exp/log: the two invariant backends are distinct
  // (so a manifest of one cannot pass for the other by accident).
  auto invariant = make_cpu_backend("cpu-invariant");
  const HostTensor x = seeded_rows(DType::kBF16, 32000, streams(4, 80), 4.0f);
  const LogSoftmaxArgs args{&x, DType::kFP32};
  EXPECT_NE(row_bits(portable->run(args, nullptr), 0, 4),
            row_bits(invariant->run(args, nullptr), 0, 4));
}

void expect_one_result(const DistinctResults& r) {
  EXPECT_EQ(r.count(), 1u) << "distinct probe results first seen at: " << r.contexts();
}

TEST_F(CpuPortable, GemmRowIsBatchInvariant) {
  expect_one_result(sweep_gemm(*portable, batch_sweep({128, 257})));
}
TEST_F(CpuPortable, RmsNormRowIsBatchInvariant) {
  expect_one_result(sweep_rmsnorm(*portable, batch_sweep({128, 257})));
}
TEST_F(CpuPortable, LogSoftmaxRowIsBatchInvariant) {
  expect_one_result(sweep_log_softmax(*portable, batch_sweep({128}, false)));
}
TEST_F(CpuPortable, DecodeIsBatchInvariant) {
  expect_one_result(sweep_decode(*portable, batch_sweep({}, false), {}));
}
TEST_F(CpuPortable, PrefillIsBatchChunkAndPrefixInvariant) {
  expect_one_result(sweep_prefill_batch(*portable, batch_sweep({}, false)));
  expect_one_result(sweep_prefill_chunking(*portable, {1, 16, 64, 0}, {0, 63, 200}));
}

}  // namespace
}  // namespace nvdet
