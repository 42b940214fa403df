#pragma once
// The two 8-bit floating-point formats of FP8 inference (OCP 8-bit floating point, as Hopper's
// tensor cores, cuBLASLt and PyTorch's float8_e4m3fn / float8_e5m2 define them):
//
//   e4m3 ("FN": finite only): 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities;
//        the largest value 448 (0x7e), the smallest subnormal 2^-9; NaN is 0x7f and 0xff.
//   e5m2: 1 sign, 5 exponent (bias 15), 2 mantissa bits (the top byte of an fp16); the largest
//        finite value 57344 (0x7b), infinities 0x7c / 0xfc, NaN 0x7d..0x7f and 0xfd..0xff.
//
// Every code converts to float exactly. The conversion from float is the one serving stacks use
// when they quantise: round to nearest, ties to even (subnormals included), saturating at the
// largest finite value (vLLM clamps to +-max before the cast, which is the same as
// __nv_cvt_float_to_fp8 with __NV_SATFINITE); infinities saturate too, NaN stays NaN (0x7f with
// the input's sign). PyTorch's plain `.to(float8_e4m3fn)` does not saturate (it gives NaN above
// 464), which is why the quantisers clamp first.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvdet {

enum class Fp8Format : uint8_t { kE4M3, kE5M2 };

std::string_view fp8_format_name(Fp8Format f);  // "e4m3", "e5m2"
std::optional<Fp8Format> parse_fp8_format(std::string_view name);
const std::vector<std::string>& fp8_format_words();  // the names, in enum order

// The largest finite value: 448 (e4m3), 57344 (e5m2).
float fp8_max(Fp8Format f);

// Exact value of a code (NaN for the NaN codes, +-inf for e5m2's infinities).
float fp8_to_float(uint8_t code, Fp8Format f);
// Round to nearest even, saturating at +-fp8_max(f); NaN -> 0x7f | sign.
uint8_t float_to_fp8(float v, Fp8Format f);

}  // namespace nvdet
