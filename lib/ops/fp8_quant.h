#pragma once
// FP8 quantisation as serving stacks compute it (README.md "FP8"): the schemes, their scales, and
// the quantised weights and activations an FP8 GEMM multiplies. One definition for every
// backend, so that backends differ only in how their GEMM accumulates.
//
// A scale s is an fp32 dequantisation multiplier: value ~ code * s. With F = fp8_max(format)
// (448 for e4m3) and the floor m = 1 / (F * 512) (vLLM's min scaling factor):
//
//   activations (per GEMM call, from the activations it multiplies):
//     static          one scale given by the scenario (calibrated offline);
//     dynamic_tensor  s = max(max|x| over the whole input / F, m): one scale for the batch;
//     dynamic_token   s_r = max(max|x[r, :]| / F, m) per row;
//     group_128       s_rg = max(max|x[r, 128g .. 128g+127]| / F, m) per row and 128-wide K group;
//   weights (offline, once):
//     tensor          one scale per weight (as dynamic_tensor over W);
//     channel         one per output row n (as dynamic_token over W's rows);
//     block_128x128   one per 128 x 128 block (weight_scale_inv as the hub's FP8 checkpoints
//                     store it).
//   Codes: tensor, token and static scales quantise x * (1 / s) (vLLM multiplies by the fp32
//   reciprocal); group and block scales quantise x / s (vLLM's per-token-group quantiser divides);
//   each value then rounds to nearest even, saturating at +-F (lib/ops/fp8_format.h).
//
// Accumulation: `promoted` adds fp32 partial sums of 128-wide K groups into an fp32 total in
// ascending K order (the Hopper FP8 GEMMs' promotion); `fast` keeps the tensor cores' own
// reduced-precision accumulator, which only a GPU has (the CPU backends refuse it).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/ops/fp8_format.h"

namespace nvdet {

enum class Fp8ActScale : uint8_t { kStatic, kDynamicTensor, kDynamicToken, kGroup128 };
enum class Fp8WeightScale : uint8_t { kTensor, kChannel, kBlock128 };
enum class Fp8Accumulation : uint8_t { kFast, kPromoted };

// The K group of group_128 and block_128x128, and the promotion interval of `promoted`.
inline constexpr int64_t kFp8Group = 128;

std::string_view fp8_act_scale_name(Fp8ActScale s);  // static, dynamic_tensor, ...
std::string_view fp8_weight_scale_name(Fp8WeightScale s);
std::string_view fp8_accumulation_name(Fp8Accumulation a);
const std::vector<std::string>& fp8_act_scale_words();  // the names, in enum order
const std::vector<std::string>& fp8_weight_scale_words();
const std::vector<std::string>& fp8_accumulation_words();
std::optional<Fp8ActScale> parse_fp8_act_scale(std::string_view name);
std::optional<Fp8WeightScale> parse_fp8_weight_scale(std::string_view name);
std::optional<Fp8Accumulation> parse_fp8_accumulation(std::string_view name);

// The smallest scale a dynamic scheme gives: 1 / (fp8_max * 512).
float fp8_min_scale(Fp8Format f);

// One FP8 GEMM's scheme. The defaults are the hub's FP8 checkpoints as vLLM serves them.
struct Fp8Scheme {
  Fp8Format format = Fp8Format::kE4M3;
  Fp8ActScale act_scale = Fp8ActScale::kGroup128;
  Fp8WeightScale weight_scale = Fp8WeightScale::kBlock128;
  Fp8Accumulation accumulation = Fp8Accumulation::kPromoted;
  float static_scale = 0.0f;  // act_scale static: the scale
  // dynamic_tensor over part of a larger input (one expert's rows of an MoE stage): the scale
  // of the whole input, which the part's GEMM uses instead of its own max; 0 when the call's
  // input is the whole input.
  float stage_scale = 0.0f;
  bool operator==(const Fp8Scheme&) const = default;
};
// "e4m3, act_scale group_128, weight_scale block_128x128, accumulation promoted"
std::string fp8_scheme_text(const Fp8Scheme& s);

// A weight [rows, cols] (nn.Linear layout: rows = outputs n, cols = K) in FP8 with its scales.
// Row r's K group g dequantises with scales[scale_row[r] * scale_cols + (scale_cols > 1 ? g : 0)]:
// tensor has one scale row, channel one per row, block_128x128 one per 128 rows with
// ceil(cols / 128) columns. Weights stacked along rows (q, k and v into one qkv) keep each
// part's own scale rows.
struct Fp8Weight {
  Fp8Format format = Fp8Format::kE4M3;
  Fp8WeightScale scale_kind = Fp8WeightScale::kBlock128;
  int64_t rows = 0, cols = 0;
  std::vector<uint8_t> codes;  // [rows, cols]
  int64_t scale_cols = 1;
  std::vector<float> scales;       // [scale rows, scale_cols]
  std::vector<int32_t> scale_row;  // [rows]
  float scale(int64_t row, int64_t k_group) const {
    return scales[static_cast<size_t>(scale_row[row] * scale_cols +
                                      (scale_cols > 1 ? k_group : 0))];
  }
  size_t bytes() const { return codes.size() + scales.size() * 4 + scale_row.size() * 4; }
};

// Quantises a weight offline by `kind` (the scales as the header says, from the weight's values).
Fp8Weight quantize_weight(const HostTensor& w, Fp8Format format, Fp8WeightScale kind);
// A block_128x128 weight from stored codes [rows, cols] and scales [ceil(rows/128),
// ceil(cols/128)] (a checkpoint's weight and weight_scale_inv). Throws kBadInput, naming `what`,
// when a scale is not a positive finite number or a code is NaN.
Fp8Weight fp8_block_weight(int64_t rows, int64_t cols, std::vector<uint8_t> codes,
                           std::vector<float> scales, Fp8Format format, const std::string& what);
// Weights stacked along their rows (one format and scale kind), each keeping its scale rows.
Fp8Weight stack_fp8_rows(const std::vector<const Fp8Weight*>& parts);

// Activations [rows, cols] quantised by a scheme: codes, and their scales: one (static,
// dynamic_tensor), one per row (dynamic_token) or one per row and K group (group_128).
struct Fp8Activations {
  Fp8ActScale kind = Fp8ActScale::kDynamicToken;
  int64_t rows = 0, cols = 0;
  std::vector<uint8_t> codes;  // [rows, cols]
  int64_t scale_cols = 1;      // K groups per row for group_128, else 1
  std::vector<float> scales;   // [1] or [rows, scale_cols]
  bool stage_scale = false;    // dynamic_tensor's scale came from a whole MoE stage
  float scale(int64_t row, int64_t k_group) const {
    if (scales.size() == 1) return scales[0];
    return scales[static_cast<size_t>(row * scale_cols + (scale_cols > 1 ? k_group : 0))];
  }
};

Fp8Activations quantize_activations(const HostTensor& x, const Fp8Scheme& scheme);

// The scheme of the GEMMs over the parts of one input that a fused kernel quantises as a whole
// (an MoE stage: every expert's rows): with dynamic_tensor, each part's GEMM takes the max over
// all parts (stage_scale), so each element gets the code quantising the whole input gives it;
// the other schemes are per row and stay as they are.
Fp8Scheme fp8_stage_scheme(const Fp8Scheme& scheme, const std::vector<const HostTensor*>& parts);
// The note a stage's scale gets: "0.0123 (max over the MoE stage's 24 input rows)"; "" when the
// scheme has no stage scale.
std::string fp8_stage_note(const Fp8Scheme& stage, const std::vector<const HostTensor*>& parts);

}  // namespace nvdet
