// nvdet bisect SCENARIO: the first step, layer and op whose bits differ between two contexts of a
// model scenario, the first argmax flip, and how the difference grew (lib/runner/bisect.h).
// Exit 0: a divergence was found and reported; 1: the two contexts are identical; 2: bad input.
#include <fmt/format.h>

#include <limits>

#include "lib/core/error.h"
#include "lib/loader/scenario_loader.h"
#include "lib/report/command_formats.h"
#include "lib/runner/audit.h"
#include "lib/runner/bisect.h"
#include "lib/runner/run_fingerprint.h"
#include "tools/cli_options.h"
#include "tools/command.h"

namespace nvdet::cli {
namespace {

struct BisectFlags {
  std::string scenario;
  int64_t request = -1;  // none given: the first probed request
  std::vector<std::string> context, against;
  std::string backend;
  std::string format = "text";
  bool scoring = false;
};

std::vector<std::pair<std::string, std::string>> parse_pairs(const std::vector<std::string>& items,
                                                             const std::string& flag) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      throw_input_error(flag + " '" + item + "' must look like KEY=VALUE (e.g. batch=8)");
    }
    out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  return out;
}

int run(const BisectFlags& f) {
  // One format: bisect prints it on stdout.
  const std::vector<const BisectWriter*> formats = bisect_format_registry().parse(f.format);
  if (formats.size() != 1) {
    throw_input_error("--format takes one bisect format, got '" + excerpt(f.format) +
                      "' (known formats: " + bisect_format_registry().names() + ")");
  }
  const Scenario s = load_scenario(f.scenario);
  // The audit's default budget: a model that cannot fit is refused before its weights exist.
  check_scenario_budget(
      s,
      select_backends(s, f.backend.empty() ? std::vector<std::string>{} : std::vector{f.backend}),
      Budget{});
  if (f.scoring) check_trainer(s, device_facts());  // the scoring pass runs on it
  if (const std::string note = checkpoint_rounding_note(s); !note.empty())
    fmt::print(stderr, "nvdet: {}\n", note);
  BisectOptions o;
  o.request = f.request;
  o.context = parse_pairs(f.context, "--context");
  o.against = parse_pairs(f.against, "--against");
  o.backend = f.backend;
  o.scoring = f.scoring;
  const BisectResult r = run_bisect(s, o);
  fmt::print("{}", formats.front()->render(r));
  return static_cast<int>(r.diverged ? ExitCode::kOk : ExitCode::kExpectationFailed);
}

}  // namespace

Action add_bisect_command(CLI::App& app) {
  auto flags = std::make_shared<BisectFlags>();
  CLI::App* cmd = app.add_subcommand(
      "bisect",
      "Find the first step, layer and op that diverge between two contexts (model scenarios)");
  cmd->add_option("scenario", flags->scenario, "A model scenario (op: model)")->required();
  add_integer_option<int64_t>(cmd, "--request", flags->request, 0,
                              std::numeric_limits<int64_t>::max(),
                              "Probed request to follow (default: the first)")
      ->default_str("");
  add_list_option(cmd, "--context", flags->context,
                  "Context A: the baseline with these axis values (KEY=V, repeatable)", 0);
  add_list_option(cmd, "--against", flags->against,
                  "Context B: the baseline with these axis values (default: the first context "
                  "whose completion differs from A's)",
                  0);
  cmd->add_flag("--scoring", flags->scoring,
                "Context B is context A's scoring pass over its prompt + completion (sampler "
                "against trainer)");
  cmd->add_option("--backend", flags->backend,
                  "Backend (default: the scenario's first backend whose contexts differ)");
  cmd->add_option("--format", flags->format,
                  "Output format, printed on stdout: " + bisect_format_registry().help())
      ->capture_default_str();
  return [flags] { return run(*flags); };
}

}  // namespace nvdet::cli
