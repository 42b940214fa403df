#pragma once
// The one mixing function behind all seeded data (tensors, KV caches, prompts): a pure function
// of its input, so any element of any stream can be made independently of the others.
#include <cstdint>

namespace nvdet {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace nvdet
