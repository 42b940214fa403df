#include "lib/tensorio/npy.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <variant>

#include "lib/core/atomic_file.h"
#include "lib/core/bounded_file.h"
#include "lib/core/checked_parse.h"
#include "lib/core/error.h"
#include "lib/core/host_memory.h"
#include "lib/core/text_excerpt.h"

namespace nvdet {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kMaxNpyHeaderBytes = size_t{1} << 20;  // numpy writes < 1 KB for any shape
constexpr size_t kMaxNpyDims = 64;                      // numpy's own limit (NPY_MAXDIMS)

[[noreturn]] void bad(const std::string& what, const std::string& message) {
  throw_input_error(what + ": " + message);
}

// The header's Python literal: a dict whose values are strings, booleans or tuples of ints.
using PyValue = std::variant<std::string, bool, std::vector<int64_t>>;

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& what) : s_(text), what_(what) {}

  std::map<std::string, PyValue> dict() {
    std::map<std::string, PyValue> out;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = string_literal();
      expect(':');
      skip_space();
      out[key] = value();
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      if (peek() == '}') break;
      fail("expected ',' or '}'");
    }
    ++i_;
    return out;
  }

 private:
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  [[noreturn]] void fail(const std::string& why) {
    const size_t from = i_ > 8 ? i_ - 8 : 0;
    bad(what_, "the .npy header is not a valid dict literal (" + why + " at character " +
                   std::to_string(i_) + ", near \"" + excerpt(s_.substr(from, 24)) + "\")");
  }
  std::string string_literal() {
    skip_space();
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    const size_t end = s_.find(q, i_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(s_.substr(i_ + 1, end - i_ - 1));
    i_ = end + 1;
    return out;
  }
  int64_t integer() {
    skip_space();
    const size_t start = i_;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    if (i_ == start) fail("expected a non-negative integer");
    const std::string digits(s_.substr(start, i_ - start));
    if (digits.size() > 18) fail("dimension too large");
    if (peek() == 'L') ++i_;  // Python 2 long literals: (3L, 4L)
    const auto v = parse_integer<int64_t>(digits);
    if (!v) fail("dimension too large");
    return *v;
  }
  PyValue value() {
    const char c = peek();
    if (c == '\'' || c == '"') return string_literal();
    if (s_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    if (c == '(') {
      ++i_;
      std::vector<int64_t> dims;
      while (true) {
        skip_space();
        if (peek() == ')') break;
        if (dims.size() >= kMaxNpyDims)
          fail("more than " + std::to_string(kMaxNpyDims) + " dimensions");
        dims.push_back(integer());
        skip_space();
        if (peek() == ',') {
          ++i_;
          continue;
        }
        if (peek() != ')') fail("expected ',' or ')' in the shape");
      }
      ++i_;
      return dims;
    }
    fail(c == '[' ? "structured dtypes are not supported" : "unexpected value");
  }

  std::string_view s_;
  const std::string& what_;
  size_t i_ = 0;
};

struct Descr {
  bool big_endian = false;
  ElemType type = ElemType::kF32;
  bool raw_void = false;  // 'V2': raw 2-byte records, meaning given by the caller
};

Descr parse_descr(const std::string& d, const std::string& what) {
  auto unsupported = [&]() -> Descr {
    bad(what, "unsupported .npy dtype '" + excerpt(d) +
                  "' (nvdet reads b1, i1/i2/i4/i8, u1/u2/u4/u8, f2, f4, f8 and V2)");
  };
  if (d.size() < 2) unsupported();
  Descr out;
  size_t pos = 0;
  if (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=') {
    out.big_endian = d[0] == '>';
    pos = 1;
  }
  const char kind = d[pos];
  const std::string size_text = d.substr(pos + 1);
  if (size_text.empty() || !std::all_of(size_text.begin(), size_text.end(), ::isdigit)) {
    unsupported();
  }
  const std::optional<int> parsed = parse_integer<int>(size_text);
  if (!parsed) unsupported();  // "f99999999999": no such size
  const int size = *parsed;
  switch (kind) {
    case 'b':
    case '?':
      if (size != 1) unsupported();
      out.type = ElemType::kBool;
      return out;
    case 'i':
      if (size == 1) out.type = ElemType::kI8;
      else if (size == 2) out.type = ElemType::kI16;
      else if (size == 4) out.type = ElemType::kI32;
      else if (size == 8) out.type = ElemType::kI64;
      else unsupported();
      return out;
    case 'u':
      if (size == 1) out.type = ElemType::kU8;
      else if (size == 2) out.type = ElemType::kU16;
      else if (size == 4) out.type = ElemType::kU32;
      else if (size == 8) out.type = ElemType::kU64;
      else unsupported();
      return out;
    case 'f':
      if (size == 2) out.type = ElemType::kF16;
      else if (size == 4) out.type = ElemType::kF32;
      else if (size == 8) out.type = ElemType::kF64;
      else unsupported();
      return out;
    case 'V':
      if (size != 2) unsupported();
      out.type = ElemType::kU16;
      out.raw_void = true;
      return out;
    default: return unsupported();
  }
}

// The element type the caller gets: the file's, or `as` where the file's bits may be read so.
ElemType resolve_type(const Descr& d, const std::string& descr, std::optional<ElemType> as,
                      const std::string& what) {
  if (!as) {
    if (d.raw_void) {
      bad(what, "holds raw 2-byte records ('" + excerpt(descr) +
                    "'); say which type they are with --dtype bf16 or --dtype fp16");
    }
    return d.type;
  }
  if (*as == d.type && !d.raw_void) return d.type;
  const bool two_byte_raw = d.raw_void || d.type == ElemType::kU16 || d.type == ElemType::kI16;
  if (two_byte_raw && (*as == ElemType::kBF16 || *as == ElemType::kF16)) return *as;
  bad(what, "holds " + std::string(d.raw_void ? "raw 2-byte" : elem_type_name(d.type)) +
                " data ('" + excerpt(descr) + "'), which cannot be read as " +
                std::string(elem_type_name(*as)));
}

// Fortran (column-major) data -> C (row-major) order, element by element.
std::vector<std::byte> fortran_to_c(const std::vector<std::byte>& f,
                                    const std::vector<int64_t>& shape, size_t elem) {
  std::vector<std::byte> c(f.size());
  const size_t rank = shape.size();
  std::vector<int64_t> stride(rank, 1);  // Fortran strides, in elements
  for (size_t k = 1; k < rank; ++k) stride[k] = stride[k - 1] * shape[k - 1];
  std::vector<int64_t> idx(rank, 0);
  const int64_t n = static_cast<int64_t>(f.size() / elem);
  int64_t src = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(c.data() + static_cast<size_t>(i) * elem,
                f.data() + static_cast<size_t>(src) * elem, elem);
    for (size_t k = rank; k-- > 0;) {  // advance the C-order index, last axis fastest
      ++idx[k];
      src += stride[k];
      if (idx[k] < shape[k]) break;
      src -= stride[k] * shape[k];
      idx[k] = 0;
    }
  }
  return c;
}

}  // namespace

