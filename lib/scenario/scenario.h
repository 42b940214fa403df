#pragma once
// A scenario: what to run (op or model, shapes, dtype, seed), which requests to probe, the sweep
// axes whose cartesian product makes the contexts, and the backends with their expectations.
// Loaded from YAML by load_scenario() (lib/loader/scenario_loader.cpp, the only file that includes
// yaml-cpp), which validates everything and reports problems as `file:line:column: sentence`.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "lib/core/dtype.h"
#include "lib/core/error.h"
#include "lib/ops/allreduce.h"
#include "lib/ops/fp8_quant.h"
#include "lib/ops/op_kind.h"
#include "lib/scenario/axis.h"
#include "lib/scenario/probe_spec.h"
#include "lib/scenario/traffic_spec.h"

namespace nvdet {

enum class Expectation {
  kInvariant,  // any divergence fails the audit
  kVariant,    // the audit fails if no divergence is found (a canary: the sweep can see variation)
  kReport,     // record only
};
std::string_view expectation_name(Expectation e);

// Model scenarios with a scoring pass: whether the sampler's logits (the decode steps') must
// equal the trainer's (the scoring pass's) bit for bit, or are only reported.
enum class ParityExpectation {
  kReport,     // record the sampler/trainer metrics only
  kBitwise,    // any logits row that differs fails the audit
  kTolerance,  // a metric above its limit (BackendSpec::parity_tolerance) fails the audit
};
std::string_view parity_expectation_name(ParityExpectation e);

// `parity: {mismatch_kl_max: 1e-4, logprob_abs_diff_max: 1e-3}` (ParityExpectation::kTolerance):
// the largest values a backend's sampler/trainer metrics may reach (at the sampling distribution
// when the scenario samples, else at temperature 1), so that CI gates on what RL users accept
// rather than on bits. An unset limit is free.
struct ParityTolerance {
  std::optional<double> mismatch_kl_max, logprob_abs_diff_max;
};

struct BackendSpec {
  std::string name;
  Expectation expect = Expectation::kReport;
  SourceLocation where;
  ParityExpectation parity = ParityExpectation::kReport;  // backend key `parity:`
  ParityTolerance parity_tolerance = {};                  // its limits, with kTolerance
};

struct SweepAxis {
  Axis axis = Axis::kBatch;  // one the op takes (lib/scenario/axis.h)
  std::vector<AxisValue> values;
  SourceLocation where;
  const std::string& name() const { return axis_spec(axis).name; }
};

struct AttentionShape {
  int32_t num_heads = 32;
  int32_t num_kv_heads = 8;
  int32_t head_dim = 128;
  int32_t page_size = 16;
  int32_t kv_len = 1000;       // the probed requests' KV length (decode); axis kv_len overrides
  int32_t filler_kv_len = -1;  // co-batched requests' KV length; -1: same as kv_len
  std::optional<float> scale;  // default 1/sqrt(head_dim)
};

struct PrefillShape {
  int32_t prompt_len = 512;  // tokens of each probed prompt, prefix included
  int32_t chunk = 0;         // prefill chunk size; 0 = whole prompt in one chunk
  int32_t prefix_len = 0;    // tokens already in the prefix cache, computed in an earlier pass
};

// Seeded sampling of a model's tokens (model.sampling); greedy argmax when absent.
enum class SamplerKind {
  kPerRequest,   // Philox keyed by (seed, request id, step): invariant by construction
  kBatchStream,  // one stream consumed across the batch in row order, as a vendor sampler does
};
std::string_view sampler_name(SamplerKind k);

struct SamplingSpec {
  bool enabled = false;
  double temperature = 1.0;  // 0 = greedy
  int32_t top_k = 0;         // 0 = the whole vocabulary
  double top_p = 1.0;        // 1 = no nucleus cut
  uint64_t seed = 0;
  SamplerKind sampler = SamplerKind::kPerRequest;  // axis `sampler` overrides
};

// A Llama/Mistral/Qwen-style decoder (op: model). Weights are seeded synthetic unless
// `checkpoint` names a Hugging Face style folder (config.json + *.safetensors).
struct ModelSpec {
  std::string checkpoint;  // "" = synthetic
  // With a checkpoint: its folder holds only config.json; seeded weights (the scenario seed) are
  // written in the checkpoint format into a temporary folder and read back through the loader.
  bool synthetic_weights = false;
  int32_t hidden = 256;
  int32_t layers = 2;
  int32_t num_heads = 8;
  int32_t num_kv_heads = 2;
  int32_t head_dim = 0;  // 0 = hidden / num_heads
  int32_t intermediate = 512;
  int32_t vocab = 1024;
  float rms_eps = 1e-5f;
  float rope_theta = 10000.0f;
  uint64_t weight_seed = 0;                   // 0 = scenario seed
  std::vector<std::vector<int32_t>> prompts;  // token ids; or from prompts_file
  std::string prompts_file;                   // one prompt per line, ids separated by spaces
  int32_t prompt_len = 16;  // synthetic prompts of this length when none are given
  int32_t num_prompts = 4;
  int32_t max_new_tokens = 16;
  int32_t prefill_chunk = 0;  // 0 = whole prompt
  int32_t page_size = 16;
  SourceLocation where;
  // The scoring pass (lib/model/scoring_pass.h): on when `score_batch` or `score_chunk` is given
  // as a model key or swept; the axes override these defaults.
  bool score = false;
  int32_t score_batch = 1;  // sequences packed into one scoring pass: the probed one + fillers
  int32_t score_chunk = 0;  // 0 = whole sequence in one pass (the trainer); k = k tokens a pass
  // model.trainer: the scoring pass on another backend and/or tensor-parallel degree than the
  // decode (the sampler), as a serving engine feeds a training framework. "" / 0: the decoding
  // backend, at the context's tp.
  std::string trainer_backend;
  int32_t trainer_tp = 0;
  SourceLocation trainer_where;
  SamplingSpec sampling;
};

// FP8 (README "FP8"): the key `fp8:` of gemm, moe and model. Its scheme is every context's unless
// the axes fp8_format, act_scale, weight_scale and accumulation sweep a field. A model takes its
// format and weight scales from its FP8 checkpoint (the key `fp8:` there sets only act_scale and
// accumulation).
struct Fp8Spec {
  bool enabled = false;  // the key is given
  Fp8Scheme scheme;
  SourceLocation where;
};

struct Scenario {
  std::string path;  // as given on the command line
  std::string name;
  std::string description;
  OpKind op = OpKind::kGemm;
  DType dtype = DType::kBF16;
  DType out_dtype = DType::kBF16;  // default: same as dtype

