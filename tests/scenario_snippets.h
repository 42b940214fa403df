#pragma once
// Scenario texts and refusals the loader tests share: a tiny synthetic model scenario with room
// for more model keys and top-level keys, and the sentence a refused text gets.
#include <gtest/gtest.h>

#include <string>

#include "lib/core/error.h"
#include "lib/loader/scenario_loader.h"

namespace nvdet::testing {

// A one-layer synthetic model (2 heads, 1 KV head, intermediate 128, vocabulary 256, 2 prompts of
// 8 tokens, 4 new tokens); `model_extra` goes inside `model: {...}` (", score_batch: 2"), `rest`
// before `backends:` ("sweep: {...}\n"). Its `model:` line is line 4, a `rest` line line 6.
inline std::string tiny_model_scenario(const std::string& model_extra,
                                       const std::string& rest = "") {
  return "name: m\nop: model\ndtype: bf16\nmodel: {hidden: 64, layers: 1, heads: 2, kv_heads: 1, "
         "intermediate: 128, vocab: 256, prompt_len: 8, num_prompts: 2, max_new_tokens: 4" +
         model_extra + "}\nseed: 1\n" + rest + "backends: {cpu-invariant: invariant}\n";
}

// The sentence the loader refuses `text` (as m.yaml) with; a failure when it is accepted.
inline std::string scenario_refusal(const std::string& text) {
  try {
    (void)parse_scenario(text, "m.yaml");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted:\n" << text;
  return "";
}

}  // namespace nvdet::testing

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE((text).find(part), std::string::npos) << (text) << "\nlacks: " << (part)
