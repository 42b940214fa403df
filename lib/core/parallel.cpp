#include "lib/core/parallel.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>

#include "lib/core/checked_parse.h"

namespace nvdet {

int parallel_workers() {
  static const int workers = [] {
    if (const char* env = std::getenv("NVDET_CPU_THREADS")) {
      // Not a positive number: fall through to the hardware count.
      if (const auto n = parse_integer<int>(env); n && *n > 0) return *n;
    }
    const unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : static_cast<int>(hw);
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
