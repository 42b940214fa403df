#include "lib/probe/filler_prompts.h"

#include <array>
#include <string_view>

#include "lib/core/seeded_random.h"

namespace nvdet {
namespace {

// Plain words that any tokenizer splits into a token or two each.
constexpr std::array<std::string_view, 64> kWords = {
    "the",    "river",  "stone",   "light",  "green",    "over",    "under",   "quiet",
    "window", "garden", "morning", "cold",   "bright",   "paper",   "small",   "house",
    "after",  "before", "during",  "along",  "mountain", "valley",  "clock",   "table",
    "letter", "number", "winter",  "summer", "yellow",   "market",  "bridge",  "forest",
    "silver", "simple", "harbor",  "engine", "circle",   "pencil",  "orange",  "planet",
    "story",  "music",  "friend",  "travel", "signal",   "harvest", "library", "evening",
    "north",  "south",  "storm",   "cloud",  "field",    "wheel",   "candle",  "ladder",
    "basket", "tunnel", "castle",  "island", "meadow",   "copper",  "thunder", "shadow"};

}  // namespace

std::string filler_prompt(uint64_t seed, int64_t index, int32_t words) {
  std::string out;
  const uint64_t stream = splitmix64(seed ^ splitmix64(static_cast<uint64_t>(index) + 0x51ed));
  for (int32_t i = 0; i < words; ++i) {
    if (i) out += ' ';
    out += kWords[splitmix64(stream + static_cast<uint64_t>(i)) % kWords.size()];
  }
  return out;
}

}  // namespace nvdet
