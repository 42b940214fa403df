#pragma once
#include <string>

namespace nvdet {
// "Intel(R) Xeon(R) ... (2 cores)", read from /proc/cpuinfo; "unknown CPU" when unreadable.
std::string host_cpu_description();
}  // namespace nvdet
