// nvdet list: the ops, backends and sweep axes this build knows.
#include <fmt/format.h>

#include "lib/backend/backend.h"
#include "lib/scenario/scenario.h"
#include "tools/command.h"

namespace nvdet::cli {

Action add_list_command(CLI::App& app) {
  app.add_subcommand("list", "List ops, backends and sweep axes");
  return [] {
    fmt::print("ops:\n");
    for (ScenarioOp op : {ScenarioOp::kGemm, ScenarioOp::kRmsNorm, ScenarioOp::kLogSoftmax,
                          ScenarioOp::kAttentionDecode, ScenarioOp::kAttentionPrefill,
                          ScenarioOp::kModel}) {
      fmt::print("  {}\n", scenario_op_name(op));
    }
    fmt::print("backends:\n");
    for (const BackendRegistration& r : backend_registry()) {
      fmt::print("  {:<20} {:<4} {}{}\n", r.info.name, r.info.gpu ? "gpu" : "cpu",
                 r.info.description, r.info.invariant_by_design ? " [invariant by design]" : "");
      for (const auto& [op, what] : r.info.stands_for) {
        fmt::print("  {:<20}      {}: {}\n", "", op, what);
      }
    }
    fmt::print("sweep axes:\n");
    for (const AxisDescription& a : known_axes()) {
      std::string ops;
      for (ScenarioOp op : a.ops) ops += (ops.empty() ? "" : ",") + std::string(scenario_op_name(op));
      fmt::print("  {:<15} {} (ops: {})\n", a.name, a.help, ops);
    }
    fmt::print("expectations: invariant, variant, report\n");
    return 0;
  };
}

}  // namespace nvdet::cli
