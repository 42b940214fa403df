#pragma once
// What an OpenAI-compatible server returned for one request, read from its JSON body or from the
// chunks of its stream, at the finest level it gave: the text always; each token's text, id and
// log probability with its top alternatives where it gave them. Both log-probability shapes are
// read: the chat one ("logprobs": {"content": [{"token", "logprob", "top_logprobs": [...]}]},
// which llama-server also gives for completions, with "id"s) and the legacy completions one
// ("logprobs": {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}]}).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/runner/audit_result.h"
#include "lib/scenario/probe_spec.h"

namespace nvdet {

struct ServedAlternative {
  std::string text;
  std::optional<int32_t> id;
  double logprob = 0.0;
};

struct ServedToken {
  std::string text;
  std::optional<int32_t> id;
  std::optional<double> logprob;
  std::vector<ServedAlternative> top;  // in the order the server listed them
};

struct ServedOutput {
  std::string text;
  std::string finish_reason;
  std::vector<ServedToken> tokens;  // empty when the server gave text only
  int chunks = 0;                   // stream chunks that carried text or tokens
};

// Reads one response: a whole JSON body, or a stream's chunks one by one. A chunk that is not
// what an OpenAI-compatible server sends (no "choices", a field of the wrong type) or that
// carries an "error" leaves a sentence in error() and is not read.
class ServedOutputReader {
 public:
  explicit ServedOutputReader(ServerApi api) : api_(api) {}
  // One chunk's text (a JSON object); false when it is malformed or an error.
  bool add_text(std::string_view json_text);
  bool add(const nlohmann::json& chunk);
  const std::string& error() const { return error_; }
  const ServedOutput& output() const { return out_; }

 private:
  bool fail(const std::string& why);
  bool add_choice(const nlohmann::json& choice);
  bool add_logprobs(const nlohmann::json& logprobs);
  ServerApi api_;
  ServedOutput out_;
  std::string error_;
};

// The finest level an output holds: "logprobs", "tokens" or "text".
std::string served_level(const ServedOutput& o);
// What each output coordinate of a probe's divergences means at that level.
std::vector<std::string> served_coord_names(const std::string& level);

// The record of one probed prompt's run: its hash over every byte and bit the server returned
// (text, finish reason, each token's text, id, log probability and top alternatives), one hash
// per token, the token ids (where every token has one) and the completion as reports show it.
RequestRecord served_record(int64_t request, const ServedOutput& o);

// Where `run` parts from `baseline` (the probe's first run alone); nullopt when they are bitwise
// the same. Fills the Divergence's token, first mismatch (a token's log probability, or a byte of
// the text), max |diff| of the log probabilities before the first differing token, the counts,
// and its `served` part.
std::optional<Divergence> compare_served(const ServedOutput& baseline, const ServedOutput& run);

}  // namespace nvdet
