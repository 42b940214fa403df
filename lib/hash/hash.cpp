#include "lib/hash/hash.h"

#include <xxhash.h>

#include <cstdio>

namespace nvdet {

std::string Hash128::hex() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(high),
                static_cast<unsigned long long>(low));
  return buf;
}

bool Hash128::from_hex(const std::string& s, Hash128& out) {
  if (s.size() != 32) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  out.high = std::stoull(s.substr(0, 16), nullptr, 16);
  out.low = std::stoull(s.substr(16), nullptr, 16);
  return true;
}

Hash128 hash_bytes(const void* data, size_t size) {
  const XXH128_hash_t h = XXH3_128bits(data, size);
  return {h.high64, h.low64};
}

}  // namespace nvdet
