#pragma once
// Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as 1, 2, 3", SC
// 2011): a counter-based generator, a pure function of (counter, key). The seeded samplers use it
// so that any draw can be made on its own, keyed by what it belongs to (seed, request, step), with
// no generator state that other requests advance. tests/philox_test.cpp checks the published
// known-answer vectors.
#include <array>
#include <cstdint>

namespace nvdet {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

inline PhiloxCounter philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;  // round multipliers
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;  // Weyl key increments
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += kW0;
      k[1] += kW1;
    }
    const uint64_t p0 = uint64_t{kM0} * c[0], p1 = uint64_t{kM1} * c[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
  }
  return c;
}

// A double in [0, 1) from the first two words of a Philox output (53 random bits).
inline double philox_uniform(const PhiloxCounter& out) {
  const uint64_t bits = (uint64_t{out[0]} << 32 | out[1]) >> 11;
  return static_cast<double>(bits) * 0x1.0p-53;
}

}  // namespace nvdet
