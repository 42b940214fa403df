// cpu-invariant is batch-invariant, bitwise: a probe request gets the same bits at every batch
// size 1..64 (and a few larger ones), first, in the middle or last, whatever its neighbours and
// wherever its KV pages sit; prefill gets the same bits for every chunk size and prefix length.
// The same sweeps run on cpu-variant in cpu_variant_divergence_test.cpp and do find differences,
// so these sweeps can see a batch-dependent plan when there is one.
#include <gtest/gtest.h>

#include "lib/backend/backend.h"
#include "tests/cpu_kernel_fixtures.h"
#include "tests/cpu_sweeps.h"

namespace nvdet {
namespace {

using namespace nvdet::testing;

class CpuInvariant : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend = make_cpu_backend("cpu-invariant");
  void expect_one_result(const DistinctResults& r) {
    EXPECT_EQ(r.count(), 1u) << "distinct probe results first seen at: " << r.contexts();
  }
};

TEST_F(CpuInvariant, GemmRowIsBatchInvariant) {
  expect_one_result(sweep_gemm(*backend, batch_sweep({128, 257})));
}

TEST_F(CpuInvariant, RmsNormRowIsBatchInvariant) {
  expect_one_result(sweep_rmsnorm(*backend, batch_sweep({128, 257})));
}

TEST_F(CpuInvariant, LogSoftmaxRowIsBatchInvariant) {
  expect_one_result(sweep_log_softmax(*backend, batch_sweep({128, 257})));
}

TEST_F(CpuInvariant, DecodeIsBatchInvariant) {
  expect_one_result(sweep_decode(*backend, batch_sweep(), {}));
}

TEST_F(CpuInvariant, DecodeWithAFixedSplitSizeIsBatchInvariant) {
  expect_one_result(sweep_decode(*backend, batch_sweep({}, false), {.split_size = 100}));
}

TEST_F(CpuInvariant, PrefillIsBatchInvariant) {
  expect_one_result(sweep_prefill_batch(*backend, batch_sweep()));
}

TEST_F(CpuInvariant, PrefillIsChunkAndPrefixInvariant) {
  // Positions [200, 300) are computed under every (chunk, prefix) pair; all must agree.
  expect_one_result(sweep_prefill_chunking(*backend, {1, 7, 16, 64, 0}, {0, 1, 63, 200}));
}

}  // namespace
}  // namespace nvdet
