// .npy: the reader against hand-built byte strings (an encoding independent of nvdet's writer:
// versions 1.0/2.0/3.0, both byte orders, Fortran order, bool, bf16 saved as u2), the writer
// against the reader, and malformed files refused with kBadInput naming the file.
#include "lib/tensorio/npy.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>

#include "lib/compare/any_compare.h"
#include "lib/core/error.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

// A .npy file built by hand: magic, version, header length (2 or 4 bytes), header, data.
std::string npy_bytes(int major, const std::string& dict, const std::string& data) {
  std::string header = dict;
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string s = "\x93NUMPY";
  s += static_cast<char>(major);
  s += '\0';
  const size_t n = header.size();
  s += static_cast<char>(n & 0xff);
  s += static_cast<char>(n >> 8);
  if (major != 1) s += std::string(2, '\0');
  return s + header + data;
}

template <class T>
std::string le_bytes(std::initializer_list<T> values) {
  std::string s;
  for (T v : values) s.append(reinterpret_cast<const char*>(&v), sizeof v);
  return s;
}

std::string input_error(const std::string& bytes, std::optional<ElemType> as = std::nullopt) {
  try {
    (void)parse_npy(bytes, "x.npy", as);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    return e.what();
  }
  return "";
}

TEST(Npy, ReadsHandBuiltLittleEndianFloat32) {
  const AnyTensor t =
      parse_npy(npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                          le_bytes<float>({1, 2, 3, 4, 5, -6.5f})),
                "x.npy");
  EXPECT_EQ(t.type, ElemType::kF32);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.value(5), -6.5);
  EXPECT_EQ(t.bits(0), 0x3f800000u);
}

TEST(Npy, ReadsBigEndianAndAllHeaderVersions) {
  // >i4 {1, -2}: big-endian bytes, swapped on read.
  const std::string be = std::string("\x00\x00\x00\x01", 4) + std::string("\xff\xff\xff\xfe", 4);
  for (int major : {1, 2, 3}) {
    const AnyTensor t = parse_npy(
        npy_bytes(major, "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", be), "x.npy");
    EXPECT_EQ(t.type, ElemType::kI32);
    EXPECT_EQ(t.value(0), 1.0) << major;
    EXPECT_EQ(t.value(1), -2.0) << major;
  }
  const AnyTensor d =
      parse_npy(npy_bytes(1, "{'descr': '>f8', 'fortran_order': False, 'shape': (), }",
                          std::string("\x3f\xf0\x00\x00\x00\x00\x00\x00", 8)),
                "x.npy");
  EXPECT_EQ(d.value(0), 1.0);
  EXPECT_TRUE(d.shape.empty());
}

TEST(Npy, FortranOrderIsTransposedToCOrder) {
  // The 2x3 matrix [[1,2,3],[4,5,6]] stored column by column: 1,4,2,5,3,6.
  const AnyTensor f =
      parse_npy(npy_bytes(1, "{'descr': '<i8', 'fortran_order': True, 'shape': (2, 3), }",
                          le_bytes<int64_t>({1, 4, 2, 5, 3, 6})),
                "x.npy");
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f.value(i), i + 1.0);
}

TEST(Npy, BoolUnsignedAndPython2Shapes) {
  const AnyTensor b =
      parse_npy(npy_bytes(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3L,), }",
                          std::string("\x01\x00\x01", 3)),
                "x.npy");
  EXPECT_EQ(b.type, ElemType::kBool);
  EXPECT_EQ(b.value(1), 0.0);
  const AnyTensor u =
      parse_npy(npy_bytes(1, "{\"descr\": \"<u8\", \"fortran_order\": False, \"shape\": (1,)}",
                          le_bytes<uint64_t>({~0ull})),
                "x.npy");
  EXPECT_EQ(u.bits(0), ~0ull);
}

