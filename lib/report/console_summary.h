#pragma once
// What `nvdet audit` prints on stdout: per backend, whether its expectation held and why, and
// for each divergent backend where it first diverged and in which contexts.
#include <cstdio>
#include <string>

#include "lib/runner/audit_result.h"

namespace nvdet {

std::string render_console_summary(const AuditResult& r);

// Progress on a terminal: one line rewritten in place ("[ 37/128] cublas gemm(batch=33,...)").
// Prints nothing when `stream` is not a terminal, so logs stay clean.
class TerminalProgress {
 public:
  explicit TerminalProgress(std::FILE* stream);
  void update(int done, int total, const std::string& backend, const std::string& context);
  void finish();

 private:
  std::FILE* stream_;
  bool active_;
  size_t last_width_ = 0;
};

}  // namespace nvdet
