// Sampler against trainer on the CUDA backends (the GPU side of parity_cpu_test.cpp and
// philox_sampler_test.cpp), on device_decode_fixture.h's small seeded models (bf16 Llama with
// llama3 RoPE, fp16 Qwen3 with biases and q/k norms; 17-token prompt, 10 generated tokens):
//   - the scoring pass's logits against cpu-reference's on the same weights, under several
//     score_batch / score_chunk cuts, within a stated bound;
//   - the parity metrics of each backend's decode against its own scoring pass, against an
//     independent long-double computation from both logits rows;
//   - cuda-portable's scoring pass and decode bitwise cpu-portable's, and its decode and scoring
//     rows bitwise equal, and cuda-invariant's decode and scoring rows bitwise equal
//     (model-parity-gpu.yaml expects both parity: bitwise);
//   - the per-request sampler's tokens for a request whatever its batch and position, the
//     batch-stream sampler's draws depending on them;
//   - what every other backend, whose parity is only reported, shows between decode and scoring
//     pass: printed, not asserted.
// The backends are every GPU backend in the registry that computes the decoder's ops in bf16 and
// fp16 (cudnn computes attention only).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/model/sampler.h"
#include "lib/model/scoring_pass.h"
#include "lib/runner/parity_metrics.h"
#include "tests/device_decode_fixture.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

// The registry's GPU backends that can run a decoder in both 16-bit dtypes.
std::vector<std::string> model_backends() {
  const DeviceFacts device = device_facts();
  std::vector<std::string> names;
  for (const BackendRegistration& r : backend_registry()) {
    bool all = r.info.gpu;
    for (const OpKind op :
         {OpKind::kGemm, OpKind::kRmsNorm, OpKind::kAttentionDecode, OpKind::kAttentionPrefill}) {
      for (const DType t : {DType::kBF16, DType::kFP16})
        all = all && r.supports(op, t, device).ok();
    }
    if (all) names.push_back(r.info.name);
  }
  return names;
}

// Created once per test: the device state every backend keeps lives as long as the test.
using NamedBackend = std::pair<std::string, std::shared_ptr<Backend>>;
std::vector<NamedBackend> make_model_backends() {
  std::vector<NamedBackend> v;
  for (const std::string& name : model_backends()) v.emplace_back(name, make_backend(name));
  return v;
}

// Runs check(case, weights, backend name, backend) for every decode case on every model backend
// (created once per call, as above), the case and the backend named in the failure trace.
template <class Check>
void for_each_case_and_backend(Check check) {
  const std::vector<NamedBackend> backends = make_model_backends();
  for (const DecodeCase& c : decode_cases()) {
    const ModelWeights w = make_synthetic_weights(c.config, c.dtype, 1616);
    for (const auto& [name, b] : backends) {
      SCOPED_TRACE(c.name + " " + name);
      check(c, w, name, *b);
    }
  }
}

bool invariant_by_design(const std::string& backend) {
  return find_backend(backend)->info.invariant_by_design;
}

// The cuts of the scoring pass: the trainer alone and packed with fillers, speculative
// verification of 4 drafts (5 tokens a pass), and decoding again (1 token a pass).
struct Cut {
  int32_t batch, chunk;
};
constexpr Cut kCuts[] = {{1, 0}, {3, 0}, {2, 5}, {1, 1}};

ScoreOptions score_options(const Cut& cut) {
  ScoreOptions o;
  o.batch = cut.batch;
  o.chunk = cut.chunk;
  o.page_size = 16;
  o.seed = 24;
  return o;
}

std::string cut_name(const Cut& cut) {
  return "score_batch=" + std::to_string(cut.batch) +
         ",score_chunk=" + (cut.chunk == 0 ? std::string("whole") : std::to_string(cut.chunk));
}

// The scored request: the fixture's first prompt (17 tokens), decoded in the fixture's batch of 6.
std::vector<int32_t> scored_prompt(const ModelWeights& w) {
  return decode_prompts(w.config.vocab).front();
}