TEST(Npy, Bf16StoredAsU2IsReadAsBf16WhenAsked) {
  const std::string bytes =
      npy_bytes(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }",
                le_bytes<uint16_t>({0x3f80, 0xc020}));  // bf16 1.0, -2.5
  EXPECT_EQ(parse_npy(bytes, "x.npy").type, ElemType::kU16);
  const AnyTensor t = parse_npy(bytes, "x.npy", ElemType::kBF16);
  EXPECT_EQ(t.type, ElemType::kBF16);
  EXPECT_EQ(t.value(0), 1.0);
  EXPECT_EQ(t.value(1), -2.5);
  // V2 records need to be told what they are.
  const std::string v2 = npy_bytes(1, "{'descr': '|V2', 'fortran_order': False, 'shape': (2,), }",
                                   le_bytes<uint16_t>({0x3f80, 0xc020}));
  EXPECT_NE(input_error(v2).find("--dtype bf16"), std::string::npos);
  EXPECT_EQ(parse_npy(v2, "x.npy", ElemType::kBF16).value(1), -2.5);
  // f4 data cannot be read as bf16.
  const std::string f4 = npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                                   le_bytes<float>({1.0f}));
  EXPECT_NE(input_error(f4, ElemType::kBF16).find("cannot be read as bf16"), std::string::npos);
}

TEST(Npy, WriterMatchesTheHandEncodingAndRoundTrips) {
  HostTensor h(DType::kFP32, {2, 3});
  for (int i = 0; i < 6; ++i) h.set(i, static_cast<float>(i + 1) * (i % 2 ? -1.0f : 1.0f));
  const std::string mine = encode_npy(to_any(h));
  const std::string hand =
      npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                le_bytes<float>({1, -2, 3, -4, 5, -6}));
  EXPECT_EQ(mine, hand);
  EXPECT_EQ(mine.find('\n'), 127u);  // header ends on a 64-byte boundary

  const auto dir = testing::make_temp_dir("npy");
  for (DType dt : {DType::kBF16, DType::kFP16, DType::kFP32}) {
    HostTensor t(dt, {4, 5, 3});
    fill_normal(t, 7, static_cast<uint64_t>(dt));
    write_npy(dir / "t.npy", t);
    const AnyTensor back =
        read_npy(dir / "t.npy", dt == DType::kBF16 ? std::optional(ElemType::kBF16) : std::nullopt);
    EXPECT_TRUE(compare_any(to_any(t), back).identical) << dtype_name(dt);
  }
  // A header longer than 65535 bytes is written as version 2.0; the reader refuses its 30,000
  // dimensions (more than numpy's limit of 64), so no real file needs that long a header.
  AnyTensor wide;
  wide.type = ElemType::kU8;
  wide.shape.assign(30000, 1);
  wide.bytes.assign(1, std::byte{42});
  const std::string v2 = encode_npy(wide);
  EXPECT_EQ(v2[6], 2);
  EXPECT_NE(input_error(v2).find("more than 64 dimensions"), std::string::npos);
  // 64 dimensions (the limit) read back.
  wide.shape.assign(64, 1);
  EXPECT_EQ(parse_npy(encode_npy(wide), "w.npy").value(0), 42.0);
}

TEST(Npy, MalformedFilesAreRefused) {
  const std::string ok = npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                   le_bytes<float>({1, 2}));
  EXPECT_NE(input_error("hello").find("not a .npy file"), std::string::npos);
  EXPECT_NE(input_error(ok.substr(0, ok.size() - 1)).find("the file is truncated"),
            std::string::npos);
  EXPECT_NE(input_error(ok.substr(0, 40)).find("exceeds the file size"), std::string::npos);
  std::string v9 = ok;
  v9[6] = 9;
  EXPECT_NE(input_error(v9).find("version 9.0"), std::string::npos);
  EXPECT_NE(
      input_error(
          npy_bytes(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", ""))
          .find("structured dtypes"),
      std::string::npos);
  EXPECT_NE(
      input_error(npy_bytes(1, "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", ""))
          .find("unsupported .npy dtype '|O'"),
      std::string::npos);
  EXPECT_NE(
      input_error(npy_bytes(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", ""))
          .find("unsupported"),
      std::string::npos);
  EXPECT_NE(
      input_error(npy_bytes(1, "{'descr': '<f4', 'shape': (1,), }", "")).find("'fortran_order'"),
      std::string::npos);
  EXPECT_NE(input_error(npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,) ", ""))
                .find("not a valid dict literal"),
            std::string::npos);
  EXPECT_EQ(input_error(ok), "");
  EXPECT_EQ(input_error(ok).find("x.npy"), std::string::npos);  // ok: nothing thrown
  EXPECT_EQ(input_error("hello").rfind("x.npy: ", 0), 0u);
}

}  // namespace
}  // namespace nvdet
