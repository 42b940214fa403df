// NCCL's real all-reduce (lib/cuda/nccl_allreduce.cpp) against the simulated orders, on two or
// more GPUs of one process. Labelled `gpu` and `multigpu`; skipped with fewer than two GPUs or in
// a build without NCCL.
//
// What is claimed and checked: with 2 ranks every order is one bf16 add, so NCCL's result must be
// the simulation's bit for bit, whatever algorithm, protocol and channels NCCL picks. With 3 ranks
// a ring's sum is ((x[s] + x[s+1]) + x[s+2]) for the rank s where the element's chunk starts, and
// those three rotations are every sequential order of three terms, whatever ring NCCL built: the
// test asserts that each element is one of them in bf16 with a rounding per add (not an fp32
// accumulation), and prints how many elements the simulated chunking (lib/ops/allreduce.h)
// predicts exactly, since NCCL's own chunk sizes vary with its version.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "lib/backend/nccl_collective.h"
#include "lib/core/tensor.h"
#include "lib/ops/allreduce.h"
#include "tests/allreduce_fixture.h"

namespace nvdet {
namespace {

int gpus_or_skip_reason(std::string* why) {
  const int n = nccl_device_count(why);
  if (n < 2 && why->empty()) *why = "fewer than 2 GPUs (" + std::to_string(n) + ")";
  return n;
}

using testing::pointers;

std::vector<HostTensor> seeded_ranks(int n, int64_t count, uint64_t seed) {
  return testing::seeded_ranks(n, count, seed, 300);
}

// One process, one NCCL setting (NCCL caches its parameters per process): Ring, Simple, 2
// channels.
NcclSettings ring_settings() {
  NcclSettings s;
  s.algo = "Ring";
  s.proto = "Simple";
  s.min_channels = s.max_channels = 2;
  return s;
}

TEST(MultiGpuNccl, TwoRanksMatchTheSimulationBitForBit) {
  std::string why;
  if (gpus_or_skip_reason(&why) < 2) GTEST_SKIP() << why;
  for (const int64_t count : {int64_t{64}, int64_t{50000}, int64_t{3} << 20}) {
    const auto x = seeded_ranks(2, count, 7);
    RunNotes notes;
    const HostTensor got = nccl_all_reduce(pointers(x), ring_settings(), &notes);
    const HostTensor want =
        simulate_all_reduce(pointers(x), plan_all_reduce(AllReduceAlgo::kRing, 2, 2, count * 2));
    for (int64_t e = 0; e < count; ++e) ASSERT_EQ(got.bits(e), want.bits(e)) << count << " @ " << e;
    EXPECT_EQ(notes["nccl_ranks_agree"], "yes");
    EXPECT_NE(notes["nccl_settings"].find("NCCL_NVLS_ENABLE=0"), std::string::npos);
  }
  ASSERT_NE(std::getenv("NCCL_NVLS_ENABLE"), nullptr);
  EXPECT_STREQ(std::getenv("NCCL_NVLS_ENABLE"), "0");
}

TEST(MultiGpuNccl, ThreeRanksSumSequentiallyInBf16) {
  std::string why;
  const int gpus = gpus_or_skip_reason(&why);
  if (gpus < 3) GTEST_SKIP() << (why.empty() ? "needs 3 GPUs for a ring whose order shows" : why);
  const int n = 3;
  // NCCL's communicators are made once per process: the ring test above used 2 ranks, so this one
  // runs only when it runs alone (--gtest_filter) or first.
  const int64_t count = 1 << 18;
  const auto x = seeded_ranks(n, count, 8);
  HostTensor got;
  try {
    got = nccl_all_reduce(pointers(x), ring_settings(), nullptr);
  } catch (const std::exception& e) {
    GTEST_SKIP() << e.what();
  }
  const HostTensor sim =
      simulate_all_reduce(pointers(x), plan_all_reduce(AllReduceAlgo::kRing, 2, n, count * 2));
  int64_t predicted = 0;
  for (int64_t e = 0; e < count; ++e) {
    bool some_rotation = false;
    for (int start = 0; start < n && !some_rotation; ++start) {
      float s = x[start].get(e);
      for (int step = 1; step < n; ++step)
        s = round_to_dtype(s + x[(start + step) % n].get(e), DType::kBF16);
      some_rotation = round_to_dtype(s, DType::kBF16) == got.get(e);
    }
    ASSERT_TRUE(some_rotation) << "element " << e << " is no ring rotation in bf16";
    predicted += got.bits(e) == sim.bits(e);
  }
  std::printf("simulated ring chunking predicts %lld of %lld elements of NCCL's result\n",
              static_cast<long long>(predicted), static_cast<long long>(count));
}

}  // namespace
}  // namespace nvdet
