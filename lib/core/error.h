#pragma once
// One error type for everything the user can cause or meet. The CLI catches it at the top, prints
// its message as one sentence on stderr and exits with its code; nothing else is ever thrown to
// the user (no stack traces, no aborts).
#include <stdexcept>
#include <string>

#include "lib/core/exit_code.h"

namespace nvdet {

// Where in an input file something is: shown as `file:line:column` (1-based). line == 0 means
// "the file as a whole".
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;

  std::string to_string() const;  // "file:3:7", "file" when line == 0, "" when file is empty
};

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, std::string message, SourceLocation where = {})
      : std::runtime_error(std::move(message)), code_(code), where_(std::move(where)) {}
  ExitCode code() const { return code_; }
  // Where in an input file the error is (already part of the message): what a CI annotation
  // points at. Empty file when the error has no place.
  const SourceLocation& where() const { return where_; }

 private:
  ExitCode code_;
  SourceLocation where_;
};

// Bad input: exit 2. The message is prefixed with the location when there is one.
[[noreturn]] void throw_input_error(const SourceLocation& where, const std::string& message);
[[noreturn]] void throw_input_error(const std::string& message);
// Runtime failure (device, CUDA, memory): exit 3.
[[noreturn]] void throw_runtime_error(const std::string& message);

}  // namespace nvdet
