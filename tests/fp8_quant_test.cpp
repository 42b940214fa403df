// The FP8 scale schemes (lib/ops/fp8_quant.h) on small hand-built inputs: each scale is the
// formula README "FP8" states (max|x| over the scheme's span / 448, floored at 1 / (448 * 512)),
// each code the element's value times the fp32 reciprocal (tensor, token, static) or divided by
// the scale (group, block), saturating; a stage's dynamic_tensor scale quantises each part as the
// whole input would be; stacked weights keep each part's scales; bad stored weights are refused.
#include "lib/ops/fp8_quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "lib/core/error.h"

namespace nvdet {
namespace {

constexpr float kMinScale = 1.0f / (448.0f * 512.0f);

HostTensor matrix(int64_t rows, int64_t cols, DType dtype, float (*value)(int64_t, int64_t)) {
  HostTensor t(dtype, {rows, cols});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t.set(r * cols + c, value(r, c));
  return t;
}

// Seeded-looking but closed-form values of mixed sign and magnitude, never all zero.
float wave(int64_t r, int64_t c) {
  return std::sin(0.37f * static_cast<float>(c) + 1.3f * static_cast<float>(r)) *
         (1.0f + 0.25f * static_cast<float>((r * 7 + c) % 5));
}

float amax_of(const HostTensor& t, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  float m = 0.0f;
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = c0; c < c1; ++c) m = std::max(m, std::fabs(t.get(r * t.dim(1) + c)));
  return m;
}

Fp8Scheme scheme(Fp8ActScale act) {
  Fp8Scheme s;
  s.act_scale = act;
  return s;
}

TEST(Fp8Quant, DynamicTokenScalesEachRowAndMultipliesByTheReciprocal) {
  HostTensor x(DType::kFP32, {3, 5});
  const float rows[3][5] = {{1, -2, 0.5f, 0.25f, 3}, {0, 0, 0, 0, 0}, {-1000, 7, 1e-3f, 4, 5}};
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 5; ++c) x.set(r * 5 + c, rows[r][c]);
  const Fp8Activations q = quantize_activations(x, scheme(Fp8ActScale::kDynamicToken));
  ASSERT_EQ(q.scales.size(), 3u);
  EXPECT_EQ(q.scales[0], 3.0f / 448.0f);
  EXPECT_EQ(q.scales[1], kMinScale);  // an all-zero row: the floor
  EXPECT_EQ(q.scales[2], 1000.0f / 448.0f);
  for (int r = 0; r < 3; ++r) {
    const float reciprocal = 1.0f / q.scales[r];
    for (int c = 0; c < 5; ++c) {
      EXPECT_EQ(q.codes[r * 5 + c], float_to_fp8(rows[r][c] * reciprocal, Fp8Format::kE4M3))
          << r << "," << c;
    }
  }
  // The row's largest element lands on +-448 (within one rounding of the scale).
  EXPECT_EQ(std::fabs(fp8_to_float(q.codes[4], Fp8Format::kE4M3)), 448.0f);
  EXPECT_EQ(q.codes[5], 0x00);
}

TEST(Fp8Quant, Group128ScalesEachRowAndGroupAndDivides) {
  const HostTensor x = matrix(2, 200, DType::kBF16, wave);  // two groups: 128 and 72 wide
  const Fp8Activations q = quantize_activations(x, scheme(Fp8ActScale::kGroup128));
  ASSERT_EQ(q.scale_cols, 2);
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t g = 0; g < 2; ++g) {
      const float s = amax_of(x, r, r + 1, g * 128, std::min<int64_t>(200, g * 128 + 128)) / 448.0f;
      EXPECT_EQ(q.scale(r, g), s) << r << "," << g;
      for (int64_t c = g * 128; c < std::min<int64_t>(200, g * 128 + 128); ++c)
        EXPECT_EQ(q.codes[r * 200 + c], float_to_fp8(x.get(r * 200 + c) / s, Fp8Format::kE4M3));
    }
  }
}

