#pragma once
// What `nvdet audit` prints on stdout: per backend, whether its expectation held and why, and
// for each divergent backend where it first diverged and in which contexts.
#include <cstddef>
#include <cstdio>
#include <string>

#include "lib/runner/audit_result.h"

namespace nvdet {

std::string render_console_summary(const AuditResult& r);

// Its last line, the verdict the exit code states: "audit PASSED: 3 of 3 backends met their
// expectation (0.2 s)", "audit FAILED: ...", "audit RAN NOTHING: ..." (no newline). nvdet report
// prints it for each (merged) report it renders.
std::string render_verdict_line(const AuditResult& r);

// Progress on stderr. On a terminal: one line rewritten in place ("[ 37/128] cublas
// gemm(batch=33,...)"). Elsewhere (a CI log): a plain line at most every `interval_s` seconds,
// "progress: context 10 of 32, 37 of 128 cases, 42 s elapsed (cublas gemm(batch=33,...))" (the
// context part when known), so that a long audit
// shows it is alive without flooding the log. Progress never goes to stdout and changes no
// report or exit code. NVDET_PROGRESS_INTERVAL (seconds) overrides the default of 30.
// The width of the terminal on `fd` (TIOCGWINSZ), else $COLUMNS, else 80; at least 2. The
// in-place progress line is cut to one column less, so that it never wraps and '\r' erases it.
size_t terminal_columns(int fd);

class TerminalProgress {
 public:
  explicit TerminalProgress(std::FILE* stream, double interval_s = -1.0);
  // `context_number` of `contexts` (1-based) is printed when `contexts` > 0; `detail` (e.g. a
  // model decode's "step 120 of 256, 850 tokens/s") after the context when not empty.
  void update(int done, int total, const std::string& backend, const std::string& context,
              int context_number = 0, int contexts = 0, const std::string& detail = {});
  void finish();

 private:
  std::FILE* stream_;
  bool terminal_;
  double interval_s_;
  double started_ = 0.0, last_line_ = 0.0;
  size_t last_width_ = 0;
};

}  // namespace nvdet
