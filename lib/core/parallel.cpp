#include "lib/core/parallel.h"

#include <cstdlib>
#include <string>

namespace nvdet {

int parallel_workers() {
  static const int workers = [] {
    if (const char* env = std::getenv("NVDET_CPU_THREADS")) {
      try {
        const int n = std::stoi(env);
        if (n > 0) return n;
      } catch (...) {
        // Not a number: fall through to the hardware count.
      }
    }
    const unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : static_cast<int>(hw);
  }();
  return workers;
}

}  // namespace nvdet
