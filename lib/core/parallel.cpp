#include "lib/core/parallel.h"

#include <cstdlib>
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

}  // namespace nvdet
