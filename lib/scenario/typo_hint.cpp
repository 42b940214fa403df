#include "lib/scenario/typo_hint.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace nvdet {

// Optimal string alignment distance: Levenshtein plus adjacent swaps, so that the usual typos
// ("fp61" for "fp16", "sweeps" for "sweep") each cost one.
size_t edit_distance(std::string_view a, std::string_view b) {
  const auto eq = [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  };
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (eq(a[i - 1], b[j - 1]) ? 0 : 1)});
      if (i > 1 && j > 1 && eq(a[i - 1], b[j - 2]) && eq(a[i - 2], b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string typo_hint(std::string_view word, const std::vector<std::string>& candidates) {
  size_t best = std::numeric_limits<size_t>::max();
  std::string best_word;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best) best = d, best_word = c;
  }
  // For one- and two-letter words any single edit reaches another word: a hint would be noise.
  const size_t allowed =
      best_word.size() <= 2 ? 0 : std::min<size_t>(3, (best_word.size() + 1) / 3);
  if (best_word.empty() || best > allowed) return "";
  return " (did you mean '" + best_word + "'?)";
}

}  // namespace nvdet