AnyTensor parse_npy(std::string_view bytes, const std::string& what, std::optional<ElemType> as) {
  if (bytes.size() < kMagicLen + 4 ||
      bytes.substr(0, kMagicLen) != std::string_view(kMagic, kMagicLen)) {
    bad(what, "not a .npy file (no \\x93NUMPY magic)");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    bad(what, ".npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                  " is not supported (1.0, 2.0 and 3.0 are)");
  }
  size_t header_len = 0, header_start = 0;
  const auto byte_at = [&](size_t i) {
    return static_cast<size_t>(static_cast<unsigned char>(bytes[i]));
  };
  if (major == 1) {
    header_len = byte_at(8) | (byte_at(9) << 8);
    header_start = 10;
  } else {
    if (bytes.size() < 12) bad(what, "the .npy header is truncated");
    header_len = byte_at(8) | (byte_at(9) << 8) | (byte_at(10) << 16) | (byte_at(11) << 24);
    header_start = 12;
  }
  if (header_len > kMaxNpyHeaderBytes) {
    bad(what, "the .npy header length " + std::to_string(header_len) +
                  " is more than the limit of " + std::to_string(kMaxNpyHeaderBytes) + " bytes");
  }
  if (header_len > bytes.size() - header_start) {
    bad(what, "the .npy header length " + std::to_string(header_len) + " exceeds the file size (" +
                  std::to_string(bytes.size()) + " bytes)");
  }
  const std::map<std::string, PyValue> dict =
      HeaderParser(bytes.substr(header_start, header_len), what).dict();
  auto get = [&](const char* key) -> const PyValue& {
    auto it = dict.find(key);
    if (it == dict.end()) bad(what, std::string("the .npy header has no '") + key + "'");
    return it->second;
  };
  const auto* descr = std::get_if<std::string>(&get("descr"));
  const auto* fortran = std::get_if<bool>(&get("fortran_order"));
  const auto* shape = std::get_if<std::vector<int64_t>>(&get("shape"));
  if (!descr) bad(what, "the .npy header's 'descr' is not a string");
  if (!fortran) bad(what, "the .npy header's 'fortran_order' is not True or False");
  if (!shape) bad(what, "the .npy header's 'shape' is not a tuple of integers");

  const Descr d = parse_descr(*descr, what);
  AnyTensor t;
  t.type = resolve_type(d, *descr, as, what);
  t.shape = *shape;
  const int64_t numel = checked_numel(t.shape, what);
  const size_t elem = elem_size(t.type);
  const size_t data_start = header_start + header_len;
  const size_t have = bytes.size() - data_start;
  if (static_cast<uint64_t>(numel) > have / elem || have != static_cast<size_t>(numel) * elem) {
    bad(what, "has " + std::to_string(have) + " bytes of data but shape " + t.shape_string() +
                  " of " + *descr + " needs " +
                  std::to_string(static_cast<uint64_t>(numel) * elem) +
                  (have < static_cast<size_t>(numel) * elem ? " (the file is truncated)" : ""));
  }
  t.bytes.resize(have);
  if (have) std::memcpy(t.bytes.data(), bytes.data() + data_start, have);
  if (d.big_endian && elem > 1) {
    for (size_t i = 0; i < have; i += elem)
      std::reverse(t.bytes.begin() + i, t.bytes.begin() + i + elem);
  }
  if (*fortran && t.shape.size() > 1) t.bytes = fortran_to_c(t.bytes, t.shape, elem);
  return t;
}

AnyTensor read_npy(const std::filesystem::path& path, std::optional<ElemType> as) {
  // A regular file only (a FIFO or /dev/zero would block or never end), and one that fits in
  // this machine's free memory (exit 3 when it does not: the input is fine, the machine small).
  uint64_t size = 0;
  ::close(open_regular_file(path, ".npy file", &size));
  const uint64_t available = available_host_bytes();
  if (size > available) {
    throw_runtime_error(path.string() + ": the .npy file is " + std::to_string(size) +
                        " bytes, more than the " + std::to_string(available) +
                        " bytes of memory available here");
  }
  const std::string bytes = read_bounded_file(path, size, ".npy file");
  return parse_npy(bytes, path.string(), as);
}

std::string encode_npy(const AnyTensor& t) {
  std::string descr;
  switch (t.type) {
    case ElemType::kBool: descr = "|b1"; break;
    case ElemType::kI8: descr = "|i1"; break;
    case ElemType::kU8: descr = "|u1"; break;
    case ElemType::kI16: descr = "<i2"; break;
    case ElemType::kU16:
    case ElemType::kBF16: descr = "<u2"; break;  // numpy has no bfloat16
    case ElemType::kF16: descr = "<f2"; break;
    case ElemType::kI32: descr = "<i4"; break;
    case ElemType::kU32: descr = "<u4"; break;
    case ElemType::kF32: descr = "<f4"; break;
    case ElemType::kI64: descr = "<i8"; break;
    case ElemType::kU64: descr = "<u8"; break;
    case ElemType::kF64: descr = "<f8"; break;
  }
  std::string shape = "(";
  for (size_t i = 0; i < t.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape[i]);
  if (t.shape.size() == 1) shape += ",";
  shape += ")";
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const bool v1 = header.size() + 1 + 64 <= 65535;  // room for the padding below
  const size_t prefix = v1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(v1 ? 1 : 2);
  out += '\0';
  const size_t n = header.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (!v1) {
    out += static_cast<char>((n >> 16) & 0xff);
    out += static_cast<char>((n >> 24) & 0xff);
  }
  out += header;
  out.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  return out;
}

void write_npy(const std::filesystem::path& path, const AnyTensor& t) {
  write_file_atomic(path, encode_npy(t), ".npy file");
}

void write_npy(const std::filesystem::path& path, const HostTensor& t) {
  write_npy(path, to_any(t));
}

}  // namespace nvdet
