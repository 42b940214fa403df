#include "lib/backend/host_timer.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace nvdet {

Timing time_host_driven(const std::function<void()>& run, const TimingOptions& opts,
                        const std::function<void()>& before_each) {
  for (int i = 0; i < opts.warmup; ++i) run();
  std::vector<double> us;
  for (int i = 0; i < std::max(1, opts.repetitions); ++i) {
    if (before_each) before_each();
    const auto start = std::chrono::steady_clock::now();
    run();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::sort(us.begin(), us.end());
  Timing t;
  t.median_us = us[us.size() / 2];
  t.min_us = us.front();
  t.max_us = us.back();
  t.repetitions = static_cast<int>(us.size());
  return t;
}

}  // namespace nvdet
