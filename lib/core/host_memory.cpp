#include "lib/core/host_memory.h"

#include <unistd.h>

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

}  // namespace nvdet
