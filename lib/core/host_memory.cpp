#include "lib/core/host_memory.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "lib/core/checked_parse.h"

namespace nvdet {
namespace {

// "MemAvailable:   123456 kB" -> bytes; 0 when the line is missing or unreadable.
uint64_t meminfo_bytes(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string name, value, unit;
  while (in >> name >> value) {
    std::getline(in, unit);
    if (name == key + ":") {
      const auto kib = parse_integer<uint64_t>(value);
      return kib && *kib < (uint64_t{1} << 53) ? *kib * 1024 : 0;
    }
  }
  return 0;
}

uint64_t pages_bytes(int which) {
  const long pages = sysconf(which), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

}  // namespace

uint64_t available_host_bytes() {
  const uint64_t b = meminfo_bytes("MemAvailable");
  return b ? b : pages_bytes(_SC_AVPHYS_PAGES);
}

uint64_t total_host_bytes() {
  const uint64_t b = meminfo_bytes("MemTotal");
  return b ? b : pages_bytes(_SC_PHYS_PAGES);
}

HostAllocationError::HostAllocationError(const std::string& what, uint64_t bytes)
    : text_(what + " (" + binary_size_text(static_cast<double>(bytes)) + ")") {}

std::string binary_size_text(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) bytes /= 1024, ++u;
  char text[64];
  if (u == 0) std::snprintf(text, sizeof text, "%.0f B", bytes);
  else if (bytes >= 1e6) std::snprintf(text, sizeof text, "%.3g %s", bytes, units[u]);
  else std::snprintf(text, sizeof text, "%.1f %s", bytes, units[u]);
  return text;
}

}  // namespace nvdet
