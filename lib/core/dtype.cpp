#include "lib/core/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace nvdet {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kBF16: return "bf16";
    case DType::kFP16: return "fp16";
    case DType::kFP32: return "fp32";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "bf16" || name == "bfloat16") return DType::kBF16;
  if (name == "fp16" || name == "float16" || name == "half") return DType::kFP16;
  if (name == "fp32" || name == "float32" || name == "float") return DType::kFP32;
  return std::nullopt;
}

size_t dtype_size(DType t) { return t == DType::kFP32 ? 4 : 2; }

float bf16_bits_to_float(uint16_t bits) { return std::bit_cast<float>(uint32_t{bits} << 16); }

uint16_t float_to_bf16_bits(float v) {
  uint32_t u = std::bit_cast<uint32_t>(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  const uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return static_cast<uint16_t>(u >> 16);
}

float fp16_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t out;
  if (exp == 0) {
    if (mant == 0) {
      out = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      out = sign | (uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    out = sign | 0x7f800000u | (mant << 13);
  } else {
    out = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(out);
}

uint16_t float_to_fp16_bits(float v) {
  const uint32_t u = std::bit_cast<uint32_t>(v);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {                        // below the smallest normal half (2^-14)
    // Subnormal half: value = m * 2^-24. Round abs/2^-24 to nearest even in float arithmetic,
    // which is exact here because the quotient has at most 24 significant bits.
    const float scaled = std::bit_cast<float>(abs) * 16777216.0f;  // * 2^24, exact
    const float r = std::nearbyint(scaled);                        // default mode: ties-to-even
    return sign | static_cast<uint16_t>(r);
  }
  // Normal: drop 13 mantissa bits with round to nearest even, re-bias the exponent.
  uint32_t rebased = abs - (uint32_t(127 - 15) << 23);
  const uint32_t lsb = (rebased >> 13) & 1u;
  rebased += 0xfffu + lsb;
  return sign | static_cast<uint16_t>(rebased >> 13);
}

void floats_to_dtype(const float* in, int64_t count, DType dtype, std::byte* out) {
  switch (dtype) {
    case DType::kFP32: std::memcpy(out, in, count * sizeof(float)); return;
    case DType::kBF16: {
      auto* o = reinterpret_cast<uint16_t*>(out);
      for (int64_t i = 0; i < count; ++i) o[i] = float_to_bf16_bits(in[i]);
      return;
    }
    case DType::kFP16: {
      auto* o = reinterpret_cast<uint16_t*>(out);
      for (int64_t i = 0; i < count; ++i) o[i] = float_to_fp16_bits(in[i]);
      return;
    }
  }
}

float round_to_dtype(float v, DType t) {
  switch (t) {
    case DType::kBF16: return bf16_bits_to_float(float_to_bf16_bits(v));
    case DType::kFP16: return fp16_bits_to_float(float_to_fp16_bits(v));
    case DType::kFP32: return v;
  }
  return v;
}

namespace {
// Maps a sign-magnitude bit pattern of `width` bits onto a monotonic unsigned line.
uint64_t ordered(uint64_t bits, int width) {
  const uint64_t sign = uint64_t{1} << (width - 1);
  const uint64_t mask = (width == 64) ? ~uint64_t{0} : ((uint64_t{1} << width) - 1);
  bits &= mask;
  return (bits & sign) ? (sign - (bits & ~sign)) : (sign + bits);
}
bool is_nan(DType t, uint64_t bits) {
  switch (t) {
    case DType::kBF16: return (bits & 0x7fffu) > 0x7f80u;
    case DType::kFP16: return (bits & 0x7fffu) > 0x7c00u;
    case DType::kFP32: return (bits & 0x7fffffffu) > 0x7f800000u;
  }
  return false;
}
}  // namespace

uint64_t ulp_distance(DType t, uint64_t a_bits, uint64_t b_bits) {
  if (is_nan(t, a_bits) || is_nan(t, b_bits)) return std::numeric_limits<uint64_t>::max();
  const int width = static_cast<int>(dtype_size(t) * 8);
  const uint64_t a = ordered(a_bits, width), b = ordered(b_bits, width);
  return a > b ? a - b : b - a;
}

}  // namespace nvdet
