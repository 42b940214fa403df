// nvdet bisect SCENARIO: first step, layer and op whose bits differ between two contexts.
#include "lib/core/error.h"
#include "tools/command.h"

namespace nvdet::cli {

Action add_bisect_command(CLI::App& app) {
  app.add_subcommand("bisect", "Find the first token, layer and op that diverge (model scenarios)");
  return []() -> int { throw_input_error("nvdet bisect is not available in this build"); };
}

}  // namespace nvdet::cli
