#pragma once
// A tensor of any element type a tensor file may hold (numpy .npy, safetensors): the raw bytes in
// little-endian order, C (row-major) order, with its shape. HostTensor holds only the three types
// nvdet computes in (bf16, fp16, fp32); `nvdet diff` must also compare float64 and integer arrays
// written by other tools, bit for bit, so the readers return this and convert to HostTensor only
// when the type is one nvdet computes in.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/core/tensor.h"

namespace nvdet {

enum class ElemType : uint8_t {
  kBool,
  kI8,
  kI16,
  kI32,
  kI64,
  kU8,
  kU16,
  kU32,
  kU64,
  kF16,
  kBF16,
  kF32,
  kF64
};

// nvdet's names: "bool", "i8".."i64", "u8".."u64", "fp16", "bf16", "fp32", "fp64".
std::string_view elem_type_name(ElemType t);
// Accepts nvdet's names and the common aliases ("float32", "int64", "bfloat16", "f64", ...).
std::optional<ElemType> parse_elem_type(std::string_view name);
size_t elem_size(ElemType t);
bool is_float(ElemType t);
bool is_signed_int(ElemType t);
// The HostTensor dtype for bf16/fp16/fp32; nullopt for the others.
std::optional<DType> to_dtype(ElemType t);
ElemType from_dtype(DType t);

struct AnyTensor {
  ElemType type = ElemType::kF32;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;  // numel * elem_size, little-endian, C order

  int64_t numel() const;
  std::string shape_string() const;  // "[8, 4096]"
  // Element i as a double (exact for every type but 64-bit integers beyond 2^53) and its raw
  // bit pattern (low elem_size*8 bits).
  double value(int64_t i) const;
  uint64_t bits(int64_t i) const;
};

// Product of the dimensions; throws kBadInput on a negative dimension or an overflowing product
// (`what` names the tensor in the message).
int64_t checked_numel(const std::vector<int64_t>& shape, const std::string& what);

AnyTensor to_any(const HostTensor& t);
// bf16/fp16/fp32 only; throws kBadInput naming `what` for other types.
HostTensor to_host(const AnyTensor& t, const std::string& what);

}  // namespace nvdet

namespace nvdet {

// The tensor's bits taken as type `as` (`nvdet diff --dtype`): a no-op when it already is; 2-byte
// integers become bf16 or fp16 (numpy cannot name bf16, so such data is saved as u2/i2). Any
// other request throws kBadInput naming `what`: converting values would not be a bitwise diff.
AnyTensor reinterpret_as(AnyTensor t, ElemType as, const std::string& what);

}  // namespace nvdet