SequenceResult decode_in_batch(Backend& b, const ModelWeights& w, RunNotes* notes = nullptr) {
  return greedy_decode(b, w, decode_prompts(w.config.vocab), {0}, decode_options(false), nullptr,
                       notes)
      .at(0);
}

HostTensor score(Backend& b, const ModelWeights& w, const std::vector<int32_t>& completion,
                 const Cut& cut, RunNotes* notes = nullptr) {
  return score_sequence(b, w, scored_prompt(w), completion, score_options(cut), nullptr, 0, notes);
}

const float* row(const HostTensor& t, int64_t r) { return t.data_as<float>() + r * t.dim(1); }

bool same_row(const HostTensor& a, const HostTensor& b, int64_t r) {
  return std::memcmp(row(a, r), row(b, r), static_cast<size_t>(a.dim(1)) * sizeof(float)) == 0;
}

// The largest |got - want| of any logit, in units of its row's scale (largest |want|, at least 1).
double scaled_error(const HostTensor& got, const HostTensor& want) {
  double worst = 0;
  for (int64_t r = 0; r < want.dim(0); ++r) {
    double scale = 1.0, err = 0.0;
    for (int64_t v = 0; v < want.dim(1); ++v) {
      scale = std::max(scale, std::abs(double{row(want, r)[v]}));
      err = std::max(err, std::abs(double{row(got, r)[v]} - double{row(want, r)[v]}));
    }
    worst = std::max(worst, err / scale);
  }
  return worst;
}

// bf16: the same bound as GpuModelOracle's bf16 whole-model tests. Every op's output is rounded
// to the 16-bit dtype, so a GPU backend and cpu-reference part by an ulp here and there and the
// logits by a few of those; fp16's ulp is 8 times smaller (10 fraction bits against 7), and so is
// its bound. On the CPU, cpu-variant's, cpu-invariant's and cpu-portable's scoring passes of these
// models measure at most 0.0035 (bf16) and 0.0008 (fp16) of the scale against cpu-reference
// under every cut below.
double half_bound(DType t) { return t == DType::kBF16 ? 0.03 : 0.03 / 8; }

