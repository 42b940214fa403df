#pragma once
// A minimal parallel loop for the CPU kernels. Items [0, n) are cut into one contiguous range
// per worker (static partition, no work stealing). The CPU kernels rely on one property: an
// item's computation never depends on which thread runs it or on the partition, so results are
// bitwise the same with 1 or N workers. Do not nest parallel_for calls.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace nvdet {

// Number of workers parallel_for uses: the CPUs this process may use (the hardware's count cut to
// its affinity mask and cgroup CPU quota; at least 1). The NVDET_CPU_THREADS environment
// variable, when set to a positive number, overrides it.
int parallel_workers();

// Calls body(begin, end) on disjoint contiguous ranges covering [0, n), one per worker, and
// returns when all are done. The first exception thrown by a worker is rethrown here. A worker
// thread that cannot be created (a memory or thread limit: `ulimit -v`, a container's pids
// limit) is no failure: its range, and those after it, run on the calling thread; since an
// item's result does not depend on the thread, the bits are the same.
template <class Body>
void parallel_for_ranges_with(int64_t workers, int64_t n, Body&& body) {
  if (n <= 0) return;
  workers = std::clamp<int64_t>(workers, 1, n);
  if (workers <= 1) {
    body(int64_t{0}, n);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<size_t>(workers));
  auto run_part = [&](int64_t w) {
    try {
      body(n * w / workers, n * (w + 1) / workers);
    } catch (...) {
      errors[static_cast<size_t>(w)] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(workers - 1));
  int64_t started = 1;
  for (; started < workers; ++started) {
    try {
      threads.emplace_back(run_part, started);
    } catch (const std::system_error&) {
      break;  // no more threads: the rest run here
    }
  }
  run_part(0);
  for (int64_t w = started; w < workers; ++w) run_part(w);
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// Below this much work (a rough count of scalar multiply-adds or element conversions) a worker
// does not pay for itself: starting and joining a thread costs tens of microseconds, and far more
// on a loaded machine, where the new thread waits for a time slice while the caller waits for it.
// The tiny models of the test suite issue thousands of calls of a few microseconds' work each; a
// thread per call made them several times slower than one thread.
inline constexpr int64_t kMinWorkPerWorker = int64_t{1} << 17;

// How many workers n items of work_per_item each get: parallel_workers(), fewer when there is not
// kMinWorkPerWorker of work for each, at least 1.
int64_t workers_for(int64_t n, int64_t work_per_item);

// Calls body(begin, end) on disjoint contiguous ranges covering [0, n), split as
// parallel_for_ranges_with does among workers_for(n, work_per_item) workers.
template <class Body>
void parallel_for_ranges(int64_t n, int64_t work_per_item, Body&& body) {
  parallel_for_ranges_with(workers_for(n, work_per_item), n, std::forward<Body>(body));
}

// Calls body(i) for every i in [0, n), split as parallel_for_ranges does. work_per_item is the
// caller's estimate of one item's work in the units of kMinWorkPerWorker; it decides only how
// many threads run, never what an item computes.
template <class Body>
void parallel_for(int64_t n, int64_t work_per_item, Body&& body) {
  parallel_for_ranges(n, work_per_item, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) body(i);
  });
}

}  // namespace nvdet
