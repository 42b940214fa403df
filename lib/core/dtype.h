#pragma once
// Element types nvdet hashes and compares, with exact host-side conversions. bf16 and fp16 are
// stored as their raw 16-bit patterns; conversion to float is exact, conversion from float rounds
// to nearest even (what CUDA's __float2bfloat16_rn / __float2half_rn do), so the CPU backends and
// the GPU kernels round identically.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nvdet {

enum class DType : uint8_t { kBF16, kFP16, kFP32 };

std::string_view dtype_name(DType t);  // "bf16", "fp16", "fp32"
std::optional<DType> parse_dtype(std::string_view name);
size_t dtype_size(DType t);

float bf16_bits_to_float(uint16_t bits);
uint16_t float_to_bf16_bits(float v);  // round to nearest even; NaN stays NaN
float fp16_bits_to_float(uint16_t bits);
uint16_t float_to_fp16_bits(float v);  // round to nearest even, overflow to inf

// Element i of a raw buffer of type `t`, read as float (exact) or written from a float (rounded
// to nearest even). Callers take the buffer pointer once, outside their loops.
inline float load_element(const std::byte* base, DType t, int64_t i) {
  switch (t) {
    case DType::kFP32: return reinterpret_cast<const float*>(base)[i];
    case DType::kBF16: return bf16_bits_to_float(reinterpret_cast<const uint16_t*>(base)[i]);
    case DType::kFP16: return fp16_bits_to_float(reinterpret_cast<const uint16_t*>(base)[i]);
  }
  return 0.0f;
}
inline void store_element(std::byte* base, DType t, int64_t i, float v) {
  switch (t) {
    case DType::kFP32: reinterpret_cast<float*>(base)[i] = v; break;
    case DType::kBF16: reinterpret_cast<uint16_t*>(base)[i] = float_to_bf16_bits(v); break;
    case DType::kFP16: reinterpret_cast<uint16_t*>(base)[i] = float_to_fp16_bits(v); break;
  }
}

// Converts `count` floats to `t`'s bit patterns into `out` (count * dtype_size(t) bytes), each
// rounded to nearest even once.
void floats_to_dtype(const float* in, int64_t count, DType t, std::byte* out);

// Rounds a float to the precision of `t` and back (identity for fp32).
float round_to_dtype(float v, DType t);

// Distance in units in the last place between two values of type `t` given as raw bit patterns
// (bits in the low dtype_size(t)*8 bits). Equal values (including +0/-0) give 0; a NaN on either
// side gives UINT64_MAX.
uint64_t ulp_distance(DType t, uint64_t a_bits, uint64_t b_bits);

}  // namespace nvdet