TEST(GpuParity, ScoringPassLogitsMatchCpuReference) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  const std::vector<std::string> names = model_backends();
  for (const char* expected :
       {"cublas", "cublaslt-nosplit", "cuda-vendor-policy", "cuda-invariant", "cuda-portable"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  const std::vector<NamedBackend> backends = make_model_backends();
  std::unique_ptr<Backend> ref = make_backend("cpu-reference");
  for (const DecodeCase& c : decode_cases()) {
    const ModelWeights w = make_synthetic_weights(c.config, c.dtype, 1616);
    // One completion for every backend (cpu-reference's), so that all score the same tokens.
    const std::vector<int32_t> completion = decode_in_batch(*ref, w).completion;
    for (const Cut& cut : kCuts) {
      const HostTensor want = score(*ref, w, completion, cut);
      for (const auto& [name, b] : backends) {
        SCOPED_TRACE(c.name + " " + name + " " + cut_name(cut));
        const HostTensor got = score(*b, w, completion, cut);
        ASSERT_EQ(got.shape(), want.shape());
        const double err = scaled_error(got, want);
        EXPECT_LE(err, half_bound(c.dtype));
        std::cout << c.name << " " << name << " " << cut_name(cut)
                  << ": scoring pass against cpu-reference, max error " << err << " of the scale\n";
      }
    }
  }
}

// The metrics of one request from both logits rows, computed apart from parity_metrics: log
// probabilities as x - log(sum exp(x)) in long double without a max shift, KL as the sum over the
// vocabulary of p_s (log p_s - log p_t), k3 from the sampled token's ratio r = p_t / p_s.
struct Independent {
  int64_t equal_rows = 0, first_differing = -1;
  long double kl_mean = 0, kl_max = 0, lp_mean = 0, lp_max = 0, k3_mean = 0;
};

Independent independent_metrics(const HostTensor& s, const HostTensor& t,
                                const std::vector<int32_t>& tokens) {
  Independent m;
  const int64_t n = s.dim(0), vocab = s.dim(1);
  for (int64_t r = 0; r < n; ++r) {
    if (same_row(s, t, r)) {
      ++m.equal_rows;
    } else if (m.first_differing < 0) {
      m.first_differing = r;
    }
    long double zs = 0, zt = 0;
    for (int64_t v = 0; v < vocab; ++v) {
      zs += std::exp(static_cast<long double>(row(s, r)[v]));
      zt += std::exp(static_cast<long double>(row(t, r)[v]));
    }
    const long double lzs = std::log(zs), lzt = std::log(zt);
    long double kl = 0;
    for (int64_t v = 0; v < vocab; ++v) {
      const long double ls = row(s, r)[v] - lzs, lt = row(t, r)[v] - lzt;
      kl += std::exp(ls) * (ls - lt);
    }
    const int32_t tok = tokens[static_cast<size_t>(r)];
    const long double log_ratio = (row(t, r)[tok] - lzt) - (row(s, r)[tok] - lzs);
    m.kl_mean += kl / n;
    m.kl_max = std::max(m.kl_max, kl);
    m.lp_mean += std::fabs(log_ratio) / n;
    m.lp_max = std::max(m.lp_max, std::fabs(log_ratio));
    m.k3_mean += (std::exp(log_ratio) - 1 - log_ratio) / n;
  }
  return m;
}

// Relative 1e-9, and 1e-13 absolute: the double log-sum-exp's rounding (about 1e-16 of a log
// partition near 7) enters each row's KL and logprob difference unscaled.
void expect_metric(double got, long double want, const char* what) {
  EXPECT_NEAR(got, static_cast<double>(want), 1e-9 * static_cast<double>(std::fabs(want)) + 1e-13)
      << what;
}

std::string parity_line(const ParityRecord& r) {
  std::ostringstream o;
  o << r.bitwise_equal_tokens << " of " << r.tokens << " rows bitwise equal, first differing token "
    << r.first_differing_token << ", mismatch_kl max " << r.mismatch_kl_max << " mean "
    << r.mismatch_kl_mean << ", logprob_abs_diff max " << r.logprob_abs_diff_max << ", k3 mean "
    << r.k3_mean;
  return o.str();
}

TEST(GpuParity, MetricsOfGpuLogitsMatchAnIndependentComputation) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  for_each_case_and_backend(
      [](const DecodeCase& c, const ModelWeights& w, const std::string& name, Backend& b) {
        const SequenceResult decoded = decode_in_batch(b, w);
        const HostTensor scored = score(b, w, decoded.completion, kCuts[1]);
        const ParityRecord r = parity_metrics(decoded.logits, scored, decoded.completion);
        const Independent m = independent_metrics(decoded.logits, scored, decoded.completion);
        EXPECT_EQ(r.tokens, 10);
        EXPECT_EQ(r.bitwise_equal_tokens, m.equal_rows);
        EXPECT_EQ(r.first_differing_token, m.first_differing);
        expect_metric(r.mismatch_kl_mean, m.kl_mean, "mismatch_kl mean");
        expect_metric(r.mismatch_kl_max, m.kl_max, "mismatch_kl max");
        expect_metric(r.logprob_abs_diff_mean, m.lp_mean, "logprob_abs_diff mean");
        expect_metric(r.logprob_abs_diff_max, m.lp_max, "logprob_abs_diff max");
        expect_metric(r.k3_mean, m.k3_mean, "k3 mean");
        std::cout << c.name << " " << name << " decode (batch 6) against " << cut_name(kCuts[1])
                  << ": " << parity_line(r) << "\n";
      });
}

TEST(GpuParity, CudaPortableIsBitwiseCpuPortableAndHasParity) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  std::unique_ptr<Backend> cpu = make_backend("cpu-portable");
  std::unique_ptr<Backend> gpu = make_backend("cuda-portable");
  for (const DecodeCase& c : decode_cases()) {
    SCOPED_TRACE(c.name);
    const ModelWeights w = make_synthetic_weights(c.config, c.dtype, 1616);
    const SequenceResult want = decode_in_batch(*cpu, w);
    const SequenceResult got = decode_in_batch(*gpu, w);
    EXPECT_EQ(got.completion, want.completion);
    EXPECT_TRUE(same_bits(got.logits, want.logits));
    for (const Cut& cut : kCuts) {
      SCOPED_TRACE(cut_name(cut));
      const HostTensor scored = score(*gpu, w, got.completion, cut);
      EXPECT_TRUE(same_bits(scored, score(*cpu, w, got.completion, cut)));
      EXPECT_TRUE(same_bits(scored, got.logits))
          << parity_line(parity_metrics(got.logits, scored, got.completion));
    }
  }
}

