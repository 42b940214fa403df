// The decoder's forward pass: checked against an independent double-precision implementation of
// the same architecture written here (embedding, RMSNorm, fused QKV, rotate-half RoPE, causal GQA
// attention, SwiGLU, residuals, LM head), and cpu-invariant against cpu-reference.
#include <gtest/gtest.h>

#include <cmath>

#include "lib/backend/backend.h"
#include "lib/model/decoder.h"
#include "lib/model/host_ops.h"

namespace nvdet {
namespace {

ModelConfig tiny_config() {
  ModelConfig c;
  c.hidden = 64;
  c.layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.intermediate = 96;
  c.vocab = 128;
  c.rms_eps = 1e-5f;
  c.rope_theta = 10000.0f;
  return c;
}

using Mat = std::vector<std::vector<double>>;  // [rows][cols]

Mat to_mat(const HostTensor& t) {
  const int64_t rows = t.rank() == 1 ? 1 : t.dim(0);
  const int64_t cols = t.rank() == 1 ? t.dim(0) : t.row_elems();
  Mat m(rows, std::vector<double>(cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) m[r][c] = t.get(r * cols + c);
  return m;
}

Mat linear(const Mat& x, const Mat& w, const std::vector<double>* bias = nullptr) {
  Mat out(x.size(), std::vector<double>(w.size()));
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t j = 0; j < w.size(); ++j) {
      double s = bias ? (*bias)[j] : 0.0;
      for (size_t k = 0; k < w[j].size(); ++k) s += x[i][k] * w[j][k];
      out[i][j] = s;
    }
  return out;
}

Mat rmsnorm(const Mat& x, const std::vector<double>& w, double eps) {
  Mat out = x;
  for (auto& row : out) {
    double ss = 0;
    for (double v : row) ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / row.size() + eps);
    for (size_t i = 0; i < row.size(); ++i) row[i] = row[i] * inv * w[i];
  }
  return out;
}

// The whole prompt through the model in double; returns the last token's logits.
std::vector<double> reference_forward(const ModelWeights& w, const std::vector<int32_t>& prompt) {
  const ModelConfig& c = w.config;
  const Mat embed = to_mat(w.embed);
  Mat x;
  for (int32_t id : prompt) x.push_back(embed[id]);
  const int64_t T = static_cast<int64_t>(prompt.size()), hd = c.head_dim, half = hd / 2;
  for (int32_t l = 0; l < c.layers; ++l) {
    const LayerWeights& L = w.layers[l];
    const Mat h = rmsnorm(x, to_mat(L.attn_norm)[0], c.rms_eps);
    std::vector<double> bias;
    if (!L.qkv_bias.empty()) bias = to_mat(L.qkv_bias)[0];
    Mat qkv = linear(h, to_mat(L.qkv), bias.empty() ? nullptr : &bias);
    for (int64_t t = 0; t < T; ++t) {
      for (int32_t head = 0; head < c.num_heads + c.num_kv_heads; ++head) {
        for (int64_t i = 0; i < half; ++i) {
          const double ang = t * std::pow(double(c.rope_theta), -2.0 * i / hd);
          double& a = qkv[t][head * hd + i];
          double& b = qkv[t][head * hd + i + half];
          const double a0 = a, b0 = b;
          a = a0 * std::cos(ang) - b0 * std::sin(ang);
          b = b0 * std::cos(ang) + a0 * std::sin(ang);
        }
      }
    }
    Mat attn(T, std::vector<double>(c.q_dim()));
    const int64_t group = c.num_heads / c.num_kv_heads;
    for (int64_t t = 0; t < T; ++t) {
      for (int32_t head = 0; head < c.num_heads; ++head) {
        const int64_t kvh = head / group;
        const int64_t k_off = c.q_dim() + kvh * hd, v_off = c.q_dim() + c.kv_dim() + kvh * hd;
        std::vector<double> score(t + 1);
        double mx = -1e300;
        for (int64_t s = 0; s <= t; ++s) {
          double d = 0;
          for (int64_t i = 0; i < hd; ++i) d += qkv[t][head * hd + i] * qkv[s][k_off + i];
          score[s] = d / std::sqrt(double(hd));
          mx = std::max(mx, score[s]);
        }
        double sum = 0;
        for (double& v : score) sum += (v = std::exp(v - mx));
        for (int64_t i = 0; i < hd; ++i) {
          double o = 0;
          for (int64_t s = 0; s <= t; ++s) o += score[s] / sum * qkv[s][v_off + i];
          attn[t][head * hd + i] = o;
        }
      }
    }
    const Mat o = linear(attn, to_mat(L.o_proj));
    for (int64_t t = 0; t < T; ++t)
      for (int32_t i = 0; i < c.hidden; ++i) x[t][i] += o[t][i];
    const Mat h2 = rmsnorm(x, to_mat(L.mlp_norm)[0], c.rms_eps);
    const Mat gu = linear(h2, to_mat(L.gate_up));
    Mat act(T, std::vector<double>(c.intermediate));
    for (int64_t t = 0; t < T; ++t)
      for (int32_t j = 0; j < c.intermediate; ++j) {
        const double g = gu[t][j];
        act[t][j] = g / (1 + std::exp(-g)) * gu[t][c.intermediate + j];
      }
    const Mat d = linear(act, to_mat(L.down));
    for (int64_t t = 0; t < T; ++t)
      for (int32_t i = 0; i < c.hidden; ++i) x[t][i] += d[t][i];
  }
  const Mat last = rmsnorm({x.back()}, to_mat(w.final_norm)[0], c.rms_eps);
  return linear(last, to_mat(w.lm_head))[0];
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// Step 0's logits of prompt `watched` (decoded among `prompts`), as doubles.
std::vector<double> step0_logits(Backend& b, const ModelWeights& w,
                                 const std::vector<std::vector<int32_t>>& prompts, size_t watched,
                                 int32_t chunk, int32_t new_tokens = 1) {
  DecodeOptions o;
  o.prefill_chunk = chunk;
  o.page_size = 4;
  o.max_new_tokens = new_tokens;
  const auto r = greedy_decode(b, w, prompts, {watched}, o, nullptr, nullptr);
  std::vector<double> out(w.config.vocab);
  for (int32_t v = 0; v < w.config.vocab; ++v) out[v] = r[0].logits.get(v);
  return out;
}

const std::vector<std::vector<int32_t>> kPrompts = {
    {3, 17, 99, 5, 42, 8, 77, 12, 1, 64, 100}, {9, 9, 30}, {120, 4, 56, 7, 2, 88, 15}};

// With fp32 activations and the double reference backend, the decoder must match the plain
// double forward to fp32 rounding of the activations: |diff| <= 1e-4 * max|logit|. Chunked
// prefill (chunks of 3 over pages of 4 tokens: chunks straddle pages) and a batch of three
// prompts of different lengths must give the same logits.
TEST(ModelDecoder, MatchesADoublePrecisionForward) {
  ModelConfig c = tiny_config();
  c.qkv_bias = true;
  const ModelWeights w = make_synthetic_weights(c, DType::kFP32, 11);
  auto ref = make_backend("cpu-reference");
  const std::vector<double> want = reference_forward(w, kPrompts[0]);
  const double scale = max_abs(want);
  ASSERT_GT(scale, 0.1);
  for (int32_t chunk : {0, 3, 1}) {
    const std::vector<double> got = step0_logits(*ref, w, kPrompts, 0, chunk);
    for (int32_t v = 0; v < c.vocab; ++v) {
      ASSERT_NEAR(got[v], want[v], 1e-4 * scale) << "chunk " << chunk << " vocab " << v;
    }
  }
  // The shortest prompt, alone: its logits do not depend on where the longer ones are.
  const std::vector<double> want1 = reference_forward(w, kPrompts[1]);
  const std::vector<double> got1 = step0_logits(*ref, w, {kPrompts[1]}, 0, 2);
  for (int32_t v = 0; v < c.vocab; ++v) ASSERT_NEAR(got1[v], want1[v], 1e-4 * max_abs(want1));
}

// Decode steps: the logits of step t equal a fresh forward of prompt + the first t tokens.
TEST(ModelDecoder, DecodeStepsMatchAFullRecompute) {
  const ModelWeights w = make_synthetic_weights(tiny_config(), DType::kFP32, 12);
  auto ref = make_backend("cpu-reference");
  DecodeOptions o;
  o.page_size = 4;
  o.max_new_tokens = 6;
  const auto r = greedy_decode(*ref, w, kPrompts, {2}, o, nullptr, nullptr);
  ASSERT_EQ(r[0].completion.size(), 6u);
  std::vector<int32_t> seq = kPrompts[2];
  for (int32_t t = 0; t < 6; ++t) {
    const std::vector<double> want = reference_forward(w, seq);
    for (int32_t v = 0; v < w.config.vocab; ++v) {
      ASSERT_NEAR(r[0].logits.get(t * w.config.vocab + v), want[v], 1e-4 * max_abs(want))
          << "step " << t;
    }
    seq.push_back(r[0].completion[t]);
  }
}

// cpu-invariant against cpu-reference through the whole decoder. Stated tolerances on step 0's
// logits, relative to the largest logit: fp32 1e-4; bf16 0.05 (each of the ~25 ops rounds its
// output to bf16, 2^-9 relative, and two layers of attention and MLP compound that).
TEST(ModelDecoder, InvariantBackendMatchesReference) {
  auto ref = make_backend("cpu-reference");
  auto inv = make_backend("cpu-invariant");
  for (DType dtype : {DType::kFP32, DType::kBF16}) {
    const ModelWeights w = make_synthetic_weights(tiny_config(), dtype, 13);
    const std::vector<double> want = step0_logits(*ref, w, kPrompts, 0, 4);
    const std::vector<double> got = step0_logits(*inv, w, kPrompts, 0, 4);
    const double tol = (dtype == DType::kFP32 ? 1e-4 : 0.05) * max_abs(want);
    double worst = 0;
    for (int32_t v = 0; v < w.config.vocab; ++v)
      worst = std::max(worst, std::abs(got[v] - want[v]));
    EXPECT_LE(worst, tol) << dtype_name(dtype);
    EXPECT_GT(max_abs(want), 0.1);
  }
}

// The observer sees every op of the trace, in order, with the watched sequence's rows only.
class Recorder final : public TensorObserver {
 public:
  void observe(size_t, int32_t step, int32_t layer, std::string_view op,
               const HostTensor& rows) override {
    seen.push_back({step, layer, std::string(op), rows.dim(0)});
  }
  struct Seen {
    int32_t step, layer;
    std::string op;
    int64_t rows;
  };
  std::vector<Seen> seen;
};

TEST(ModelDecoder, TraceOrderAndRows) {
  const ModelConfig c = tiny_config();
  const ModelWeights w = make_synthetic_weights(c, DType::kBF16, 14);
  auto inv = make_backend("cpu-invariant");
  Recorder rec;
  DecodeOptions o;
  o.prefill_chunk = 4;
  o.max_new_tokens = 3;
  greedy_decode(*inv, w, kPrompts, {0}, o, &rec, nullptr);
  std::vector<std::string_view> ops(std::begin(kLayerOps), std::end(kLayerOps));
  std::erase(ops, "qk_norm");  // only models with q/k norms (Qwen3) have it; this one has none
  const size_t per_step = 1 + c.layers * ops.size() + 2;
  ASSERT_EQ(rec.seen.size(), 3 * per_step);
  for (int32_t step = 0; step < 3; ++step) {
    const auto* s = &rec.seen[step * per_step];
    EXPECT_EQ(s[0].op, "embed");
    EXPECT_EQ(s[0].layer, -1);
    EXPECT_EQ(s[0].rows, step == 0 ? 11 : 1);  // the whole prompt at step 0, gathered over chunks
    for (int32_t l = 0; l < c.layers; ++l) {
      for (size_t k = 0; k < ops.size(); ++k) {
        const auto& e = s[1 + l * ops.size() + k];
        EXPECT_EQ(e.op, ops[k]);
        EXPECT_EQ(e.layer, l);
        EXPECT_EQ(e.step, step);
      }
    }
    EXPECT_EQ(s[per_step - 2].op, "final_norm");
    EXPECT_EQ(s[per_step - 1].op, "logits");
    EXPECT_EQ(s[per_step - 1].rows, 1);
  }
}

TEST(ModelDecoder, RefusesTokensOutsideTheVocabulary) {
  const ModelWeights w = make_synthetic_weights(tiny_config(), DType::kBF16, 15);
  auto inv = make_backend("cpu-invariant");
  try {
    greedy_decode(*inv, w, {{1, 2, 128}}, {0}, DecodeOptions{}, nullptr, nullptr);
    FAIL() << "expected kBadInput";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("128"), std::string::npos);
  }
}

}  // namespace
}  // namespace nvdet
