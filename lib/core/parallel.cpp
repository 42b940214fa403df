#include "lib/core/parallel.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>

#include "lib/core/checked_parse.h"

namespace nvdet {
namespace {

// The CPUs this process may run on: the hardware's count, cut to the affinity mask (taskset,
// a container's cpuset) and to a cgroup v2 CPU quota (`docker --cpus 2` leaves every core
// visible but grants two cores' time). Threads beyond that only wait for each other.
int available_cpus() {
  int n = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    n = n > 0 ? std::min(n, CPU_COUNT(&set)) : CPU_COUNT(&set);
  if (std::ifstream quota("/sys/fs/cgroup/cpu.max"); quota) {
    std::string max;
    int64_t period = 0;
    if (quota >> max >> period && max != "max" && period > 0) {
      if (const auto q = parse_integer<int64_t>(max); q && *q > 0) {
        const int64_t cores = std::max<int64_t>(1, (*q + period - 1) / period);
        if (n <= 0 || cores < n) n = static_cast<int>(cores);
      }
    }
  }
  return std::max(n, 1);
}

}  // namespace

int parallel_workers() {
  static const int workers = [] {
    if (const char* env = std::getenv("NVDET_CPU_THREADS")) {
      // Not a positive number: fall through to the hardware count.
      if (const auto n = parse_integer<int>(env); n && *n > 0) return *n;
    }
    return available_cpus();
  }();
  return workers;
}

int64_t workers_for(int64_t n, int64_t work_per_item) {
  if (n <= 0) return 1;
  // Saturating: n * work_per_item can overflow for a huge sweep of large items.
  const int64_t per_item = std::max<int64_t>(work_per_item, 1);
  const int64_t total = n > std::numeric_limits<int64_t>::max() / per_item
                            ? std::numeric_limits<int64_t>::max()
                            : n * per_item;
  return std::clamp<int64_t>(total / kMinWorkPerWorker, 1,
                             std::min<int64_t>(parallel_workers(), n));
}

}  // namespace nvdet
