#include "lib/workloads/workload.h"

namespace nvdet {

std::unique_ptr<Workload> make_workload(const Scenario& s) {
  switch (s.op) {
    case ScenarioOp::kGemm: return make_gemm_workload(s);
    case ScenarioOp::kRmsNorm: return make_rmsnorm_workload(s);
    case ScenarioOp::kLogSoftmax: return make_log_softmax_workload(s);
    case ScenarioOp::kAttentionDecode: return make_attention_decode_workload(s);
    case ScenarioOp::kAttentionPrefill: return make_attention_prefill_workload(s);
    case ScenarioOp::kModel: return make_model_workload(s);
  }
  return nullptr;
}

}  // namespace nvdet
