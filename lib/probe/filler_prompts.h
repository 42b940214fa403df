#pragma once
// The fillers' prompts: seeded words, a pure function of (seed, filler, length), so that every
// context and every machine puts the same load beside the probe.
#include <cstdint>
#include <string>

namespace nvdet {

// `words` words (each at most 15 bytes, separated by spaces) for filler `index`.
std::string filler_prompt(uint64_t seed, int64_t index, int32_t words);

}  // namespace nvdet
