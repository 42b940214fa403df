// cpu-invariant and cpu-variant against cpu-reference (double accumulation), for every op, input
// dtype and output dtype, on seeded data. Tolerances:
//  - fp32 outputs: max |out - ref| <= tol * max |ref| with tol = 1e-5 for GEMM (K = 1000 fp32
//    additions; worst seen 1.1e-6), 2e-6 for RMSNorm and attention (worst seen 2.5e-7 and
//    1.6e-7) and 1e-6 for log-softmax (worst seen 1.1e-7);
//  - bf16 / fp16 outputs: every element within 1 unit in the last place of the reference (the
//    fp32 result and the double one may round to neighbouring values near a tie), or within the
//    fp32 tolerance above for elements much smaller than their row (cancellation).
// Shapes are chosen to hit ragged edges: K not a multiple of the 256 chunk, N not a multiple of
// the 8-column panel, rows not a multiple of 16 lanes or 1024-element parts, KV lengths of 1 and
// not multiples of the 64-token tile or the page size, and m on each side of the variant's split-K
// thresholds.
#include <gtest/gtest.h>

#include "lib/backend/backend.h"
#include "lib/core/error.h"
#include "tests/cpu_kernel_fixtures.h"

namespace nvdet {
namespace {

using testing::expect_close_to_reference;
using testing::seeded_rows;

std::unique_ptr<Backend> cpu_backend(const std::string& name) {
  for (auto& r : cpu_backend_registrations()) {
    if (r.info.name == name) return r.make();
  }
  ADD_FAILURE() << "no CPU backend " << name;
  return nullptr;
}

std::vector<uint64_t> streams(int64_t n, uint64_t base) {
  std::vector<uint64_t> s(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) s[i] = base + i;
  return s;
}

struct Case {
  std::string backend;
  DType in;
  DType out;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.backend << " " << dtype_name(c.in) << " -> " << dtype_name(c.out);
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.backend + "_" + std::string(dtype_name(info.param.in)) + "_to_" +
                     std::string(dtype_name(info.param.out));
  for (char& c : name) c = (c == '-') ? '_' : c;
  return name;
}

class CpuKernelsVsReference : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    backend = cpu_backend(GetParam().backend);
    reference = cpu_backend("cpu-reference");
  }
  void check(const OpArgs& args, double rel_tol, const std::string& what) {
    RunNotes notes;
    const HostTensor got = backend->run(args, &notes);
    const HostTensor ref = reference->run(args, nullptr);
    std::string facts;
    for (const auto& [k, v] : notes) facts += " " + k + "=" + v;
    expect_close_to_reference(got, ref, rel_tol, 1, what + " [" + facts + " ]");
  }
  std::unique_ptr<Backend> backend, reference;
};

TEST_P(CpuKernelsVsReference, Gemm) {
  const auto [name, in, out] = GetParam();
  const HostTensor w = seeded_rows(in, 1000, streams(72, 500), 0.05f);
  const HostTensor bias = testing::seeded_vector(in, 72, 999);
  for (int64_t m : {3, 33, 70}) {  // variant: 4, 2 and 1 K splits
    const HostTensor a = seeded_rows(in, 1000, streams(m, 1));
    check(GemmArgs{&a, &w, &bias, out}, 1e-5, "gemm m=" + std::to_string(m));
    check(GemmArgs{&a, &w, nullptr, out}, 1e-5, "gemm (no bias) m=" + std::to_string(m));
  }
}

TEST_P(CpuKernelsVsReference, RmsNorm) {
  const auto [name, in, out] = GetParam();
  const HostTensor weight = testing::seeded_vector(in, 3000, 77);
  for (int64_t rows : {3, 70}) {
    const HostTensor x = seeded_rows(in, 3000, streams(rows, 10), 3.0f);
    check(RmsNormArgs{&x, &weight, 1e-6f, out}, 2e-6, "rmsnorm rows=" + std::to_string(rows));
  }
}

TEST_P(CpuKernelsVsReference, LogSoftmax) {
  const auto [name, in, out] = GetParam();
  for (int64_t rows : {3, 70}) {
    const HostTensor x = seeded_rows(in, 5000, streams(rows, 20), 4.0f);
    check(LogSoftmaxArgs{&x, out}, 1e-6, "log_softmax rows=" + std::to_string(rows));
  }
}

