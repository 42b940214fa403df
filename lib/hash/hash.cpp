#include "lib/hash/hash.h"

#include <xxhash.h>

#include <cstdio>
#include <new>

#include "lib/core/checked_parse.h"

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
  const auto high = parse_integer<uint64_t>(std::string_view(s).substr(0, 16), 16);
  const auto low = parse_integer<uint64_t>(std::string_view(s).substr(16), 16);
  if (!high || !low) return false;
  out.high = *high;
  out.low = *low;
  return true;
}

Hash128 hash_bytes(absl::Span<const std::byte> bytes) {
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return {h.high64, h.low64};
}

StreamHash::StreamHash() : state_(XXH3_createState()) {
  if (!state_) throw std::bad_alloc();
  XXH3_128bits_reset(static_cast<XXH3_state_t*>(state_));
}

StreamHash::~StreamHash() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void StreamHash::update(absl::Span<const std::byte> bytes) {
  XXH3_128bits_update(static_cast<XXH3_state_t*>(state_), bytes.data(), bytes.size());
}

Hash128 StreamHash::digest() const {
  const XXH128_hash_t h = XXH3_128bits_digest(static_cast<XXH3_state_t*>(state_));
  return {h.high64, h.low64};
}

}  // namespace nvdet
