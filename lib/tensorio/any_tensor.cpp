#include "lib/tensorio/any_tensor.h"

#include <bit>
#include <cstring>
#include <limits>

#include "lib/core/error.h"

namespace nvdet {

static_assert(std::endian::native == std::endian::little,
              "nvdet's tensor files are little-endian; a big-endian host needs byte swaps here");

std::string_view elem_type_name(ElemType t) {
  switch (t) {
    case ElemType::kBool: return "bool";
    case ElemType::kI8: return "i8";
    case ElemType::kI16: return "i16";
    case ElemType::kI32: return "i32";
    case ElemType::kI64: return "i64";
    case ElemType::kU8: return "u8";
    case ElemType::kU16: return "u16";
    case ElemType::kU32: return "u32";
    case ElemType::kU64: return "u64";
    case ElemType::kF16: return "fp16";
    case ElemType::kBF16: return "bf16";
    case ElemType::kF32: return "fp32";
    case ElemType::kF64: return "fp64";
  }
  return "?";
}

std::optional<ElemType> parse_elem_type(std::string_view n) {
  if (auto d = parse_dtype(n)) return from_dtype(*d);
  if (n == "fp64" || n == "f64" || n == "float64" || n == "double") return ElemType::kF64;
  if (n == "bool" || n == "b1") return ElemType::kBool;
  if (n == "i8" || n == "int8") return ElemType::kI8;
  if (n == "i16" || n == "int16") return ElemType::kI16;
  if (n == "i32" || n == "int32") return ElemType::kI32;
  if (n == "i64" || n == "int64") return ElemType::kI64;
  if (n == "u8" || n == "uint8") return ElemType::kU8;
  if (n == "u16" || n == "uint16") return ElemType::kU16;
  if (n == "u32" || n == "uint32") return ElemType::kU32;
  if (n == "u64" || n == "uint64") return ElemType::kU64;
  return std::nullopt;
}

size_t elem_size(ElemType t) {
  switch (t) {
    case ElemType::kBool:
    case ElemType::kI8:
    case ElemType::kU8: return 1;
    case ElemType::kI16:
    case ElemType::kU16:
    case ElemType::kF16:
    case ElemType::kBF16: return 2;
    case ElemType::kI32:
    case ElemType::kU32:
    case ElemType::kF32: return 4;
    case ElemType::kI64:
    case ElemType::kU64:
    case ElemType::kF64: return 8;
  }
  return 1;
}

bool is_float(ElemType t) {
  return t == ElemType::kF16 || t == ElemType::kBF16 || t == ElemType::kF32 || t == ElemType::kF64;
}

bool is_signed_int(ElemType t) {
  return t == ElemType::kI8 || t == ElemType::kI16 || t == ElemType::kI32 || t == ElemType::kI64;
}

std::optional<DType> to_dtype(ElemType t) {
  switch (t) {
    case ElemType::kBF16: return DType::kBF16;
    case ElemType::kF16: return DType::kFP16;
    case ElemType::kF32: return DType::kFP32;
    default: return std::nullopt;
  }
}

ElemType from_dtype(DType t) {
  switch (t) {
    case DType::kBF16: return ElemType::kBF16;
    case DType::kFP16: return ElemType::kF16;
    case DType::kFP32: return ElemType::kF32;
  }
  return ElemType::kF32;
}

int64_t checked_numel(const std::vector<int64_t>& shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw_input_error(what + ": negative dimension " + std::to_string(d));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      throw_input_error(what + ": the shape's element count overflows");
    }
    n *= d;
  }
  return n;
}

int64_t AnyTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string AnyTensor::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

uint64_t AnyTensor::bits(int64_t i) const {
  const size_t w = elem_size(type);
  uint64_t v = 0;
  std::memcpy(&v, bytes.data() + static_cast<size_t>(i) * w, w);  // little-endian host
  return v;
}

double AnyTensor::value(int64_t i) const {
  const uint64_t b = bits(i);
  switch (type) {
    case ElemType::kBool: return b != 0 ? 1.0 : 0.0;
    case ElemType::kI8: return static_cast<int8_t>(b);
    case ElemType::kI16: return static_cast<int16_t>(b);
    case ElemType::kI32: return static_cast<int32_t>(b);
    case ElemType::kI64: return static_cast<double>(static_cast<int64_t>(b));
    case ElemType::kU8:
    case ElemType::kU16:
    case ElemType::kU32:
    case ElemType::kU64: return static_cast<double>(b);
    case ElemType::kF16: return fp16_bits_to_float(static_cast<uint16_t>(b));
    case ElemType::kBF16: return bf16_bits_to_float(static_cast<uint16_t>(b));
    case ElemType::kF32: return std::bit_cast<float>(static_cast<uint32_t>(b));
    case ElemType::kF64: return std::bit_cast<double>(b);
  }
  return 0.0;
}

AnyTensor to_any(const HostTensor& t) {
  AnyTensor a;
  a.type = from_dtype(t.dtype());
  a.shape = t.shape();
  a.bytes.assign(t.data(), t.data() + t.nbytes());
  return a;
}

HostTensor to_host(const AnyTensor& t, const std::string& what) {
  const std::optional<DType> d = to_dtype(t.type);
  if (!d) {
    throw_input_error(what + " holds " + std::string(elem_type_name(t.type)) +
                      " data; only bf16, fp16 and fp32 can be loaded");
  }
  HostTensor h(*d, t.shape);
  if (h.nbytes() != t.bytes.size()) {
    throw_input_error(what + ": " + std::to_string(t.bytes.size()) + " bytes for shape " +
                      t.shape_string());
  }
  if (!t.bytes.empty()) std::memcpy(h.mutable_data(), t.bytes.data(), t.bytes.size());
  return h;
}

AnyTensor reinterpret_as(AnyTensor t, ElemType as, const std::string& what) {
  if (t.type == as) return t;
  const bool two_byte_int = t.type == ElemType::kU16 || t.type == ElemType::kI16;
  if (two_byte_int && (as == ElemType::kBF16 || as == ElemType::kF16)) {
    t.type = as;
    return t;
  }
  throw_input_error(what + " holds " + std::string(elem_type_name(t.type)) +
                    " data, which cannot be read as " + std::string(elem_type_name(as)) +
                    " (only 2-byte integers can be taken as bf16 or fp16)");
}

}  // namespace nvdet
