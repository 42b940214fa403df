#pragma once
// Bitwise hashes of outputs: XXH3-128 over the raw bytes. hash.cpp is the only file that
// includes xxhash.h.
#include <absl/types/span.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace nvdet {

struct Hash128 {
  uint64_t high = 0, low = 0;
  bool operator==(const Hash128&) const = default;
  auto operator<=>(const Hash128&) const = default;
  std::string hex() const;  // 32 lowercase hex digits, high word first
  static bool from_hex(const std::string& s, Hash128& out);
};

// The hash of exactly these bytes (a whole output, or one token's row of it).
Hash128 hash_bytes(absl::Span<const std::byte> bytes);

}  // namespace nvdet
