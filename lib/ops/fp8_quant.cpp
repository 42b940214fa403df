#include "lib/ops/fp8_quant.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "lib/core/error.h"
#include "lib/core/parallel.h"

namespace nvdet {
namespace {

template <class Enum>
std::optional<Enum> parse_word(std::string_view name, const std::vector<std::string>& words) {
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] == name) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

int64_t groups_of(int64_t cols) { return (cols + kFp8Group - 1) / kFp8Group; }

// max|x| over values [begin, end) of `row` (NaN ignored, as fmaxf does).
float abs_max(const float* row, int64_t begin, int64_t end) {
  float m = 0.0f;
  for (int64_t i = begin; i < end; ++i) m = std::fmax(m, std::fabs(row[i]));
  return m;
}

float dynamic_scale(float amax, Fp8Format f) {
  return std::max(amax / fp8_max(f), fp8_min_scale(f));
}

// One value's code by the scheme's arithmetic: multiply by the reciprocal, or divide.
uint8_t code_by_reciprocal(float x, float reciprocal, Fp8Format f) {
  return float_to_fp8(x * reciprocal, f);
}
uint8_t code_by_division(float x, float scale, Fp8Format f) { return float_to_fp8(x / scale, f); }

// The rows of a rank-2 tensor as floats (exact), converted in parallel.
std::vector<float> rows_as_float(const HostTensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  const std::byte* base = t.data();
  const DType dtype = t.dtype();
  const int64_t cols = t.dim(1);
  parallel_for(t.dim(0), cols, [&](int64_t r) {
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = load_element(base, dtype, r * cols + c);
  });
  return out;
}

}  // namespace

std::string_view fp8_act_scale_name(Fp8ActScale s) {
  return fp8_act_scale_words()[static_cast<size_t>(s)];
}
std::string_view fp8_weight_scale_name(Fp8WeightScale s) {
  return fp8_weight_scale_words()[static_cast<size_t>(s)];
}
std::string_view fp8_accumulation_name(Fp8Accumulation a) {
  return fp8_accumulation_words()[static_cast<size_t>(a)];
}

const std::vector<std::string>& fp8_act_scale_words() {
  static const std::vector<std::string> words = {"static", "dynamic_tensor", "dynamic_token",
                                                 "group_128"};
  return words;
}
const std::vector<std::string>& fp8_weight_scale_words() {
  static const std::vector<std::string> words = {"tensor", "channel", "block_128x128"};
  return words;
}
const std::vector<std::string>& fp8_accumulation_words() {
  static const std::vector<std::string> words = {"fast", "promoted"};
  return words;
}

std::optional<Fp8ActScale> parse_fp8_act_scale(std::string_view name) {
  return parse_word<Fp8ActScale>(name, fp8_act_scale_words());
}
std::optional<Fp8WeightScale> parse_fp8_weight_scale(std::string_view name) {
  return parse_word<Fp8WeightScale>(name, fp8_weight_scale_words());
}
std::optional<Fp8Accumulation> parse_fp8_accumulation(std::string_view name) {
  return parse_word<Fp8Accumulation>(name, fp8_accumulation_words());
}

float fp8_min_scale(Fp8Format f) { return 1.0f / (fp8_max(f) * 512.0f); }

std::string fp8_scheme_text(const Fp8Scheme& s) {
  std::string act(fp8_act_scale_name(s.act_scale));
  if (s.act_scale == Fp8ActScale::kStatic) act += " " + std::to_string(s.static_scale);
  return std::string(fp8_format_name(s.format)) + ", act_scale " + act + ", weight_scale " +
         std::string(fp8_weight_scale_name(s.weight_scale)) + ", accumulation " +
         std::string(fp8_accumulation_name(s.accumulation));
}

