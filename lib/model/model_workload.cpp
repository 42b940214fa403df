// op: model. Each probed request is one prompt decoded greedily among the context's batch. Its
// output is the logits of every step ([max_new_tokens, vocab] fp32; step 0 = the logits after the
// prompt), its completion the generated ids, and its trace one XXH3-128 hash per intermediate
// tensor of that request (its rows only) per (step, layer, op), so the runner can name the first
// op whose bits parted (decoder.h lists the ops and their order).
#include <cmath>

#include "lib/model/model_runner.h"
#include "lib/workloads/workload.h"

namespace nvdet {
namespace {

// Hashes each tensor of each watched request into its trace.
class TraceHasher final : public TensorObserver {
 public:
  explicit TraceHasher(std::vector<RequestOutput>& outputs) : outputs_(outputs) {}
  void observe(size_t watched, int32_t step, int32_t layer, std::string_view op,
               const HostTensor& rows) override {
    outputs_[watched].trace.push_back(
        {step, layer, std::string(op), hash_bytes({rows.data(), rows.nbytes()})});
  }

 private:
  std::vector<RequestOutput>& outputs_;
};

// bench_case: the LM head GEMM of one decode step ([batch, hidden] x [vocab, hidden]^T, fp32
// out), the largest single GEMM of a decode step and the one whose vendor heuristics see the
// batch size as m. Its input rows are seeded (timing does not depend on their values).
struct LmHeadBench final : BenchCase {
  std::shared_ptr<const ModelWeights> weights;
  HostTensor a;
};

class ModelWorkload final : public Workload {
 public:
  explicit ModelWorkload(const Scenario& s) : runner_(s) {}

  std::vector<std::string> coord_names() const override { return {"step", "vocab"}; }

  std::vector<RequestOutput> run(Backend& backend, const Context& c, RunNotes* notes) override {
    const Scenario& s = runner_.scenario();
    std::vector<RequestOutput> outputs(s.requests.size());
    TraceHasher hasher(outputs);
    std::vector<SequenceResult> results = runner_.run(backend, c, s.requests, &hasher, notes);
    for (size_t i = 0; i < outputs.size(); ++i) {
      outputs[i].request = s.requests[i];
      outputs[i].output = std::move(results[i].logits);
      outputs[i].completion = std::move(results[i].completion);
    }
    return outputs;
  }

  std::unique_ptr<BenchCase> bench_case(const Context& c) override {
    auto bc = std::make_unique<LmHeadBench>();
    bc->weights = runner_.shared_weights();
    const ModelConfig& cfg = bc->weights->config;
    const int64_t m = static_cast<int64_t>(runner_.batch_for(c).prompts.size());
    bc->a = HostTensor(bc->weights->dtype, {m, cfg.hidden});
    fill_normal(bc->a, runner_.scenario().seed, uint64_t{7} << 52);
    GemmArgs g;
    g.a = &bc->a;
    g.w = &bc->weights->lm_head;
    g.out_dtype = DType::kFP32;
    bc->args = g;
    const double k = cfg.hidden, n = cfg.vocab, size = dtype_size(bc->weights->dtype);
    bc->flops = 2.0 * m * n * k;
    bc->bytes = (m * k + n * k) * size + m * n * 4.0;
    return bc;
  }

 private:
  ModelRunner runner_;
};

}  // namespace

std::unique_ptr<Workload> make_model_workload(const Scenario& s) {
  return std::make_unique<ModelWorkload>(s);
}

}  // namespace nvdet
