#pragma once
// One replay of serving traffic (README "Serving traffic"): the requests of traffic_requests.h go
// through the scheduler (traffic_scheduler.h) step by step, each step one pass of the engine over
// all its rows - decode rows and prompt chunks together, so every GEMM and RMSNorm sees the row
// count the traffic makes, while attention_decode computes the decode rows and
// attention_prefill the chunks - over the pages traffic_pages.h hands out and shares. The engine
// is the one greedy_decode would take for the backend (device-resident where offered).
//
// What comes back for each watched probe is what a fixed-batch decode gives (decoder.h): its
// logits rows and completion (shorter when EOS ended it; the rows past it zeros) and its trace,
// step 0 being its prompt's rows from its trace_from position on, gathered over its chunks, and
// step t the pass that gave its t-th token; plus what shared each of its steps (ProbeStep). The
// replay stops once every watched probe has finished: what runs after cannot change them.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lib/model/decode_pass.h"
#include "lib/model/decoder.h"
#include "lib/model/traffic_pages.h"
#include "lib/model/traffic_requests.h"
#include "lib/model/traffic_scheduler.h"

namespace nvdet {

struct TrafficProgress {
  int64_t steps = 0, finished = 0, requests = 0, generated_tokens = 0;
};

struct TrafficRunOptions {
  SchedulerSettings scheduler;
  int32_t page_size = 16;
  std::vector<int32_t> eos_tokens;  // empty: EOS off
  DecodePath path = DecodePath::kAuto;
  std::function<void(const TrafficProgress&)> on_step;  // after every step
};

class TrafficReplay final : public PassTrace {
 public:
  // `watched`: indices into the probes (TrafficRequest::probe) whose results come back, in that
  // order; the observer's `watched` index is the position in it. `notes` receives the case's
  // notes (the decoder, the replay's steps and prefix-cache hits).
  TrafficReplay(Backend& backend, const ModelWeights& weights, std::vector<TrafficRequest> requests,
                const TrafficRunOptions& options, const std::vector<size_t>& watched,
                TensorObserver* observer, RunNotes* notes);
  ~TrafficReplay() override;

  std::vector<SequenceResult> run();

  // Tokens every request generated (the throughput the reports give).
  int64_t generated_tokens() const { return generated_; }
  const std::vector<TrafficRequest>& requests() const { return requests_; }
  const TrafficScheduler& scheduler() const { return *scheduler_; }
  // For tests: called after each step, and the cache as it stands (PassEngine::cached_kv).
  std::function<void(const StepPlan&)> after_step;
  HostTensor cached_kv(int32_t layer, size_t request, int32_t count) {
    return engine_->cached_kv(layer, request, count);
  }

  bool tracing() const override { return observer_ != nullptr; }
  bool watched(size_t seq) const override { return watch_.at(seq) >= 0; }
  void emit(const Pass& p, int32_t layer, std::string_view op, const RowFetch& rows) override;
  void emit_head(const Pass& p, std::string_view op, const RowFetch& rows) override;

 private:
  struct Pending {
    int32_t layer = 0;
    std::string op;
    std::vector<HostTensor> pieces;
  };

  Pass pass_of(const StepPlan& plan) const;
  EngineStep engine_step(const StepPlan& plan, const Pass& p);
  void keep(size_t w, int32_t layer, std::string_view op, HostTensor rows);
  bool all_watched_finished() const;

  Backend& backend_;
  const ModelWeights& w_;
  std::vector<TrafficRequest> requests_;
  TrafficRunOptions options_;
  TensorObserver* observer_;
  RunNotes* notes_;
  std::vector<int> watch_;  // per request: its watched index, or -1
  std::shared_ptr<TrafficPages> pages_;
  std::unique_ptr<TrafficScheduler> scheduler_;
  RunNotes step_notes_;  // layer 0's notes of the step under way (steps that hold a probe)
  std::unique_ptr<PassEngine> engine_;
  std::string decoder_;
  std::vector<std::vector<Pending>> pending_;  // per watched probe: its prompt's traced rows
  std::vector<std::vector<HostTensor>> logits_;
  std::vector<std::vector<ProbeStep>> steps_;
  int64_t generated_ = 0;
};

}  // namespace nvdet
