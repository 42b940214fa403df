// nvdet diff through the real binary: exit codes (0 identical, 1 different, 2 unusable input),
// the first mismatch in the audit's words, the JSON shape, and .npy vs .safetensors of the same
// data comparing identical (values, dtype and shape are compared, not file bytes).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "lib/tensorio/npy.h"
#include "lib/tensorio/safetensors.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

using testing::make_temp_dir;
using testing::run_nvdet;

struct Files {
  std::filesystem::path dir;
  HostTensor t;
  std::string a_npy, b_st;
};

// A seeded fp32 [2, 3] tensor saved as .npy (nvdet's writer) and as .safetensors.
Files make_pair_files() {
  Files f;
  f.dir = make_temp_dir("diff");
  f.t = HostTensor(DType::kFP32, {2, 3});
  fill_normal(f.t, 99, 0);
  f.a_npy = (f.dir / "a.npy").string();
  f.b_st = (f.dir / "b.safetensors").string();
  write_npy(f.a_npy, f.t);
  write_safetensors(f.b_st, {{"out", &f.t}});
  return f;
}

TEST(DiffCli, NpyAndSafetensorsOfTheSameDataAreIdentical) {
  const Files f = make_pair_files();
  const auto r = run_nvdet("diff " + f.a_npy + " " + f.b_st);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("identical"), std::string::npos) << r.out;
  // A hand-built .npy (independent of nvdet's writer) of the same values: identical too.
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size());
  bytes += '\0';
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(f.t.data()), f.t.nbytes());
  testing::write_file(f.dir / "hand.npy", bytes);
  const auto h = run_nvdet("diff " + (f.dir / "hand.npy").string() + " " + f.b_st);
  EXPECT_EQ(h.exit_code, 0) << h.out << h.err;
}

TEST(DiffCli, OneUlpIsFoundAndNamed) {
  Files f = make_pair_files();
  HostTensor changed = f.t;
  // The last element, one ULP up: bits + 1.
  const uint32_t bits = static_cast<uint32_t>(changed.bits(5)) + 1;
  std::memcpy(changed.mutable_data() + 5 * 4, &bits, 4);
  write_safetensors(f.b_st, {{"out", &changed}});
  const auto r = run_nvdet("diff " + f.a_npy + " " + f.b_st + " --rows");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("element (1, 2) [flat 5]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 ulp"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 of 6 elements"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first differing row 1; 1 of 2 rows differ"), std::string::npos) << r.out;

  const auto j = run_nvdet("diff " + f.a_npy + " " + f.b_st + " --format json");
  EXPECT_EQ(j.exit_code, 1);
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  EXPECT_FALSE(doc["identical"].get<bool>());
  const nlohmann::json& fm = doc["first_mismatch"];
  EXPECT_EQ(fm["flat_index"], 5);
  EXPECT_EQ(fm["coords"], nlohmann::json::array({1, 2}));
  EXPECT_EQ(fm["ulp"], 1);
  EXPECT_EQ(fm["b_bits"].get<std::string>().size(), 10u);  // "0x" + 8 hex digits
  EXPECT_EQ(doc["tensors"][0]["mismatch_count"], 1);
  // The same object the audit report writes: the same keys.
  for (const char* key : {"flat_index", "coords", "a", "b", "a_bits", "b_bits", "ulp"}) {
    EXPECT_TRUE(fm.contains(key)) << key;
  }

  // --atol: a tolerance that covers one ULP passes, bits still reported.
  const auto tol = run_nvdet("diff " + f.a_npy + " " + f.b_st + " --atol 1e-3");
  EXPECT_EQ(tol.exit_code, 0) << tol.out;
  EXPECT_NE(tol.out.find("within --atol"), std::string::npos) << tol.out;
}

TEST(DiffCli, ShapeAndDtypeMismatchesAndBadFilesExitTwo) {
  const Files f = make_pair_files();
  HostTensor other(DType::kFP32, {3, 2});
  fill_normal(other, 99, 0);
  write_npy(f.dir / "c.npy", other);
  const auto shape = run_nvdet("diff " + f.a_npy + " " + (f.dir / "c.npy").string());
  EXPECT_EQ(shape.exit_code, 2);
  EXPECT_NE(shape.err.find("shapes differ"), std::string::npos) << shape.err;
  EXPECT_EQ(std::count(shape.err.begin(), shape.err.end(), '\n'), 1) << shape.err;

  HostTensor bf(DType::kBF16, {2, 3});
  fill_normal(bf, 99, 0);
  write_npy(f.dir / "bf.npy", bf);  // saved as <u2
  write_safetensors(f.dir / "bf.safetensors", {{"x", &bf}});
  const auto no_dtype =
      run_nvdet("diff " + (f.dir / "bf.npy").string() + " " + (f.dir / "bf.safetensors").string());
  EXPECT_EQ(no_dtype.exit_code, 2) << no_dtype.out;
  EXPECT_NE(no_dtype.err.find("element types differ"), std::string::npos) << no_dtype.err;
  const auto with_dtype = run_nvdet("diff " + (f.dir / "bf.npy").string() + " " +
                                    (f.dir / "bf.safetensors").string() + " --dtype bf16");
  EXPECT_EQ(with_dtype.exit_code, 0) << with_dtype.out << with_dtype.err;

  testing::write_file(f.dir / "bad.safetensors",
                      std::string("\xff\xff\xff\x00\x00\x00\x00\x00{}", 10));
  const auto bad = run_nvdet("diff " + f.a_npy + " " + (f.dir / "bad.safetensors").string());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("exceeds the file size"), std::string::npos) << bad.err;
  const auto missing = run_nvdet("diff " + f.a_npy + " " + (f.dir / "nope.npy").string());
  EXPECT_EQ(missing.exit_code, 2);
}

TEST(DiffCli, SafetensorsFilesPairByNameOrByTensorFlag) {
  const Files f = make_pair_files();
  HostTensor x(DType::kFP16, {4}), y(DType::kFP16, {4});
  fill_normal(x, 5, 1);
  fill_normal(y, 5, 2);
  write_safetensors(f.dir / "two.safetensors", {{"out", &f.t}, {"x", &x}});
  write_safetensors(f.dir / "three.safetensors", {{"x", &x}, {"out", &f.t}, {"y", &y}});
  const auto all = run_nvdet("diff " + (f.dir / "two.safetensors").string() + " " +
                             (f.dir / "three.safetensors").string());
  EXPECT_EQ(all.exit_code, 1) << all.out;  // y is on one side only
  EXPECT_NE(all.out.find("only in"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("0 of 2 tensors differ, 1 on one side only"), std::string::npos)
      << all.out;

  const auto ambiguous = run_nvdet("diff " + f.a_npy + " " + (f.dir / "two.safetensors").string());
  EXPECT_EQ(ambiguous.exit_code, 2);
  EXPECT_NE(ambiguous.err.find("name one with --tensor"), std::string::npos) << ambiguous.err;
  const auto named =
      run_nvdet("diff " + f.a_npy + " " + (f.dir / "two.safetensors").string() + " --tensor out");
  EXPECT_EQ(named.exit_code, 0) << named.out << named.err;
}

}  // namespace
}  // namespace nvdet
