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
};

using DecodeProgressSink = std::function<void(const DecodeProgress&)>;

// Replaces the process's sink (an empty function removes it). Not thread-safe: set it before
// the audit starts.
void set_decode_progress_sink(DecodeProgressSink sink);
const DecodeProgressSink& decode_progress_sink();

}  // namespace nvdet