TEST_P(CpuKernelsVsReference, AttentionDecode) {
  const auto [name, in, out] = GetParam();
  // GQA 8 query heads on 2 KV heads; KV lengths 1, 17 (ragged page), 300, 700 (several splits).
  const auto batch = testing::make_attention_batch(in, {{1, 1}, {2, 17}, {3, 300}, {4, 700}}, 8, 2,
                                                   64, /*prefill=*/false);
  check(batch->decode(out), 2e-6, "attention_decode");
  AttentionDecodeArgs fixed = batch->decode(out);
  fixed.splits = {.split_size = 100, .num_splits = 3};
  check(fixed, 2e-6, "attention_decode with fixed splits");
}

TEST_P(CpuKernelsVsReference, AttentionPrefill) {
  const auto [name, in, out] = GetParam();
  // A whole prompt, a later chunk after a prefix, and a tiny prompt.
  const auto batch = testing::make_attention_batch(
      in, {{1, 150, 150, 0}, {2, 300, 37, 100}, {3, 5, 5, 0}}, 8, 2, 64, /*prefill=*/true);
  check(batch->prefill(out), 2e-6, "attention_prefill");
}

INSTANTIATE_TEST_SUITE_P(Backends, CpuKernelsVsReference,
                         ::testing::Values(Case{"cpu-invariant", DType::kBF16, DType::kFP32},
                                           Case{"cpu-invariant", DType::kBF16, DType::kBF16},
                                           Case{"cpu-invariant", DType::kFP16, DType::kFP16},
                                           Case{"cpu-invariant", DType::kFP32, DType::kFP32},
                                           Case{"cpu-variant", DType::kBF16, DType::kFP32},
                                           Case{"cpu-variant", DType::kBF16, DType::kBF16},
                                           Case{"cpu-variant", DType::kFP16, DType::kFP16},
                                           Case{"cpu-variant", DType::kFP32, DType::kFP32}),
                         case_name);

TEST(CpuBackends, RegistrationsDescribeThemselves) {
  const auto regs = cpu_backend_registrations();
  ASSERT_EQ(regs.size(), 4u);
  EXPECT_EQ(regs[0].info.name, "cpu-reference");
  EXPECT_EQ(regs[1].info.name, "cpu-invariant");
  EXPECT_EQ(regs[2].info.name, "cpu-variant");
  EXPECT_EQ(regs[3].info.name, "cpu-portable");
  EXPECT_TRUE(regs[1].info.invariant_by_design);
  EXPECT_FALSE(regs[2].info.invariant_by_design);
  EXPECT_TRUE(regs[3].info.invariant_by_design);
  for (const char* op :
       {"gemm", "rmsnorm", "log_softmax", "attention_decode", "attention_prefill"}) {
    EXPECT_TRUE(regs[2].info.stands_for.count(op)) << op;
  }
  for (const auto& r : regs) {
    EXPECT_FALSE(r.info.gpu);
    EXPECT_FALSE(r.info.description.empty());
    for (const auto& [op, dtypes] : all_ops_all_dtypes()) {
      for (DType t : dtypes) EXPECT_TRUE(r.supports(op, t, DeviceFacts{}).ok()) << r.info.name;
    }
  }
}

TEST(CpuBackends, RunRejectsBadArguments) {
  HostTensor a(DType::kFP32, {2, 8}), w(DType::kFP32, {4, 7});
  fill_normal(a, 1, 1);
  fill_normal(w, 1, 2);
  for (const char* name : {"cpu-reference", "cpu-invariant", "cpu-variant", "cpu-portable"}) {
    try {
      cpu_backend(name)->run(GemmArgs{&a, &w}, nullptr);
      ADD_FAILURE() << name << " accepted a.k != w.k";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
    }
  }
}

TEST(CpuBackends, RunToRunIdentical) {
  const HostTensor a = seeded_rows(DType::kBF16, 600, streams(5, 1));
  const HostTensor w = seeded_rows(DType::kBF16, 600, streams(40, 100));
  const auto batch = testing::make_attention_batch(DType::kBF16, {{1, 400}, {2, 90}}, 4, 2, 32,
                                                   /*prefill=*/false);
  for (const char* name : {"cpu-reference", "cpu-invariant", "cpu-variant"}) {
    auto b = cpu_backend(name);
    EXPECT_EQ(testing::row_bits(b->run(GemmArgs{&a, &w}, nullptr), 0, 5),
              testing::row_bits(b->run(GemmArgs{&a, &w}, nullptr), 0, 5))
        << name;
    EXPECT_EQ(testing::row_bits(b->run(batch->decode(), nullptr), 0, 2),
              testing::row_bits(b->run(batch->decode(), nullptr), 0, 2))
        << name;
  }
}

}  // namespace
}  // namespace nvdet
