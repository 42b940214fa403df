// cpu-variant is *not* batch-invariant: the same sweeps that find one result for cpu-invariant
// (cpu_invariance_test.cpp) find at least two for cpu-variant. This proves both that the variant
// backend imitates batch-dependent vendor plans and that the sweeps can see such plans.
// The data are the seeded sweeps of tests/cpu_sweeps.h; nothing is tuned by hand.
#include <gtest/gtest.h>

#include "lib/backend/backend.h"
#include "tests/cpu_kernel_fixtures.h"
#include "tests/cpu_sweeps.h"

namespace nvdet {
namespace {

using namespace nvdet::testing;

class CpuVariant : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend = make_cpu_backend("cpu-variant");
  void expect_divergence(const DistinctResults& r) {
    RecordProperty("distinct_results", static_cast<int>(r.count()));
    EXPECT_GE(r.count(), 2u) << "expected the probe's bits to change with the batch";
    std::cout << "  " << r.count() << " distinct results, first seen at: " << r.contexts() << "\n";
  }
};

// Batch sizes 1..64 and 100, probe first: split-K 4 (m <= 16), 2 (m <= 64) and 1.
TEST_F(CpuVariant, GemmRowChangesWithTheBatch) {
  expect_divergence(sweep_gemm(*backend, batch_sweep({100}, false)));
}

// Row splits S = min(ceil(132/rows), 4, 32) and block threads 1024/256 change with the row count
// (probe: 8 rows; fillers: 1 row each, so rows = batch + 7).
TEST_F(CpuVariant, RmsNormRowChangesWithTheBatch) {
  expect_divergence(sweep_rmsnorm(*backend, batch_sweep({100, 200}, false)));
}

TEST_F(CpuVariant, LogSoftmaxRowChangesWithTheBatch) {
  expect_divergence(sweep_log_softmax(*backend, batch_sweep({100, 200}, false)));
}

// Split length follows the batch's total KV; from 14 sequences (x 8 KV heads >= 0.8 * 132) the
// batch runs unsplit.
TEST_F(CpuVariant, DecodeChangesWithTheBatch) {
  expect_divergence(sweep_decode(*backend, batch_sweep({}, false), {}));
}

// A fixed split count is honoured per request, so it removes the batch dependence: the decode
// plan then depends on the request's own KV length only.
TEST_F(CpuVariant, DecodeWithAFixedSplitCountIsBatchInvariant) {
  const DistinctResults r = sweep_decode(*backend, batch_sweep({}, false), {.num_splits = 3});
  EXPECT_EQ(r.count(), 1u) << r.contexts();
}

// The KV reduction is cut at the prefix and at the chunk start, so chunking changes the bits.
TEST_F(CpuVariant, PrefillChangesWithChunkingAndPrefix) {
  expect_divergence(sweep_prefill_chunking(*backend, {7, 64, 0}, {0}));
  expect_divergence(sweep_prefill_chunking(*backend, {0}, {0, 63, 200}));
}

}  // namespace
}  // namespace nvdet