// cuda-invariant's attention runs decode and prefill on one split plan (kernels/attention_tc.cuh),
// and its GEMM and RMSNorm rows do not depend on the row count: its decode logits equal its
// scoring pass's under every cut (model-parity-gpu.yaml expects it parity: bitwise).
TEST(GpuParity, CudaInvariantHasBitwiseParity) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  std::unique_ptr<Backend> gpu = make_backend("cuda-invariant");
  for (const DecodeCase& c : decode_cases()) {
    SCOPED_TRACE(c.name);
    const ModelWeights w = make_synthetic_weights(c.config, c.dtype, 1616);
    RunNotes notes;
    const SequenceResult got = decode_in_batch(*gpu, w, &notes);
    for (const Cut& cut : kCuts) {
      SCOPED_TRACE(cut_name(cut));
      const HostTensor scored = score(*gpu, w, got.completion, cut);
      EXPECT_TRUE(same_bits(scored, got.logits))
          << parity_line(parity_metrics(got.logits, scored, got.completion));
    }
  }
}

// A request (the fixture's first prompt, id 0) alone, then 4th of 6 and 1st of 6, sampled.
struct Layout {
  const char* name;
  size_t position;  // of the request among the batch; batch 1 = alone
  size_t batch;
};
constexpr Layout kLayouts[] = {{"alone", 0, 1}, {"4th of 6", 3, 6}, {"1st of 6", 0, 6}};

// Hot enough that the draws, not the argmax, pick the tokens.
SamplingSpec sampling_spec() {
  SamplingSpec s;
  s.enabled = true;
  s.temperature = 1.5;
  s.top_k = 64;
  s.top_p = 0.95;
  s.seed = 7;
  return s;
}

SequenceResult sample(Backend& b, const ModelWeights& w, SamplerKind kind, const Layout& layout) {
  const std::vector<std::vector<int32_t>> all = decode_prompts(w.config.vocab);
  std::vector<std::vector<int32_t>> prompts;
  DecodeOptions o = decode_options(false);
  for (size_t i = 0, other = 1; i < layout.batch; ++i) {
    const bool mine = i == layout.position;
    prompts.push_back(all.at(mine ? 0 : other));
    o.sampling_ids.push_back(mine ? 0 : 100 + other);
    if (!mine) ++other;
  }
  const std::unique_ptr<TokenSampler> sampler = make_token_sampler(sampling_spec(), kind);
  o.sampler = sampler.get();
  return greedy_decode(b, w, prompts, {layout.position}, o, nullptr, nullptr).at(0);
}

int32_t argmax(const HostTensor& t, int64_t r) {
  const float* x = row(t, r);
  return static_cast<int32_t>(std::max_element(x, x + t.dim(1)) - x);
}

