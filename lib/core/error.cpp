#include "lib/core/error.h"

namespace nvdet {

std::string SourceLocation::to_string() const {
  if (file.empty()) return "";
  if (line <= 0) return file;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

void throw_input_error(const SourceLocation& where, const std::string& message) {
  const std::string prefix = where.to_string();
  throw Error(ExitCode::kBadInput, prefix.empty() ? message : prefix + ": " + message, where);
}

void throw_input_error(const std::string& message) { throw Error(ExitCode::kBadInput, message); }

void throw_runtime_error(const std::string& message) { throw Error(ExitCode::kRuntime, message); }

}  // namespace nvdet
