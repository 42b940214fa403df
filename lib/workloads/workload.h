#pragma once
// A workload turns (scenario, context) into op calls on a backend and returns the probed
// requests' outputs. It owns every input tensor: the probed requests' data is a pure function of
// (seed, request id), so it is the same in every context; only the neighbours and the batch
// shape change. Weights are built once and stay the same objects (GPU backends upload them once).
#include <memory>
#include <string>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/hash/hash.h"
#include "lib/scenario/context.h"
#include "lib/scenario/scenario.h"
#include "lib/workloads/traffic_steps.h"

namespace nvdet {

// The hash of one intermediate tensor of a request (model workloads): which decode step, layer
// and op produced it. Two contexts' traces show the first op whose bits parted.
struct TraceEntry {
  int32_t step = 0;   // 0 = prefill, then one per generated token
  int32_t layer = 0;  // -1 for ops outside the layers (embedding, final norm, LM head)
  std::string op;     // "attn_norm", "qkv_proj", "attention", ...
  Hash128 hash;
};

struct RequestOutput {
  int64_t request = 0;
  HostTensor output;                // [tokens, ...]: the first dimension is the token
  std::vector<int32_t> completion;  // model workloads: generated token ids
  std::vector<TraceEntry> trace;    // model workloads: per (step, layer, op) hashes, in order
  // Model workloads with a scoring pass (lib/model/scoring_pass.h): its logits rows, fp32
  // [tokens, vocab] like `output` (empty without one), and its trace in the same layout.
  HostTensor score_logits;
  std::vector<TraceEntry> score_trace;
  // Model workloads under serving traffic: what shared each of the request's steps (in step
  // order; empty without traffic).
  std::vector<ProbeStep> traffic_steps;
};

// One representative op call of a context, for `nvdet bench`: its arguments borrow tensors that
// the BenchCase owns. flops and bytes (the fewest bytes the op must move) give TFLOP/s and GB/s.
struct BenchCase {
  virtual ~BenchCase() = default;
  OpArgs args;
  double flops = 0.0;
  double bytes = 0.0;
};

class Workload {
 public:
  virtual ~Workload() = default;
  // Names of the coordinates of one request's output tensor, e.g. {"token", "col"}.
  virtual std::vector<std::string> coord_names() const = 0;
  virtual std::vector<RequestOutput> run(Backend& backend, const Context& context,
                                         RunNotes* notes) = 0;
  virtual std::unique_ptr<BenchCase> bench_case(const Context& context) = 0;
  // Tokens one case of the context generates (model workloads: batch x max_new_tokens), so that
  // the reports can give its throughput; 0 for ops that generate none.
  virtual int64_t generated_tokens(const Context&) const { return 0; }
};

// Per-op checks of what a scenario says that the loader cannot judge alone (the op table's
// OpSpec::check, lib/loader/op_table.h): each throws Error(kBadInput) with the place in the file.
// The workloads run them too, so that a workload is never built from a scenario they refuse.
void check_gemm_scenario(const Scenario& s);   // a tp the weight cannot be split by, tf32 with tp
void check_moe_scenario(const Scenario& s);    // experts and top_k within their limits
void check_model_scenario(const Scenario& s);  // the model's shape, every tp against its heads

// Per-op factories (one file each; the op table, lib/loader/op_table.h, names them). Each throws
// Error(kBadInput) for contexts the op cannot take (found before any backend runs).
std::unique_ptr<Workload> make_gemm_workload(const Scenario& s);
std::unique_ptr<Workload> make_rmsnorm_workload(const Scenario& s);
std::unique_ptr<Workload> make_log_softmax_workload(const Scenario& s);
std::unique_ptr<Workload> make_attention_decode_workload(const Scenario& s);
std::unique_ptr<Workload> make_attention_prefill_workload(const Scenario& s);
std::unique_ptr<Workload> make_moe_workload(const Scenario& s);
std::unique_ptr<Workload> make_model_workload(const Scenario& s);

}  // namespace nvdet