Fp8Weight quantize_weight(const HostTensor& w, Fp8Format format, Fp8WeightScale kind) {
  if (w.rank() != 2) throw_input_error("an FP8 weight must be a matrix, got " + w.shape_string());
  Fp8Weight q;
  q.format = format;
  q.scale_kind = kind;
  q.rows = w.dim(0);
  q.cols = w.dim(1);
  const std::vector<float> v = rows_as_float(w);
  q.codes.resize(v.size());
  q.scale_row.resize(static_cast<size_t>(q.rows));
  const int64_t cols = q.cols;
  switch (kind) {
    case Fp8WeightScale::kTensor: {
      q.scales = {dynamic_scale(abs_max(v.data(), 0, static_cast<int64_t>(v.size())), format)};
      const float reciprocal = 1.0f / q.scales[0];
      for (size_t i = 0; i < v.size(); ++i)
        q.codes[i] = code_by_reciprocal(v[i], reciprocal, format);
      break;
    }
    case Fp8WeightScale::kChannel: {
      q.scales.resize(static_cast<size_t>(q.rows));
      parallel_for(q.rows, 4 * cols, [&](int64_t r) {
        q.scales[r] = dynamic_scale(abs_max(v.data() + r * cols, 0, cols), format);
        q.scale_row[r] = static_cast<int32_t>(r);
        const float reciprocal = 1.0f / q.scales[r];
        for (int64_t c = 0; c < cols; ++c)
          q.codes[r * cols + c] = code_by_reciprocal(v[r * cols + c], reciprocal, format);
      });
      break;
    }
    case Fp8WeightScale::kBlock128: {
      const int64_t block_rows = groups_of(q.rows);
      q.scale_cols = groups_of(cols);
      q.scales.resize(static_cast<size_t>(block_rows * q.scale_cols));
      parallel_for(block_rows * q.scale_cols, 4 * kFp8Group * kFp8Group, [&](int64_t b) {
        const int64_t r0 = b / q.scale_cols * kFp8Group, c0 = b % q.scale_cols * kFp8Group;
        const int64_t r1 = std::min(q.rows, r0 + kFp8Group), c1 = std::min(cols, c0 + kFp8Group);
        float amax = 0.0f;
        for (int64_t r = r0; r < r1; ++r)
          amax = std::fmax(amax, abs_max(v.data() + r * cols, c0, c1));
        const float s = dynamic_scale(amax, format);
        q.scales[b] = s;
        for (int64_t r = r0; r < r1; ++r) {
          for (int64_t c = c0; c < c1; ++c)
            q.codes[r * cols + c] = code_by_division(v[r * cols + c], s, format);
        }
      });
      for (int64_t r = 0; r < q.rows; ++r) q.scale_row[r] = static_cast<int32_t>(r / kFp8Group);
      break;
    }
  }
  return q;
}

Fp8Weight fp8_block_weight(int64_t rows, int64_t cols, std::vector<uint8_t> codes,
                           std::vector<float> scales, Fp8Format format, const std::string& what) {
  Fp8Weight q;
  q.format = format;
  q.scale_kind = Fp8WeightScale::kBlock128;
  q.rows = rows;
  q.cols = cols;
  q.scale_cols = groups_of(cols);
  if (static_cast<int64_t>(codes.size()) != rows * cols ||
      static_cast<int64_t>(scales.size()) != groups_of(rows) * q.scale_cols) {
    throw_input_error(what + ": " + std::to_string(codes.size()) + " codes and " +
                      std::to_string(scales.size()) + " scales do not make a [" +
                      std::to_string(rows) + ", " + std::to_string(cols) +
                      "] weight in 128 x 128 blocks");
  }
  for (size_t i = 0; i < scales.size(); ++i) {
    if (!std::isfinite(scales[i]) || scales[i] <= 0.0f) {
      throw_input_error(
          fmt::format("{}: block scale {} is {}; a block scale must be a positive finite number",
                      what, i, scales[i]));
    }
  }
  for (size_t i = 0; i < codes.size(); ++i) {
    if (std::isnan(fp8_to_float(codes[i], format))) {
      throw_input_error(fmt::format("{}: element {} is an FP8 NaN ({:#04x})", what, i, codes[i]));
    }
  }
  q.codes = std::move(codes);
  q.scales = std::move(scales);
  q.scale_row.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) q.scale_row[r] = static_cast<int32_t>(r / kFp8Group);
  return q;
}

