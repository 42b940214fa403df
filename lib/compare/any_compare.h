#pragma once
// Bitwise comparison of tensors of any element type (nvdet diff reads float64 and integer arrays
// written by other tools). bf16/fp16/fp32 go through compare_tensors, so `nvdet diff` and the
// audit report a first mismatch identically; the other types follow the same rules:
// - fp64: ULP distance on the ordered bit patterns (+0 and -0 are 0 apart, NaN gives UINT64_MAX);
// - integers and bool: `ulp` is the integer distance |a - b| (one unit of the type).
#include "lib/compare/compare.h"
#include "lib/tensorio/any_tensor.h"

namespace nvdet {

// Throws Error(kBadInput) when element types or shapes differ; `a_name` and `b_name` (file
// names) make the sentence: "a.npy holds fp32 [2, 3] but b.npy holds bf16 [2, 3]".
TensorComparison compare_any(const AnyTensor& a, const AnyTensor& b,
                             const std::string& a_name = "A", const std::string& b_name = "B");

// "0x3ff0000000000000": zero-padded to the element width.
std::string any_bits_hex(uint64_t bits, ElemType t);

}  // namespace nvdet
