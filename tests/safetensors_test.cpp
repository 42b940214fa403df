// safetensors: what the writer writes the reader reads back bit for bit, a hand-built file (an
// independent encoding) reads as expected, and every kind of corrupt file is refused with
// kBadInput and a sentence naming the file, before any tensor is read.
#include "lib/tensorio/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>

#include "lib/core/error.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

using testing::make_temp_dir;
using testing::write_file;

// A safetensors file from a header text and raw data bytes, built by hand.
std::string build_file(const std::string& header, const std::string& data) {
  std::string s;
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) s += static_cast<char>((n >> (8 * i)) & 0xff);
  return s + header + data;
}

// Runs f and returns the kBadInput message it throws ("" when it does not throw).
template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
    return e.what();
  }
  return "";
}

TEST(Safetensors, WriteThenReadIsBitExact) {
  const auto dir = make_temp_dir("st");
  HostTensor a(DType::kBF16, {3, 5}), b(DType::kFP32, {7}), c(DType::kFP16, {2, 2, 2});
  fill_normal(a, 11, 0);
  fill_normal(b, 11, 1);
  fill_normal(c, 11, 2);
  const auto path = dir / "t.safetensors";
  write_safetensors(path, {{"a", &a}, {"b", &b}, {"c", &c}}, {{"scenario", "demo"}});

  const SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ(f.names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(f.contains("b"));
  EXPECT_FALSE(f.contains("d"));
  EXPECT_EQ(f.dtype("a"), "BF16");
  EXPECT_EQ(f.dtype("c"), "F16");
  EXPECT_EQ(f.shape("c"), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(f.metadata().at("scenario"), "demo");
  for (const auto& [name, t] :
       std::vector<std::pair<std::string, const HostTensor*>>{{"a", &a}, {"b", &b}, {"c", &c}}) {
    const HostTensor r = f.read(name);
    EXPECT_EQ(r.dtype(), t->dtype());
    EXPECT_EQ(r.shape(), t->shape());
    ASSERT_EQ(r.nbytes(), t->nbytes());
    EXPECT_EQ(std::memcmp(r.data(), t->data(), r.nbytes()), 0) << name;
  }
  // The data starts 8-byte aligned, as other writers do.
  const std::string bytes = testing::read_file(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + a.nbytes() + b.nbytes() + c.nbytes());
}

TEST(Safetensors, ReadsAHandBuiltFileWithEveryIntegerType) {
  const auto dir = make_temp_dir("st");
  // F32 [2] = {1.0, -2.5}; I64 [1] = {-3}; U8 [3] = {1, 2, 255}; BOOL [2]; F64 [1] = 0.1.
  std::string data;
  const float f32[2] = {1.0f, -2.5f};
  const int64_t i64 = -3;
  const unsigned char u8[3] = {1, 2, 255};
  const unsigned char bools[2] = {1, 0};
  const double f64 = 0.1;
  data.append(reinterpret_cast<const char*>(f32), 8);
  data.append(reinterpret_cast<const char*>(&i64), 8);
  data.append(reinterpret_cast<const char*>(u8), 3);
  data.append(reinterpret_cast<const char*>(bools), 2);
  data.append(reinterpret_cast<const char*>(&f64), 8);
  const std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("i":{"dtype":"I64","shape":[1],"data_offsets":[8,16]},)"
                             R"("u":{"dtype":"U8","shape":[3],"data_offsets":[16,19]},)"
                             R"("b":{"dtype":"BOOL","shape":[2],"data_offsets":[19,21]},)"
                             R"("d":{"dtype":"F64","shape":[],"data_offsets":[21,29]}}   )";
  write_file(dir / "h.safetensors", build_file(header, data));
  const SafetensorsFile f = SafetensorsFile::open(dir / "h.safetensors");
  EXPECT_EQ(f.names(), (std::vector<std::string>{"w", "i", "u", "b", "d"}));
  const HostTensor w = f.read("w");
  EXPECT_EQ(w.get(0), 1.0f);
  EXPECT_EQ(w.get(1), -2.5f);
  EXPECT_EQ(f.read_any("i").value(0), -3.0);
  EXPECT_EQ(f.read_any("u").value(2), 255.0);
  EXPECT_EQ(f.read_any("b").value(0), 1.0);
  EXPECT_EQ(f.read_any("d").value(0), 0.1);
  EXPECT_TRUE(f.read_any("d").shape.empty());
  // Integer tensors are not nvdet compute tensors.
  EXPECT_NE(input_error([&] { (void)f.read("i"); }).find("only BF16, F16 and F32"),
            std::string::npos);
  EXPECT_NE(input_error([&] { (void)f.read("nope"); }).find("no tensor named 'nope'"),
            std::string::npos);
}

struct CorruptCase {
  const char* label;
  std::string bytes;
  const char* expected;  // part of the message
};

TEST(Safetensors, CorruptFilesAreRefusedWithOneSentence) {
  const auto dir = make_temp_dir("st");
  const std::string ok_entry = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string eight(8, '\x01');
  std::string huge_len = build_file(ok_entry, eight);
  huge_len[3] = 0x07;  // header length ~117 MB in a 70-byte file
  const std::vector<CorruptCase> cases = {
      {"empty", "", "too short for a safetensors header"},
      {"truncated length", std::string("\x10\x00\x00", 3), "too short"},
      {"length beyond file", huge_len, "exceeds the file size"},
      {"truncated header", build_file(ok_entry, eight).substr(0, 30), "exceeds the file size"},
      {"bad json", build_file(R"({"w": {"dtype": "F32",)", eight), "not valid JSON"},
      {"not an object", build_file("[1,2]", ""), "not a JSON object"},
      {"unknown dtype",
       build_file(R"({"w":{"dtype":"F7","shape":[2],"data_offsets":[0,8]}})", eight),
       "unknown dtype 'F7'"},
      {"offsets out of range",
       build_file(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", eight),
       "beyond the data buffer (8 bytes)"},
      {"offsets reversed",
       build_file(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", eight),
       "end before they begin"},
      {"shape/size mismatch",
       build_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight),
       "needs 12 bytes"},
      {"dtype/size mismatch",
       build_file(R"({"w":{"dtype":"F64","shape":[2],"data_offsets":[0,8]}})", eight),
       "of F64 needs 16 bytes"},
      {"negative dim",
       build_file(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight),
       "not a non-negative integer"},
      {"overlap",
       build_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                  R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                  eight),
       "overlap"},
      {"missing key", build_file(R"({"w":{"dtype":"F32","shape":[2]}})", eight),
       "has no \"data_offsets\""},
      {"metadata not strings",
       build_file(
           R"({"__metadata__":{"k":1},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
           eight),
       "is not a string"},
  };
  for (const CorruptCase& c : cases) {
    const auto path = dir / "bad.safetensors";
    write_file(path, c.bytes);
    const std::string msg = input_error([&] { (void)SafetensorsFile::open(path); });
    EXPECT_NE(msg.find(c.expected), std::string::npos) << c.label << ": " << msg;
    EXPECT_EQ(msg.rfind(path.string() + ": ", 0), 0u) << c.label << ": " << msg;
  }
  EXPECT_NE(input_error([&] {
              (void)SafetensorsFile::open(dir / "missing.safetensors");
            }).find("cannot read safetensors file"),
            std::string::npos);
}

TEST(Safetensors, WriterRefusesDuplicateAndReservedNames) {
  const auto dir = make_temp_dir("st");
  HostTensor a(DType::kFP32, {2});
  fill_normal(a, 3, 0);
  EXPECT_NE(input_error([&] {
              write_safetensors(dir / "x.safetensors", {{"a", &a}, {"a", &a}});
            }).find("appears twice"),
            std::string::npos);
  EXPECT_NE(input_error([&] {
              write_safetensors(dir / "x.safetensors", {{"__metadata__", &a}});
            }).find("reserved"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "x.safetensors"));
}

TEST(Safetensors, EmptyTensorsAndCopiesShareTheMapping) {
  const auto dir = make_temp_dir("st");
  HostTensor empty(DType::kFP32, {0, 4}), b(DType::kBF16, {4});
  fill_normal(b, 5, 0);
  write_safetensors(dir / "e.safetensors", {{"empty", &empty}, {"b", &b}});
  SafetensorsFile copy;
  {
    const SafetensorsFile f = SafetensorsFile::open(dir / "e.safetensors");
    copy = f;
  }
  EXPECT_EQ(copy.read("empty").numel(), 0);
  EXPECT_EQ(copy.read("b").bits(3), b.bits(3));
}

// A file truncated after it was opened and validated (another process rewriting a checkpoint,
// a dump being replaced) is a short read and one sentence, never SIGBUS from a mapping.
TEST(Safetensors, FileTruncatedAfterOpenIsBadInputNotASignal) {
  const auto dir = make_temp_dir("st");
  HostTensor a(DType::kFP32, {64}), b(DType::kFP32, {256});
  fill_normal(a, 21, 0);
  fill_normal(b, 21, 1);
  const auto path = dir / "t.safetensors";
  write_safetensors(path, {{"a", &a}, {"b", &b}});
  const SafetensorsFile f = SafetensorsFile::open(path);
  const uint64_t size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 512);  // cuts into 'b' (the last 1024 bytes)
  EXPECT_EQ(f.read("a").bits(63), a.bits(63));     // 'a' is still whole
  const std::string e = input_error([&] { (void)f.read("b"); });
  EXPECT_NE(e.find("t.safetensors: ends at byte"), std::string::npos) << e;
  EXPECT_NE(e.find("truncated while nvdet read it (now " + std::to_string(size - 512) + " bytes)"),
            std::string::npos)
      << e;
  std::filesystem::resize_file(path, 0);
  EXPECT_NE(input_error([&] { (void)f.read("a"); }).find("truncated while nvdet read it"),
            std::string::npos);
}

}  // namespace
}  // namespace nvdet
