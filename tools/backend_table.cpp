// The backend x op x dtype support table and what this machine can run, as data, for
// `nvdet list --format json` and `nvdet info --format json`: the registry's support tables asked
// about each scenario op (every backend op its workload calls, as the audit asks) in each dtype.
#include "lib/backend/backend.h"
#include "lib/loader/op_table.h"
#include "lib/runner/audit.h"
#include "tools/command.h"

namespace nvdet::cli {

nlohmann::ordered_json backend_support_json(const BackendRegistration& r,
                                            const DeviceFacts& device) {
  nlohmann::ordered_json supports = nlohmann::ordered_json::object();
  std::optional<Support> here;  // the first answer about this machine (not about an op or dtype)
  for (const OpSpec& op : op_table()) {
    nlohmann::ordered_json dtypes = nlohmann::ordered_json::array();
    for (const DType dt : {DType::kBF16, DType::kFP16, DType::kFP32}) {
      Scenario s;
      s.op = op.kind;
      s.dtype = dt;
      Support answer = scenario_support(s, r.info.name, device);
      if (answer.status == Support::Status::kUnsupportedOp) continue;
      dtypes.push_back(std::string(dtype_name(dt)));
      if (!here || (here->ok() && !answer.ok())) here = std::move(answer);
    }
    if (!dtypes.empty()) supports[std::string(op.name())] = dtypes;
  }
  nlohmann::ordered_json j = {{"supports", supports}, {"available", here && here->ok()}};
  if (here && !here->ok()) j["unavailable_reason"] = here->reason;
  if (!here) j["unavailable_reason"] = "computes no op of the op table";
  return j;
}

}  // namespace nvdet::cli
