#pragma once
// The trainer's side of sampler/trainer parity: a probed request's prompt and completion scored
// again, as an RL trainer scores a rollout, in forward passes over a fresh KV cache (never the
// decode's), packed with seeded filler sequences. The logits at each completion position are the
// trainer's distribution for that token, to compare with the decode step's (the sampler's).
//
// The sequence scored is prompt + completion[0 .. T-2] (T = completion length): row len-1+t of
// the pass predicts completion[t], as decode step t's logits did. How it is cut:
//   chunk 0 ('whole'): one pass over the whole sequence, as a trainer computes it;
//   chunk k:           the prompt in one pass, then k completion tokens per pass over the cache
//                      those passes built (k = draft + 1 is speculative decoding's verify pass;
//                      k = 1 is decoding again).
// A pass whose sequences hold one row each runs attention_decode, as a serving engine does; any
// other pass attention_prefill (the causal, varlen kernel). Every pass runs on the host engine
// (one Backend::run per op; the device path's results are bitwise the same), sharded over
// options.tp ranks when tp > 1 (a trainer at another tensor-parallel degree than the sampler).
#include <cstdint>
#include <vector>

#include "lib/model/decoder.h"

namespace nvdet {

struct ScoreOptions {
  int32_t batch = 1;  // sequences in each pass: the scored one (first) + batch - 1 fillers
  int32_t chunk = 0;  // 0 = whole
  int32_t page_size = 16;
  uint64_t seed = 0;  // the fillers' tokens: seeded by (seed, filler_key, filler index)
  uint64_t filler_key = 0;
  Fp8Scheme fp8 = {};  // an FP8 checkpoint's activation scheme (DecodeOptions::fp8)
  TpOptions tp;        // tp > 1: every pass on the tensor-parallel engine (tp_engine.h)
};

// Scores one sequence and returns its logits rows, fp32 [T, vocab] (row t: the distribution
// completion[t] was chosen from). The observer (watched index `watched`) receives the scored
// sequence's rows of every op in the decode trace's layout: step 0 = the prompt's rows (its head
// ops: the last prompt row), step t = the row at position len-1+t; calls come in pass order, so
// with 'whole' the steps do not ascend. `notes` gets layer 0's calls as "score.<op>.<key>".
HostTensor score_sequence(Backend& backend, const ModelWeights& weights,
                          const std::vector<int32_t>& prompt,
                          const std::vector<int32_t>& completion, const ScoreOptions& options,
                          TensorObserver* observer, size_t watched, RunNotes* notes);

}  // namespace nvdet