TEST(Fp8Quant, DynamicTensorTakesTheMaxOverTheWholeInputAndStaticItsScale) {
  const HostTensor x = matrix(4, 64, DType::kFP32, wave);
  const Fp8Activations t = quantize_activations(x, scheme(Fp8ActScale::kDynamicTensor));
  ASSERT_EQ(t.scales.size(), 1u);
  EXPECT_EQ(t.scales[0], amax_of(x, 0, 4, 0, 64) / 448.0f);
  // One row alone gets another scale: the batch dependence of dynamic_tensor.
  const Fp8Activations one =
      quantize_activations(x.slice_rows(0, 1), scheme(Fp8ActScale::kDynamicTensor));
  EXPECT_EQ(one.scales[0], amax_of(x, 0, 1, 0, 64) / 448.0f);
  EXPECT_NE(one.scales[0], t.scales[0]);
  Fp8Scheme st = scheme(Fp8ActScale::kStatic);
  st.static_scale = 0.001f;  // too small for |x| > 0.448: those saturate at +-448
  const Fp8Activations s = quantize_activations(x, st);
  EXPECT_EQ(s.scales[0], 0.001f);
  int saturated = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    EXPECT_EQ(s.codes[i], float_to_fp8(x.get(i) * (1.0f / 0.001f), Fp8Format::kE4M3));
    if (std::fabs(x.get(i)) > 0.449f) {
      EXPECT_EQ(std::fabs(fp8_to_float(s.codes[i], Fp8Format::kE4M3)), 448.0f) << i;
      ++saturated;
    }
  }
  EXPECT_GT(saturated, 10);
}

TEST(Fp8Quant, AStageScaleQuantisesEachPartAsTheWholeInput) {
  const HostTensor whole = matrix(6, 96, DType::kBF16, wave);
  const HostTensor a = whole.slice_rows(0, 2), b = whole.slice_rows(2, 4);
  const Fp8Scheme stage = fp8_stage_scheme(scheme(Fp8ActScale::kDynamicTensor), {&a, &b});
  EXPECT_EQ(stage.stage_scale, amax_of(whole, 0, 6, 0, 96) / 448.0f);
  const Fp8Activations all = quantize_activations(whole, scheme(Fp8ActScale::kDynamicTensor));
  const Fp8Activations qa = quantize_activations(a, stage), qb = quantize_activations(b, stage);
  EXPECT_TRUE(qa.stage_scale);
  for (size_t i = 0; i < qa.codes.size(); ++i) EXPECT_EQ(qa.codes[i], all.codes[i]);
  for (size_t i = 0; i < qb.codes.size(); ++i)
    EXPECT_EQ(qb.codes[i], all.codes[qa.codes.size() + i]);
  EXPECT_NE(fp8_stage_note(stage, {&a, &b}).find("6 input rows"), std::string::npos);
  // Per-row schemes are left as they are.
  EXPECT_EQ(fp8_stage_scheme(scheme(Fp8ActScale::kGroup128), {&a, &b}).stage_scale, 0.0f);
}

TEST(Fp8Quant, WeightScalesPerTensorChannelAndBlock) {
  const HostTensor w = matrix(200, 300, DType::kBF16, wave);
  const Fp8Weight tensor = quantize_weight(w, Fp8Format::kE4M3, Fp8WeightScale::kTensor);
  EXPECT_EQ(tensor.scales.size(), 1u);
  EXPECT_EQ(tensor.scale(199, 2), amax_of(w, 0, 200, 0, 300) / 448.0f);
  const Fp8Weight channel = quantize_weight(w, Fp8Format::kE4M3, Fp8WeightScale::kChannel);
  EXPECT_EQ(channel.scales.size(), 200u);
  EXPECT_EQ(channel.scale(17, 0), amax_of(w, 17, 18, 0, 300) / 448.0f);
  EXPECT_EQ(channel.codes[17 * 300 + 5],
            float_to_fp8(w.get(17 * 300 + 5) * (1.0f / channel.scale(17, 0)), Fp8Format::kE4M3));
  const Fp8Weight block = quantize_weight(w, Fp8Format::kE5M2, Fp8WeightScale::kBlock128);
  ASSERT_EQ(block.scale_cols, 3);
  EXPECT_EQ(block.scales.size(), 6u);  // [2, 3] blocks, the last row and column partial
  for (int64_t br = 0; br < 2; ++br) {
    for (int64_t bc = 0; bc < 3; ++bc) {
      const int64_t r1 = std::min<int64_t>(200, br * 128 + 128),
                    c1 = std::min<int64_t>(300, bc * 128 + 128);
      const float s = amax_of(w, br * 128, r1, bc * 128, c1) / 57344.0f;
      EXPECT_EQ(block.scale(br * 128, bc), s) << br << "," << bc;
      EXPECT_EQ(block.codes[(r1 - 1) * 300 + c1 - 1],
                float_to_fp8(w.get((r1 - 1) * 300 + c1 - 1) / s, Fp8Format::kE5M2));
    }
  }
}

