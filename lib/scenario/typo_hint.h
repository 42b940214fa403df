#pragma once
// "Did you mean ...?" hints for unknown keys, ops, dtypes, axes and expectation words in scenario
// files. Kept apart from the loader so that other inputs (manifests, CLI flags) can use it too.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace nvdet {

// Edits (insert, delete, substitute, swap two neighbours) between two words, ignoring case.
size_t edit_distance(std::string_view a, std::string_view b);

// " (did you mean 'x'?)" when the nearest candidate is close enough to be a likely typo (about
// one edit per three letters; never for one- or two-letter candidates), else "".
std::string typo_hint(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace nvdet
