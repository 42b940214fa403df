#include "lib/loader/op_table.h"

#include <algorithm>

#include "lib/core/error.h"

namespace nvdet {

const std::vector<OpSpec>& op_table() {
  using O = OpKind;
  static const std::vector<OpSpec> table = [] {
    std::vector<OpSpec> t;
    t.push_back({O::kGemm,
                 "out[m, n] = a[m, k] · w[n, k]^T (+ bias[n]); m = batch x tokens",
                 {{"n", &Scenario::n}, {"k", &Scenario::k}},
                 " (expected n, k; the row count m is the sweep axis 'batch')",
                 {"shape", "tokens", "bias", "tf32", "tp_split", "nccl", "fp8"},
                 {O::kGemm},
                 make_gemm_workload,
                 gemm_footprint,
                 check_gemm_scenario});
    t.push_back({O::kRmsNorm,
                 "out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight[:]",
                 {{"d", &Scenario::d}},
                 "",
                 {"shape", "tokens", "eps"},
                 {O::kRmsNorm},
                 make_rmsnorm_workload,
                 rmsnorm_footprint});
    t.push_back({O::kLogSoftmax,
                 "out[r, :] = x[r, :] - max - log(sum(exp(x[r, :] - max))) over a vocabulary row",
                 {{"v", &Scenario::v}},
                 "",
                 {"shape", "tokens"},
                 {O::kLogSoftmax},
                 make_log_softmax_workload,
                 log_softmax_footprint});
    t.push_back({O::kAttentionDecode,
                 "one query token per sequence over a paged KV cache (split-KV decode)",
                 {},
                 "",
                 {"attention"},
                 {O::kAttentionDecode},
                 make_attention_decode_workload,
                 attention_decode_footprint});
    t.push_back({O::kAttentionPrefill,
                 "causal attention of prompt chunks over a paged KV cache with a prefix cache",
                 {},
                 "",
                 {"attention", "prefill"},
                 {O::kAttentionPrefill},
                 make_attention_prefill_workload,
                 attention_prefill_footprint});
    t.push_back({O::kMoe,
                 "one mixture-of-experts block: router, softmax top-k, per-expert SwiGLU MLPs, "
                 "weighted combine",
                 {{"hidden", &Scenario::moe_hidden},
                  {"intermediate", &Scenario::moe_intermediate},
                  {"top_k", &Scenario::moe_top_k},
                  {"experts", &Scenario::moe_experts}},
                 " (expected hidden, intermediate, top_k, experts)",
                 {"shape", "tokens", "norm_topk_prob", "fp8"},
                 {O::kMoe},
                 make_moe_workload,
                 moe_footprint,
                 check_moe_scenario});
    t.push_back(
        {O::kModel,
         "a Llama-style decoder, synthetic or from a checkpoint, decoding greedily or by seeded "
         "sampling",
         {},
         "",
         {"model", "nccl", "traffic", "fp8"},
         {O::kGemm, O::kRmsNorm, O::kAttentionDecode, O::kAttentionPrefill},
         make_model_workload,
         model_footprint,
         check_model_scenario});
    t.push_back({O::kProbe,
                 "a running OpenAI-compatible server, sent the probed prompts alone and beside "
                 "seeded fillers (nvdet probe)",
                 {},
                 "",
                 {"endpoint", "probe", "fillers", "control"},
                 {},
                 nullptr,
                 probe_footprint,
                 nullptr,
                 true});
    return t;
  }();
  return table;
}

bool OpSpec::accepts_key(std::string_view key) const {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

bool OpSpec::accepts_axis(std::string_view axis) const {
  const AxisSpec* a = find_axis(axis);
  return a && a->applies_to(kind);
}

const OpSpec& op_spec(OpKind kind) {
  for (const OpSpec& spec : op_table())
    if (spec.kind == kind) return spec;
  throw_runtime_error("op " + std::to_string(static_cast<int>(kind)) + " has no op table record");
}

const OpSpec* find_op(std::string_view name) {
  for (const OpSpec& spec : op_table())
    if (spec.name() == name) return &spec;
  return nullptr;
}

std::string ops_accepting_key(std::string_view key) {
  std::vector<std::string> names;
  for (const OpSpec& spec : op_table())
    if (spec.accepts_key(key)) names.emplace_back(spec.name());
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

void refuse_server_op(const Scenario& s) {
  throw_input_error(SourceLocation{s.path, 0, 0},
                    "scenario '" + s.name + "' (op " + std::string(op_name(s.op)) +
                        ") probes a running server; run it with nvdet probe");
}

std::vector<std::string> ops_accepting_axis(std::string_view axis) {
  std::vector<std::string> names;
  for (const OpSpec& spec : op_table())
    if (spec.accepts_axis(axis)) names.emplace_back(spec.name());
  return names;
}

void check_op_scenario(const Scenario& s) {
  if (const auto check = op_spec(s.op).check) check(s);
}

std::unique_ptr<Workload> make_workload(const Scenario& s) {
  const OpSpec& spec = op_spec(s.op);
  if (!spec.make_workload) refuse_server_op(s);
  return spec.make_workload(s);
}

}  // namespace nvdet
