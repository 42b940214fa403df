// parallel_for: every item runs exactly once whatever the number of workers, and a worker thread
// that cannot be created (here: an address-space limit below one thread stack, as `ulimit -v`
// sets it) makes the calling thread run the missing ranges instead of std::terminate (SIGABRT).
#include "lib/core/parallel.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <system_error>
#include <thread>
#include <vector>

#include "lib/core/seeded_random.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

// Each item's value from its index alone, so any partition gives the same vector.
std::vector<uint64_t> run(int64_t workers, int64_t n) {
  std::vector<uint64_t> out(static_cast<size_t>(n), 0);
  parallel_for_ranges_with(workers, n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[static_cast<size_t>(i)] += splitmix64(static_cast<uint64_t>(i) + 7);
  });
  return out;
}

TEST(ParallelFor, EveryItemOnceWhateverTheWorkerCount) {
  const std::vector<uint64_t> one = run(1, 1001);
  for (uint64_t v : one) ASSERT_NE(v, 0u);
  for (int64_t w : {2, 3, 16, 5000}) EXPECT_EQ(run(w, 1001), one) << w << " workers";
}

// Small work runs on the calling thread; large work gets every worker; the count grows with the
// work in between and an overflowing product saturates instead of wrapping to a small count.
TEST(ParallelFor, WorkersFollowTheWork) {
  const int64_t all = parallel_workers();
  // No more workers than CPUs this process may run on (under `taskset -c 0`: one).
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  if (!std::getenv("NVDET_CPU_THREADS")) EXPECT_LE(all, CPU_COUNT(&set));
  EXPECT_GE(all, 1);
  EXPECT_EQ(workers_for(0, 1000), 1);
  EXPECT_EQ(workers_for(1, kMinWorkPerWorker * 64), 1);  // one item cannot be split
  EXPECT_EQ(workers_for(64, 256), 1);                    // a tiny model's norm: 16 Ki
  EXPECT_EQ(workers_for(1000, kMinWorkPerWorker), std::min<int64_t>(all, 1000));
  EXPECT_EQ(workers_for(2, kMinWorkPerWorker), std::min<int64_t>(all, 2));
  EXPECT_EQ(workers_for(int64_t{1} << 40, int64_t{1} << 40), all);
  EXPECT_EQ(workers_for(4, -5), 1);  // a nonsense estimate counts as the least work
  // Whatever the count, every item runs once.
  std::vector<int> seen(5000, 0);
  parallel_for(5000, kMinWorkPerWorker, [&](int64_t i) { ++seen[static_cast<size_t>(i)]; });
  for (int v : seen) ASSERT_EQ(v, 1);
}

// In the death test's child: limits the address space to what is in use plus 1 MiB (no 8 MiB
// thread stack can be mapped), runs a 16-worker loop and exits 0 when every item came out right.
// Unused (and so not compiled) under AddressSanitizer, whose test below skips.
#ifndef NVDET_ASAN
[[noreturn]] void run_under_address_limit(const std::vector<uint64_t>& expected) {
  long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  std::vector<uint64_t> out(expected.size(), 0);  // allocated before the limit
  const rlim_t limit =
      static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (1 << 20);
  const rlimit rl{limit, limit};
  if (pages == 0 || setrlimit(RLIMIT_AS, &rl) != 0) std::_Exit(3);
  try {  // the limit must really stop thread creation, or the test proves nothing
    std::thread([] {}).join();
    std::_Exit(4);
  } catch (const std::system_error&) {
  }
  parallel_for_ranges_with(16, static_cast<int64_t>(out.size()), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[static_cast<size_t>(i)] += splitmix64(static_cast<uint64_t>(i) + 7);
  });
  std::_Exit(out == expected ? 0 : 1);
}
#endif

TEST(ParallelFor, ThreadsThatCannotBeCreatedRunOnTheCallingThread) {
#ifdef NVDET_ASAN
  GTEST_SKIP() << "AddressSanitizer's shadow memory does not run under an address-space limit";
#else
  // A fresh process for the child: a forked one could reuse thread stacks that glibc cached for
  // the threads of earlier tests, and then no thread creation would fail.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::vector<uint64_t> expected = run(1, 4096);
  EXPECT_EXIT(run_under_address_limit(expected), ::testing::ExitedWithCode(0), "");
#endif
}

}  // namespace
}  // namespace nvdet