TEST(Fp8Quant, StackedWeightsKeepEachPartsScales) {
  const HostTensor q = matrix(130, 256, DType::kBF16, wave),
                   k = matrix(64, 256, DType::kBF16, wave);
  const Fp8Weight wq = quantize_weight(q, Fp8Format::kE4M3, Fp8WeightScale::kBlock128);
  const Fp8Weight wk = quantize_weight(k, Fp8Format::kE4M3, Fp8WeightScale::kBlock128);
  const Fp8Weight qk = stack_fp8_rows({&wq, &wk});
  EXPECT_EQ(qk.rows, 194);
  EXPECT_EQ(qk.scales.size(), 6u);  // q's two block rows, then k's one
  EXPECT_EQ(qk.scale(129, 1), wq.scale(129, 1));
  EXPECT_EQ(qk.scale(130, 1), wk.scale(0, 1));
  EXPECT_EQ(qk.codes[130 * 256 + 3], wk.codes[3]);
  const Fp8Weight other = quantize_weight(k, Fp8Format::kE4M3, Fp8WeightScale::kChannel);
  EXPECT_THROW(stack_fp8_rows({&wq, &other}), Error);
}

TEST(Fp8Quant, StoredBlockWeightsAreChecked) {
  std::vector<uint8_t> codes(130 * 10, 0x38);
  EXPECT_NO_THROW(fp8_block_weight(130, 10, codes, {0.5f, 0.25f}, Fp8Format::kE4M3, "w"));
  try {
    fp8_block_weight(130, 10, codes, {0.5f, NAN}, Fp8Format::kE4M3, "x.weight");
    FAIL() << "a NaN scale was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.weight: block scale 1 is nan"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(fp8_block_weight(130, 10, codes, {0.5f, -1.0f}, Fp8Format::kE4M3, "w"), Error);
  EXPECT_THROW(fp8_block_weight(130, 10, codes, {0.5f}, Fp8Format::kE4M3, "w"), Error);
  codes[7] = 0x7f;  // e4m3 NaN
  try {
    fp8_block_weight(130, 10, codes, {0.5f, 0.25f}, Fp8Format::kE4M3, "w");
    FAIL() << "a NaN code was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("element 7 is an FP8 NaN (0x7f)"), std::string::npos)
        << e.what();
  }
}

TEST(Fp8Quant, SchemeWordsParseBack) {
  for (const std::string& w : fp8_act_scale_words())
    EXPECT_EQ(fp8_act_scale_name(*parse_fp8_act_scale(w)), w);
  for (const std::string& w : fp8_weight_scale_words())
    EXPECT_EQ(fp8_weight_scale_name(*parse_fp8_weight_scale(w)), w);
  for (const std::string& w : fp8_accumulation_words())
    EXPECT_EQ(fp8_accumulation_name(*parse_fp8_accumulation(w)), w);
  EXPECT_EQ(parse_fp8_act_scale("per_token"), std::nullopt);
  EXPECT_EQ(fp8_scheme_text(Fp8Scheme{}),
            "e4m3, act_scale group_128, weight_scale block_128x128, accumulation promoted");
}

}  // namespace
}  // namespace nvdet