TEST(GpuParity, PerRequestSamplerIgnoresBatchAndPosition) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  for_each_case_and_backend([](const DecodeCase& c, const ModelWeights& w, const std::string& name,
                               Backend& b) {
    std::vector<SequenceResult> runs;
    for (const Layout& layout : kLayouts) {
      runs.push_back(sample(b, w, SamplerKind::kPerRequest, layout));
      const SequenceResult& r = runs.back();
      // Each token is the one the sampler gives that row of the request alone at that step:
      // the draw depends on nothing but the request's own logits.
      int32_t not_argmax = 0;
      for (int32_t t = 0; t < static_cast<int32_t>(r.completion.size()); ++t) {
        const auto alone = make_token_sampler(sampling_spec(), SamplerKind::kPerRequest);
        EXPECT_EQ(r.completion[t], alone->choose(t, {0}, {row(r.logits, t)}, w.config.vocab).at(0))
            << layout.name << " step " << t;
        not_argmax += r.completion[t] != argmax(r.logits, t);
      }
      EXPECT_GT(not_argmax, 0) << layout.name << ": sampled, not greedy";
    }
    bool same = true;
    for (const SequenceResult& r : runs) same = same && r.completion == runs[0].completion;
    // Batch-invariant logits leave only the sampler to tell the layouts apart: nothing may.
    if (invariant_by_design(name)) {
      for (size_t i = 1; i < runs.size(); ++i) {
        EXPECT_EQ(runs[i].completion, runs[0].completion) << kLayouts[i].name;
        EXPECT_TRUE(same_bits(runs[i].logits, runs[0].logits)) << kLayouts[i].name;
      }
    }
    std::cout << c.name << " " << name << " per_request sampler: completions "
              << (same ? "equal" : "differ") << " across alone / 4th of 6 / 1st of 6\n";
  });
}

TEST(GpuParity, BatchStreamSamplerDrawsDependOnTheBatch) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  for_each_case_and_backend(
      [](const DecodeCase& c, const ModelWeights& w, const std::string& name, Backend& b) {
        const SequenceResult alone = sample(b, w, SamplerKind::kBatchStream, kLayouts[0]);
        for (size_t i = 1; i < std::size(kLayouts); ++i) {
          const SequenceResult in_batch = sample(b, w, SamplerKind::kBatchStream, kLayouts[i]);
          EXPECT_NE(in_batch.completion, alone.completion) << kLayouts[i].name;
          const auto part = std::mismatch(alone.completion.begin(), alone.completion.end(),
                                          in_batch.completion.begin());
          const int64_t t = part.first - alone.completion.begin();
          if (t == static_cast<int64_t>(alone.completion.size())) continue;
          // Where they part, batch-invariant logits are still bitwise equal: the stream's draw,
          // not the kernels, chose differently.
          if (invariant_by_design(name)) {
            EXPECT_TRUE(same_row(alone.logits, in_batch.logits, t)) << kLayouts[i].name;
          }
          std::cout << c.name << " " << name << " batch_stream sampler, " << kLayouts[i].name
                    << " against alone: first token apart at step " << t << " ("
                    << (same_row(alone.logits, in_batch.logits, t) ? "equal" : "different")
                    << " logits there)\n";
        }
      });
}

// What decode and scoring pass show on every backend, printed and not asserted: their parity is
// only reported (model-parity-gpu.yaml), but cuda-portable's, which the test above asserts. With
// cuda-invariant's attention plans, so that a difference can be told from the notes.
TEST(GpuParity, RecordsWhetherDecodeAndScoringRowsAreBitwiseEqual) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  for_each_case_and_backend(
      [](const DecodeCase& c, const ModelWeights& w, const std::string& name, Backend& b) {
        RunNotes notes;
        const SequenceResult decoded = decode_in_batch(b, w, &notes);
        for (const Cut& cut : kCuts) {
          const HostTensor scored = score(b, w, decoded.completion, cut, &notes);
          const ParityRecord r = parity_metrics(decoded.logits, scored, decoded.completion);
          EXPECT_EQ(r.tokens, 10);
          EXPECT_TRUE(std::isfinite(r.mismatch_kl_max) && r.mismatch_kl_max >= 0.0);
          std::cout << c.name << " " << name << " decode against " << cut_name(cut) << ": "
                    << (r.bitwise_equal_tokens == r.tokens ? "BITWISE EQUAL; " : "differ; ")
                    << parity_line(r) << "\n";
        }
        if (name != "cuda-invariant") return;
        // Both plans are named: the decode's, the prefill's and the scoring pass's attention.
        for (const char* tag : {"decode.attention.", "prefill.attention.", "score.attention."}) {
          bool named = false;
          for (const auto& [key, value] : notes) {
            if (key.rfind(tag, 0) != 0) continue;
            named = true;
            std::cout << "  " << key << " = " << value << "\n";
          }
          EXPECT_TRUE(named) << tag;
        }
      });
}

}  // namespace
}  // namespace nvdet::testing