Fp8Weight stack_fp8_rows(const std::vector<const Fp8Weight*>& parts) {
  Fp8Weight out;
  out.format = parts.front()->format;
  out.scale_kind = parts.front()->scale_kind;
  out.cols = parts.front()->cols;
  out.scale_cols = parts.front()->scale_cols;
  for (const Fp8Weight* p : parts) {
    if (p->format != out.format || p->scale_kind != out.scale_kind || p->cols != out.cols ||
        p->scale_cols != out.scale_cols) {
      throw_input_error(
          "FP8 weights stacked into one GEMM must share their format, scale kind and width");
    }
    const int32_t first_scale_row = static_cast<int32_t>(out.scales.size() / out.scale_cols);
    out.codes.insert(out.codes.end(), p->codes.begin(), p->codes.end());
    out.scales.insert(out.scales.end(), p->scales.begin(), p->scales.end());
    for (int32_t r : p->scale_row) out.scale_row.push_back(first_scale_row + r);
    out.rows += p->rows;
  }
  return out;
}

Fp8Activations quantize_activations(const HostTensor& x, const Fp8Scheme& scheme) {
  if (x.rank() != 2) throw_input_error("FP8 activations must be a matrix, got " + x.shape_string());
  Fp8Activations q;
  q.kind = scheme.act_scale;
  q.rows = x.dim(0);
  q.cols = x.dim(1);
  const std::vector<float> v = rows_as_float(x);
  q.codes.resize(v.size());
  const Fp8Format f = scheme.format;
  const int64_t cols = q.cols;
  switch (scheme.act_scale) {
    case Fp8ActScale::kStatic:
    case Fp8ActScale::kDynamicTensor: {
      q.stage_scale = scheme.act_scale == Fp8ActScale::kDynamicTensor && scheme.stage_scale > 0;
      const float s = scheme.act_scale == Fp8ActScale::kStatic ? scheme.static_scale
                      : q.stage_scale
                          ? scheme.stage_scale
                          : dynamic_scale(abs_max(v.data(), 0, static_cast<int64_t>(v.size())), f);
      q.scales = {s};
      const float reciprocal = 1.0f / s;
      parallel_for(q.rows, 4 * cols, [&](int64_t r) {
        for (int64_t c = 0; c < cols; ++c)
          q.codes[r * cols + c] = code_by_reciprocal(v[r * cols + c], reciprocal, f);
      });
      break;
    }
    case Fp8ActScale::kDynamicToken: {
      q.scales.resize(static_cast<size_t>(q.rows));
      parallel_for(q.rows, 4 * cols, [&](int64_t r) {
        q.scales[r] = dynamic_scale(abs_max(v.data() + r * cols, 0, cols), f);
        const float reciprocal = 1.0f / q.scales[r];
        for (int64_t c = 0; c < cols; ++c)
          q.codes[r * cols + c] = code_by_reciprocal(v[r * cols + c], reciprocal, f);
      });
      break;
    }
    case Fp8ActScale::kGroup128: {
      q.scale_cols = groups_of(cols);
      q.scales.resize(static_cast<size_t>(q.rows * q.scale_cols));
      parallel_for(q.rows, 4 * cols, [&](int64_t r) {
        for (int64_t g = 0; g < q.scale_cols; ++g) {
          const int64_t c0 = g * kFp8Group, c1 = std::min(cols, c0 + kFp8Group);
          const float s = dynamic_scale(abs_max(v.data() + r * cols, c0, c1), f);
          q.scales[r * q.scale_cols + g] = s;
          for (int64_t c = c0; c < c1; ++c)
            q.codes[r * cols + c] = code_by_division(v[r * cols + c], s, f);
        }
      });
      break;
    }
  }
  return q;
}

Fp8Scheme fp8_stage_scheme(const Fp8Scheme& scheme, const std::vector<const HostTensor*>& parts) {
  Fp8Scheme s = scheme;
  if (s.act_scale != Fp8ActScale::kDynamicTensor) return s;
  float amax = 0.0f;
  for (const HostTensor* t : parts) {
    const std::byte* base = t->data();
    for (int64_t i = 0; i < t->numel(); ++i)
      amax = std::fmax(amax, std::fabs(load_element(base, t->dtype(), i)));
  }
  s.stage_scale = dynamic_scale(amax, s.format);
  return s;
}

std::string fp8_stage_note(const Fp8Scheme& stage, const std::vector<const HostTensor*>& parts) {
  if (stage.stage_scale <= 0) return "";
  int64_t rows = 0;
  for (const HostTensor* t : parts) rows += t->dim(0);
  return fmt::format("{:.9g} (max over the MoE stage's {} input row{})", stage.stage_scale, rows,
                     rows == 1 ? "" : "s");
}

}  // namespace nvdet
