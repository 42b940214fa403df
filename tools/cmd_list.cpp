// nvdet list: the ops (the op table), backends, sweep axes and each command's output formats
// this build knows.
#include <absl/strings/str_join.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "lib/backend/backend.h"
#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"
#include "lib/loader/op_table.h"
#include "lib/report/command_formats.h"
#include "lib/report/report_writers.h"
#include "lib/scenario/scenario.h"
#include "tools/command.h"

namespace nvdet::cli {
namespace {

// Each command's --format names, from its registry (a companion is not chosen by name).
std::vector<std::pair<std::string, std::vector<std::string>>> command_formats() {
  auto names = [](const auto& registry) {
    std::vector<std::string> out;
    for (const auto& w : registry.writers()) {
      if (w->written_with().empty()) out.emplace_back(w->name());
    }
    return out;
  };
  return {{"audit", names(report_format_registry())},
          {"report", names(report_format_registry())},
          {"probe", names(report_format_registry())},  // a server probe's result is an audit's
          {"bench", names(bench_format_registry())},
          {"bisect", names(bisect_format_registry())}};
}

// The same facts as the text listing, for tools.
nlohmann::ordered_json list_json() {
  nlohmann::ordered_json ops = nlohmann::ordered_json::array(), backends = ops, axes = ops;
  nlohmann::ordered_json op_details = ops;
  // The baseline bench takes for each op when every backend is timed (the registry's BenchRole).
  std::vector<std::string> backend_names;
  for (const BackendRegistration& r : backend_registry()) backend_names.push_back(r.info.name);
  for (const OpSpec& op : op_table()) {
    ops.push_back(std::string(op.name()));
    std::vector<std::string> shape, uses;
    for (const ShapeKey& k : op.shape) shape.push_back(k.name);
    for (const OpKind u : op.uses) uses.emplace_back(op_name(u));
    op_details.push_back(
        {{"name", std::string(op.name())},
         {"description", op.description},
         {"shape_keys", shape},
         {"keys", op.keys},
         {"axes", axes_of_op(op.kind)},
         {"uses", uses},
         // A server op has no kernels to time: null.
         {"bench_baseline",
          op.server ? nlohmann::ordered_json(nullptr)
                    : nlohmann::ordered_json(default_bench_baseline(op.kind, backend_names))}});
  }
  const DeviceFacts device = device_facts();
  for (const BackendRegistration& r : backend_registry()) {
    nlohmann::ordered_json b = {{"name", r.info.name},
                                {"kind", r.info.gpu ? "gpu" : "cpu"},
                                {"description", r.info.description},
                                {"invariant_by_design", r.info.invariant_by_design},
                                {"stands_for", r.info.stands_for}};
    b.update(backend_support_json(r, device));
    backends.push_back(std::move(b));
  }
  for (const AxisSpec& a : axis_table()) {
    axes.push_back({{"name", a.name},
                    {"help", a.help},
                    {"ops", ops_accepting_axis(a.name)},
                    {"defines_request", a.defines_request},
                    {"integers_from", a.takes_integers() ? nlohmann::ordered_json(a.min) : nullptr},
                    {"words", a.words},
                    {"default", a.default_help}});
  }
  nlohmann::ordered_json formats = nlohmann::ordered_json::object();
  for (const auto& [command, names] : command_formats()) formats[command] = names;
  return {{"ops", ops},
          {"op_details", op_details},
          {"backends", backends},
          {"axes", axes},
          {"expectations", {"invariant", "variant", "report"}},
          {"formats", formats}};
}

}  // namespace

Action add_list_command(CLI::App& app) {
  auto format = std::make_shared<std::string>("text");
  CLI::App* cmd = app.add_subcommand("list", "List ops, backends and sweep axes");
  cmd->add_option("--format", *format, "text or json")->capture_default_str();
  return [format] {
    if (*format == "json") {
      fmt::print("{}\n", list_json().dump(2));
      return 0;
    }
    if (*format != "text")
      throw_input_error("unknown --format '" + excerpt(*format) + "' (text or json)");
    fmt::print("ops:\n");
    for (const OpSpec& op : op_table()) {
      fmt::print("  {:<20} {}\n", op.name(), op.description);
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
    for (const AxisSpec& a : axis_table()) {
      std::string ops;
      for (const std::string& op : ops_accepting_axis(a.name)) {
        if (!ops.empty()) ops += ",";
        ops += op;
      }
      fmt::print("  {:<15} {} (ops: {})\n", a.name, a.help, ops);
    }
    fmt::print("expectations: invariant, variant, report\n");
    fmt::print("formats (--format):\n");
    for (const auto& [command, names] : command_formats()) {
      fmt::print("  {:<15} {}\n", command, absl::StrJoin(names, ", "));
    }
    return 0;
  };
}

}  // namespace nvdet::cli
