#pragma once
// Tuning settings read from the environment (NVDET_GEMM_*, NVDET_ATTENTION_TC_*): each is absent,
// empty or "auto" for the automatic choice, else one value the variable takes; anything else is
// refused (exit 2) with the variable's name and what it takes. None of them changes what is
// computed, only how the work is spread, so they live in the environment for tests and bisecting
// rather than in scenarios.
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "lib/core/error.h"

namespace nvdet {

// The variable's text ("" when it is absent).
std::string_view env_text(const char* name);

// The variable's integer value in [lo, hi], or `automatic` when it is absent, empty or "auto".
int env_int_setting(const char* name, int lo, int hi, int automatic);

// The variable as one of its words: `automatic` when it is absent, empty or "auto", the value of
// a word of `words`; anything else is refused with the words it takes ("auto, a or b").
template <class T>
T env_word_setting(const char* name, T automatic,
                   std::initializer_list<std::pair<std::string_view, T>> words) {
  const std::string_view v = env_text(name);
  if (v.empty() || v == "auto") return automatic;
  std::string expected = "auto";
  size_t i = 0;
  for (const auto& [word, value] : words) {
    if (v == word) return value;
    expected += (++i == words.size() ? " or " : ", ") + std::string(word);
  }
  throw_input_error(std::string(name) + " must be " + expected + ", got '" + std::string(v) + "'");
}

}  // namespace nvdet
