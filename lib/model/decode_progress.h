#pragma once
// Progress of the model decode under way, for long audits: after every decode step the model
// runner reports the backend, the context, steps done of max_new_tokens and the tokens per
// second the batch has decoded so far (prefill included). `nvdet audit` installs a sink that
// shows it beside its per-case progress; nothing is reported without one, and a sink changes
// no result.
#include <functional>
#include <string>

namespace nvdet {

struct DecodeProgress {
  std::string backend, context;
  int steps_done = 0, steps_total = 0;
  double tokens_per_second = 0;  // generated tokens of the whole batch / seconds since the start
  // Set under serving traffic, whose step count is not known ahead: what to show instead of
  // "step N of M" ("step 57, 12 of 40 requests finished").
  std::string detail;
};

using DecodeProgressSink = std::function<void(const DecodeProgress&)>;

// Replaces the process's sink (an empty function removes it). Not thread-safe: set it before
// the audit starts.
void set_decode_progress_sink(DecodeProgressSink sink);
const DecodeProgressSink& decode_progress_sink();

}  // namespace nvdet
