// The FP8 GEMM and the FP8 MoE block of the CPU backends (README "FP8"):
//  - correctness: every scheme (4 activation scales x 3 weight scales x e4m3/e5m2, with a bias)
//    against an independent dequantise-then-double computation from the codes and scales,
//    within a stated tolerance;
//  - invariance, bitwise: a row computed alone and inside batches of 3, 17 and 70 at the first
//    and last position: cpu-invariant and cpu-reference hold for static, dynamic_token and
//    group_128; dynamic_tensor moves with the batch's max on every backend; cpu-variant's split
//    follows the batch;
//  - the vLLM FP8-MoE case: both expert GEMMs' activations quantised with one dynamic_tensor
//    scale over the batch diverge on every CPU backend, dynamic_token and group_128 hold on
//    cpu-invariant;
//  - refusals: fast accumulation, cpu-portable, a scheme that disagrees with the weight.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/core/error.h"
#include "lib/ops/fp8_quant.h"
#include "tests/fp8_oracle.h"

namespace nvdet {
namespace {

constexpr int64_t kN = 40, kK = 320;  // 3 K groups (the last 64 wide), 5 panels of 8 columns

HostTensor seeded(DType dtype, std::vector<int64_t> shape, uint64_t stream, float stddev) {
  HostTensor t(dtype, std::move(shape));
  fill_normal(t, 37, stream, stddev);
  return t;
}

using testing::dequantised_gemm;
using testing::fp8_args;
using testing::Fp8Oracle;

std::vector<Fp8Scheme> all_schemes() {
  std::vector<Fp8Scheme> out;
  for (const Fp8Format f : {Fp8Format::kE4M3, Fp8Format::kE5M2}) {
    for (const std::string& act : fp8_act_scale_words()) {
      for (const std::string& ws : fp8_weight_scale_words()) {
        Fp8Scheme s;
        s.format = f;
        s.act_scale = *parse_fp8_act_scale(act);
        s.weight_scale = *parse_fp8_weight_scale(ws);
        s.static_scale = f == Fp8Format::kE4M3 ? 0.008f : 0.0001f;
        out.push_back(s);
      }
    }
  }
  return out;
}

const char* const kFp8Backends[] = {"cpu-reference", "cpu-invariant", "cpu-variant"};

// Tolerances, relative to sum_k |term| (the bound of any summation order's error): cpu-reference
// rounds an exact double sum once to fp32: 2^-23; the fp32 backends add at most 128 products in
// a group and a few group partials, each addition rounding by 2^-24 of a partial sum no larger
// than the bound: 2e-5 (133 * 2^-24 is 7.9e-6). Measured on x86-64: printed by the test.
double tolerance(const std::string& backend) {
  return backend == "cpu-reference" ? std::ldexp(1.0, -23) : 2e-5;
}

TEST(Fp8Gemm, EveryCpuBackendMatchesTheDequantisedProduct) {
  const HostTensor a = seeded(DType::kBF16, {9, kK}, 1, 1.0f);
  const HostTensor w = seeded(DType::kBF16, {kN, kK}, 2, 0.05f);
  const HostTensor bias = seeded(DType::kBF16, {kN}, 3, 0.5f);
  for (const Fp8Scheme& scheme : all_schemes()) {
    const Fp8Weight qw = quantize_weight(w, scheme.format, scheme.weight_scale);
    const Fp8Oracle want = dequantised_gemm(a, qw, &bias, scheme);
    for (const char* name : kFp8Backends) {
      RunNotes notes;
      const HostTensor got = make_backend(name)->run(fp8_args(a, qw, &bias, scheme), &notes);
      ASSERT_EQ(got.shape(), (std::vector<int64_t>{9, kN}));
      double worst = 0;
      for (int64_t i = 0; i < got.numel(); ++i) {
        const double err = std::fabs(got.get(i) - want.out[i]) / want.bound[i];
        worst = std::max(worst, err);
      }
      EXPECT_LE(worst, tolerance(name)) << name << " " << fp8_scheme_text(scheme);
      EXPECT_EQ(notes.at("fp8"), fp8_scheme_text(scheme));
      if (std::string(name) == "cpu-invariant" && scheme.act_scale == Fp8ActScale::kGroup128 &&
          scheme.weight_scale == Fp8WeightScale::kBlock128 && scheme.format == Fp8Format::kE4M3)
        std::cout << "block FP8, cpu-invariant: largest error " << worst
                  << " of sum |a w| (tolerance " << tolerance(name) << ")\n";
    }
  }
}

// A batch of `batch` rows holding `probe` at slot `slot`; the fillers are seeded rows, the first
// of them `loud` times larger (so that a max over the batch moves).
HostTensor batch_with(const HostTensor& probe, int64_t batch, int64_t slot, float loud) {
  HostTensor x = seeded(DType::kBF16, {batch, kK}, 100 + static_cast<uint64_t>(batch), 1.0f);
  bool first_filler = true;
  for (int64_t r = 0; r < batch; ++r) {
    if (r == slot) {
      std::memcpy(x.mutable_data() + r * kK * 2, probe.data(), kK * 2);
      continue;
    }
    if (first_filler) {
      for (int64_t c = 0; c < kK; ++c) x.set(r * kK + c, loud * x.get(r * kK + c));
      first_filler = false;
    }
  }
  return x;
}

bool same_row(const HostTensor& alone, const HostTensor& in_batch, int64_t row) {
  return std::memcmp(alone.data(), in_batch.data() + row * alone.row_elems() * 4,
                     static_cast<size_t>(alone.row_elems()) * 4) == 0;
}

TEST(Fp8Gemm, PerRowSchemesAreBatchInvariantOnCpuInvariantAndReference) {
  const HostTensor probe = seeded(DType::kBF16, {1, kK}, 7, 1.0f);
  const HostTensor w = seeded(DType::kBF16, {kN, kK}, 2, 0.05f);
  for (const Fp8Scheme& scheme : all_schemes()) {
    if (scheme.act_scale == Fp8ActScale::kDynamicTensor) continue;
    const Fp8Weight qw = quantize_weight(w, scheme.format, scheme.weight_scale);
    for (const char* name : {"cpu-invariant", "cpu-reference"}) {
      auto backend = make_backend(name);
      const HostTensor alone = backend->run(fp8_args(probe, qw, nullptr, scheme), nullptr);
      for (const int64_t batch : {3, 17, 70}) {
        for (const int64_t slot : {int64_t{0}, batch - 1}) {
          const HostTensor x = batch_with(probe, batch, slot, 8.0f);
          const HostTensor out = backend->run(fp8_args(x, qw, nullptr, scheme), nullptr);
          EXPECT_TRUE(same_row(alone, out, slot))
              << name << " " << fp8_scheme_text(scheme) << " batch " << batch << " slot " << slot;
        }
      }
    }
  }
}

TEST(Fp8Gemm, DynamicTensorFollowsTheBatchOnEveryBackend) {
  const HostTensor probe = seeded(DType::kBF16, {1, kK}, 7, 1.0f);
  const HostTensor w = seeded(DType::kBF16, {kN, kK}, 2, 0.05f);
  Fp8Scheme scheme;
  scheme.act_scale = Fp8ActScale::kDynamicTensor;
  const Fp8Weight qw = quantize_weight(w, scheme.format, scheme.weight_scale);
  const HostTensor x = batch_with(probe, 17, 5, 8.0f);
  for (const char* name : kFp8Backends) {
    auto backend = make_backend(name);
    RunNotes alone_notes, batch_notes;
    const HostTensor alone = backend->run(fp8_args(probe, qw, nullptr, scheme), &alone_notes);
    const HostTensor out = backend->run(fp8_args(x, qw, nullptr, scheme), &batch_notes);
    EXPECT_FALSE(same_row(alone, out, 5)) << name;
    // The notes give each side's scale: the probe's max / 448, then the loud filler's.
    float probe_max = 0, batch_max = 0;
    for (int64_t c = 0; c < kK; ++c) probe_max = std::max(probe_max, std::fabs(probe.get(c)));
    for (int64_t i = 0; i < x.numel(); ++i) batch_max = std::max(batch_max, std::fabs(x.get(i)));
    char want[64];
    std::snprintf(want, sizeof want, "%.9g (max over the batch's 1 row)", probe_max / 448.0f);
    EXPECT_EQ(alone_notes.at("act_scale"), want) << name;
    std::snprintf(want, sizeof want, "%.9g (max over the batch's 17 rows)", batch_max / 448.0f);
    EXPECT_EQ(batch_notes.at("act_scale"), want) << name;
  }
}

// Sums of products of FP8 codes are often exact in fp32 (each product has at most 8 significant
// bits), so a change of summation order moves fewer bits than in bf16; group_128 with block
// scales multiplies each group's partial by its scales first, which rounds, and the split then
// shows in the row.
TEST(Fp8Gemm, CpuVariantSplitsByTheBatch) {
  const HostTensor probe = seeded(DType::kBF16, {1, kK}, 7, 1.0f);
  const HostTensor w = seeded(DType::kBF16, {kN, kK}, 2, 0.05f);
  const Fp8Scheme scheme;  // group_128, block_128x128
  const Fp8Weight qw = quantize_weight(w, scheme.format, scheme.weight_scale);
  auto variant = make_backend("cpu-variant");
  RunNotes small, large;
  const HostTensor alone = variant->run(fp8_args(probe, qw, nullptr, scheme), &small);
  const HostTensor out =
      variant->run(fp8_args(batch_with(probe, 70, 0, 1.0f), qw, nullptr, scheme), &large);
  EXPECT_EQ(small.at("split_k"), "3");  // 4 splits asked, of whole 128-wide groups: 3
  EXPECT_EQ(large.at("split_k"), "1");
  EXPECT_FALSE(same_row(alone, out, 0)) << "cpu-variant's split-K did not change a bit of the row";
}

TEST(Fp8Gemm, RefusesWhatItDoesNotCompute) {
  const HostTensor a = seeded(DType::kBF16, {2, kK}, 1, 1.0f);
  const HostTensor w = seeded(DType::kBF16, {kN, kK}, 2, 0.05f);
  Fp8Scheme scheme;
  const Fp8Weight qw = quantize_weight(w, scheme.format, scheme.weight_scale);
  const auto message = [&](const char* backend, const GemmArgs& g) -> std::string {
    try {
      make_backend(backend)->run(g, nullptr);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      return e.what();
    }
    return "(accepted)";
  };
  Fp8Scheme fast = scheme;
  fast.accumulation = Fp8Accumulation::kFast;
  EXPECT_NE(message("cpu-invariant", fp8_args(a, qw, nullptr, fast)).find("'promoted' only"),
            std::string::npos);
  EXPECT_NE(message("cpu-portable", fp8_args(a, qw, nullptr, scheme))
                .find("backend 'cpu-portable' does not compute FP8"),
            std::string::npos);
  Fp8Scheme e5m2 = scheme;
  e5m2.format = Fp8Format::kE5M2;
  EXPECT_NE(
      message("cpu-reference", fp8_args(a, qw, nullptr, e5m2)).find("e4m3 with block_128x128"),
      std::string::npos);
  // The registry's answers, asked before anything runs (README "FP8").
  EXPECT_EQ(backend_fp8_refusal("cpu-invariant", OpKind::kGemm, scheme), "");
  EXPECT_NE(backend_fp8_refusal("cpu-invariant", OpKind::kGemm, fast).find("accumulation 'fast'"),
            std::string::npos);
  // cublas (cuBLASLt's block-scaled mode) and cuda-invariant (its wgmma e4m3 GEMM) compute this
  // scheme; no other GPU backend does.
  for (const char* computes : {"cublas", "cuda-invariant"})
    EXPECT_EQ(backend_fp8_refusal(computes, OpKind::kGemm, scheme), "") << computes;
  for (const BackendRegistration& r : backend_registry()) {
    if (!r.info.gpu || r.info.name == "cublas" || r.info.name == "cuda-invariant") continue;
    EXPECT_EQ(
        backend_fp8_refusal(r.info.name, OpKind::kGemm, scheme).rfind("does not compute FP8", 0),
        0u)
        << r.info.name;
  }
}

// ---- the MoE block with FP8 experts -----------------------------------------------------------

constexpr int64_t kHidden = 256, kInter = 128, kExperts = 8;

struct MoeWeights {
  HostTensor router;
  std::vector<Fp8Weight> gate_up, down;
};

MoeWeights moe_weights(const Fp8Scheme& scheme) {
  MoeWeights m;
  m.router = seeded(DType::kBF16, {kExperts, kHidden}, 50, 1.0f / 16);
  for (int64_t e = 0; e < kExperts; ++e) {
    m.gate_up.push_back(
        quantize_weight(seeded(DType::kBF16, {2 * kInter, kHidden}, 60 + e, 1.0f / 16),
                        scheme.format, scheme.weight_scale));
    m.down.push_back(quantize_weight(seeded(DType::kBF16, {kHidden, kInter}, 80 + e, 1.0f / 11),
                                     scheme.format, scheme.weight_scale));
  }
  return m;
}

MoeArgs moe_args(const HostTensor& x, const MoeWeights& m, const Fp8Scheme& scheme) {
  MoeArgs a;
  a.x = &x;
  a.router = &m.router;
  a.top_k = 2;
  a.out_dtype = DType::kFP32;
  a.fp8 = scheme;
  for (int64_t e = 0; e < kExperts; ++e) {
    a.fp8_gate_up.push_back(&m.gate_up[e]);
    a.fp8_down.push_back(&m.down[e]);
  }
  return a;
}

// Two probed rows alone, then first in a batch of 24 rows whose fillers are 4 times louder.
TEST(Fp8Moe, OneDynamicTensorScaleOverTheBatchDivergesAndPerRowScalesHold) {
  const HostTensor probe = seeded(DType::kBF16, {2, kHidden}, 9, 1.0f);
  HostTensor batch = seeded(DType::kBF16, {24, kHidden}, 10, 4.0f);
  std::memcpy(batch.mutable_data(), probe.data(), probe.nbytes());
  for (const Fp8ActScale act :
       {Fp8ActScale::kDynamicTensor, Fp8ActScale::kDynamicToken, Fp8ActScale::kGroup128}) {
    Fp8Scheme scheme;
    scheme.act_scale = act;
    const MoeWeights m = moe_weights(scheme);
    for (const char* name : kFp8Backends) {
      auto backend = make_backend(name);
      RunNotes notes;
      const HostTensor alone = backend->run(moe_args(probe, m, scheme), nullptr);
      const HostTensor out = backend->run(moe_args(batch, m, scheme), &notes);
      const bool held = std::memcmp(alone.data(), out.data(), alone.nbytes()) == 0;
      const std::string what =
          std::string(name) + " act_scale " + std::string(fp8_act_scale_name(act));
      if (act == Fp8ActScale::kDynamicTensor) {
        EXPECT_FALSE(held) << what;
        // The gate_up stage's one scale: the max over every row of the batch / 448.
        float amax = 0;
        for (int64_t i = 0; i < batch.numel(); ++i) amax = std::max(amax, std::fabs(batch.get(i)));
        char want[80];
        std::snprintf(want, sizeof want, "%.9g (max over the MoE stage's 24 input rows)",
                      amax / 448.0f);
        EXPECT_EQ(notes.at("gate_up act_scale"), want) << what;
        EXPECT_NE(notes.at("down act_scale").find("(max over the MoE stage's 48 input rows)"),
                  std::string::npos)
            << what;
      } else if (std::string(name) != "cpu-variant") {
        EXPECT_TRUE(held) << what;
      }
    }
  }
}

TEST(Fp8Moe, FollowsTheReferenceWithinTolerance) {
  // cpu-invariant and cpu-variant against cpu-reference on the same FP8 experts: the quantised
  // operands are the same codes (SwiGLU's bf16 rounding may move a gate_up output by one bf16 ulp
  // and with it one code of the down GEMM's input), so the outputs agree to within 2e-3 of their
  // scale. Measured: printed.
  const HostTensor x = seeded(DType::kBF16, {12, kHidden}, 11, 1.0f);
  Fp8Scheme scheme;
  const MoeWeights m = moe_weights(scheme);
  const HostTensor want = make_backend("cpu-reference")->run(moe_args(x, m, scheme), nullptr);
  double scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    scale = std::max(scale, double{std::fabs(want.get(i))});
  for (const char* name : {"cpu-invariant", "cpu-variant"}) {
    const HostTensor got = make_backend(name)->run(moe_args(x, m, scheme), nullptr);
    double worst = 0;
    for (int64_t i = 0; i < got.numel(); ++i)
      worst = std::max(worst, std::fabs(double{got.get(i)} - want.get(i)));
    // cpu-variant's fused plan also rounds each weighted expert output and their sum to bf16,
    // as the serving kernel does: up to top_k + 1 = 3 half-ulps of bf16 (2^-9) more.
    const double vendor_rounding =
        std::string(name) == "cpu-variant" ? 3 * std::ldexp(1.0, -9) : 0.0;
    EXPECT_LE(worst, (2e-3 + vendor_rounding) * scale) << name;
    std::cout << name << " FP8 MoE: largest difference from cpu-reference " << worst / scale
              << " of the output's scale\n";
  }
}

}  // namespace
}  // namespace nvdet
