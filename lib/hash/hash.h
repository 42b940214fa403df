#pragma once
// Bitwise hashes of outputs: XXH3-128 over the raw bytes. hash.cpp is the only file that
// includes xxhash.h.
#include <absl/types/span.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

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

// The XXH3-128 of bytes fed in pieces (a checkpoint's files, read a block at a time): the same
// value as hash_bytes of the pieces joined.
class StreamHash {
 public:
  StreamHash();
  ~StreamHash();
  StreamHash(const StreamHash&) = delete;
  StreamHash& operator=(const StreamHash&) = delete;
  void update(absl::Span<const std::byte> bytes);
  void update(std::string_view text) {
    update({reinterpret_cast<const std::byte*>(text.data()), text.size()});
  }
  Hash128 digest() const;

 private:
  void* state_;  // XXH3_state_t, which only hash.cpp sees
};

}  // namespace nvdet