  // Row ops (gemm, rmsnorm, log_softmax): each request is `tokens` consecutive rows.
  int64_t n = 0, k = 0;  // gemm: out[m, n] = a[m, k] · w[n, k]^T
  int64_t d = 0;         // rmsnorm row length
  int64_t v = 0;         // log_softmax row length (vocabulary)
  int32_t tokens = 1;
  bool bias = false;
  bool tf32 = false;
  float eps = 1e-6f;
  // op moe: shape {hidden, intermediate, top_k, experts} (intermediate: each expert's MLP width)
  // and norm_topk_prob (renormalise the k routing weights, as Qwen3-MoE and Mixtral do).
  int64_t moe_hidden = 0, moe_intermediate = 0, moe_experts = 0, moe_top_k = 0;
  bool norm_topk_prob = true;

  // Tensor parallel (README "Tensor parallel"; the axes tp, allreduce, channels): gemm's
  // `tp_split` (true: row-parallel, K split; false: column-parallel, N split) and the real
  // path's `nccl:` settings (gemm and model).
  bool tp_split_row = true;
  NcclSettings nccl;
  Fp8Spec fp8;

  AttentionShape attention;
  PrefillShape prefill;
  ModelSpec model;
  // op model: the serving traffic the probed requests are replayed under (`traffic:`).
  TrafficSpec traffic;
  ProbeSpec probe;  // op probe: the server, the probed prompts and the load beside them

  uint64_t seed = 0;
  std::vector<int64_t> requests;  // ids of the probed requests (their data is seeded by id)
  SourceLocation requests_where;
  int32_t repeat = 1;  // runs of each context (>1: run-to-run check)
  std::vector<SweepAxis> sweep;
  std::vector<BackendSpec> backends;
};

}  // namespace nvdet
