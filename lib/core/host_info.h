#pragma once
#include <string>
#include <string_view>

namespace nvdet {
// "Intel(R) Xeon(R) ... (2 cores)", read from /proc/cpuinfo; "unknown CPU" when unreadable.
std::string host_cpu_description();

// The NVIDIA kernel module's version ("580.159.04") from the text of /proc/driver/nvidia/version;
// "" when the text has none.
std::string parse_nvidia_driver_version(std::string_view proc_text);
// Reads /proc/driver/nvidia/version; "" when there is no NVIDIA driver.
std::string nvidia_driver_version();
}  // namespace nvdet
