// nvdet diff A B: compare two tensors (or two --dump folders) bit for bit: exit 0 identical, 1
// different, 2 unreadable input or tensors that cannot be compared (dtype or shape differ).
// The logic is lib/report/tensor_diff.h; this file only parses flags and prints.
#include <fmt/format.h>

#include "lib/core/error.h"
#include "lib/report/tensor_diff.h"
#include "tools/cli_options.h"
#include "tools/command.h"

namespace nvdet::cli {
namespace {

struct DiffFlags {
  std::string a, b;
  std::string tensor;
  std::string dtype;
  std::string format = "text";
  bool rows = false;
  double atol = -1.0;
};

int run(const DiffFlags& f) {
  DiffOptions o;
  o.tensor = f.tensor;
  if (!f.dtype.empty()) {
    o.as = parse_elem_type(f.dtype);
    if (!o.as) {
      throw_input_error("unknown --dtype '" + excerpt(f.dtype) +
                        "' (bf16, fp16, fp32, fp64, i8..i64, u8..u64, bool)");
    }
  }
  if (f.format != "text" && f.format != "json") {
    throw_input_error("unknown --format '" + excerpt(f.format) + "' (text or json)");
  }
  if (f.atol >= 0) o.atol = f.atol;
  const DiffResult r = diff_tensor_files(f.a, f.b, o);
  if (f.format == "json") {
    fmt::print("{}\n", diff_to_json(r).dump(2));
  } else {
    fmt::print("{}", render_diff_text(r, f.rows));
  }
  return static_cast<int>(r.passed ? ExitCode::kOk : ExitCode::kExpectationFailed);
}

}  // namespace

Action add_diff_command(CLI::App& app) {
  auto flags = std::make_shared<DiffFlags>();
  CLI::App* cmd = app.add_subcommand(
      "diff", "Compare two tensors bit for bit (.npy, .safetensors, nvdet --dump folders)");
  cmd->add_option("a", flags->a, "First tensor file or dump folder")->required();
  cmd->add_option("b", flags->b, "Second tensor file or dump folder")->required();
  cmd->add_option("--tensor", flags->tensor, "Compare only the tensor of this name");
  cmd->add_option("--dtype", flags->dtype,
                  "Read 2-byte integer data as this type (bf16 or fp16; numpy has no bf16)");
  cmd->add_flag("--rows", flags->rows, "Also report the first differing row (token) and the count");
  cmd->add_option("--format", flags->format, "text or json")->capture_default_str();
  add_real_option(cmd, "--atol", flags->atol, 0.0,
                  "Pass (exit 0) when every |a - b| <= ATOL; differences are still reported");
  return [flags] { return run(*flags); };
}

}  // namespace nvdet::cli
