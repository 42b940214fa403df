#pragma once
// The scheduler of a serving replay (README "Serving traffic"), in a serving engine's manner.
// Requests arrive at their step and wait in order of arrival. Each step:
//   1. every running request that has its whole prompt in the cache contributes one decode
//      token (its last generated token), in the order the requests started running;
//   2. running requests whose prompt is still being prefilled contribute their next chunk, in
//      the same order, while the step's token budget (max_num_batched_tokens) lasts;
//   3. waiting requests start, oldest first, while the budget lasts and fewer than max_num_seqs
//      requests run: a starting request first takes the prompt pages the prefix cache holds
//      (prefix caching on; always leaving its last prompt token to compute), then its first chunk
//      of the rest. With chunked prefill off a prompt starts only when the rest fits the budget
//      whole, and the oldest waiting request that does not fit holds the others back.
// The step's rows are computed together: decode rows first, then the chunks, one GEMM over all of
// them. A request whose chunk completes its prompt, and every decode row, produce a token; a
// request finishes at an EOS token or at its max_new_tokens, and its pages are freed.
#include <cstdint>
#include <vector>

#include "lib/model/traffic_pages.h"
#include "lib/model/traffic_requests.h"

namespace nvdet {

struct SchedulerSettings {
  int64_t max_num_batched_tokens = 512;
  int64_t max_num_seqs = 64;
  bool prefix_caching = true;
  bool chunked_prefill = true;
};

// One request's rows in a step: prompt tokens [first, first + count), or (decode) the one token
// at position `first`.
struct ScheduledRows {
  size_t request = 0;
  int32_t first = 0, count = 0;
  bool decode = false;
  bool produces_token = false;  // a decode row, or the chunk that completes the prompt
};

struct StepPlan {
  int64_t step = 0;
  std::vector<ScheduledRows> rows;  // decode rows first, then prompt chunks
  int32_t decode_rows() const;
  int32_t prefill_rows() const;
};

enum class RequestStatus { kNotArrived, kWaiting, kRunning, kFinished };

struct RequestState {
  RequestStatus status = RequestStatus::kNotArrived;
  int32_t computed = 0;         // tokens whose K and V are in the cache
  int32_t cached = 0;           // prompt tokens taken from the prefix cache when it started
  std::vector<int32_t> output;  // generated tokens
  bool ended_at_eos = false;
};

class TrafficScheduler {
 public:
  // `requests` in waiting-queue order (traffic_requests.h); `pages` sized so that the running
  // requests never exhaust it. Throws Error(kBadInput) for a request the settings can never
  // schedule (a prompt longer than the budget with chunked prefill off).
  TrafficScheduler(const std::vector<TrafficRequest>& requests, const SchedulerSettings& settings,
                   const std::vector<int32_t>& eos_tokens, TrafficPages& pages);

  // The next step's rows; empty once every request has finished. When nothing runs or can
  // start, the clock moves on to the next arrival first.
  StepPlan schedule();
  // The tokens the plan's token-producing rows gave, in plan order: appended, then finished
  // requests leave and free their pages.
  void commit(const StepPlan& plan, const std::vector<int32_t>& tokens);

  const RequestState& state(size_t request) const { return states_.at(request); }
  int64_t finished() const { return finished_; }

 private:
  void arrive(int64_t step);
  bool start(size_t r, int64_t& budget, StepPlan& plan);

  const std::vector<TrafficRequest>& requests_;
  SchedulerSettings settings_;
  std::vector<int32_t> eos_;
  TrafficPages& pages_;
  std::vector<RequestState> states_;
  std::vector<size_t> waiting_, running_;  // request indices, in queue / start order
  size_t next_arrival_ = 0;                // requests_ are in arrival order
  int64_t clock_ = 0;
  int64_t finished_ = 0;
};

}  // namespace nvdet
