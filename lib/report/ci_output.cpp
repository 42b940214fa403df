#include "lib/report/ci_output.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "lib/core/text_excerpt.h"
#include "lib/report/markdown_report.h"
#include "lib/report/report_text.h"

namespace nvdet {

std::string github_escape(std::string_view text, bool property) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '%': out += "%25"; break;
      case '\r': out += "%0D"; break;
      case '\n': out += "%0A"; break;
      case ':': out += property ? "%3A" : ":"; break;
      case ',': out += property ? "%2C" : ","; break;
      default: out += c;
    }
  }
  return out;
}

std::string github_error_annotations(const AuditResult& r) {
  std::string out;
  const std::string& file = r.scenario.path;
  for (const BackendOutcome& b : r.backends) {
    if (b.skipped || b.passed) continue;
    std::string props = "file=" + github_escape(file, true);
    if (b.scenario_line > 0) props += ",line=" + std::to_string(b.scenario_line);
    props += ",title=" +
             github_escape("nvdet " + report_text::command_name(r) + " " + r.scenario.name + ": " +
                               b.name + " expected " + std::string(expectation_name(b.expect)),
                           true);
    out += "::error " + props + "::" + github_escape(b.name + ": " + b.verdict, false) + "\n";
  }
  if (r.verify && !r.verify->passed) {
    out += "::error file=" + github_escape(r.verify->manifest, true) + ",title=" +
           github_escape("nvdet audit " + r.scenario.name + ": manifest verify failed", true) +
           "::" + github_escape(r.verify->verdict, false) + "\n";
  }
  return out;
}

std::string github_input_error_annotation(const SourceLocation& where, std::string_view message) {
  if (where.file.empty() || where.line <= 0) return "";
  std::string props =
      "file=" + github_escape(where.file, true) + ",line=" + std::to_string(where.line);
  if (where.column > 0) props += ",col=" + std::to_string(where.column);
  // The annotation carries the place itself: the message without its "file:line:column: ".
  const std::string prefix = where.to_string() + ": ";
  if (message.substr(0, prefix.size()) == prefix) message.remove_prefix(prefix.size());
  return "::error " + props + "::" + github_escape(message, false) + "\n";
}

bool under_github_actions() {
  const char* gha = std::getenv("GITHUB_ACTIONS");
  return gha && std::string_view(gha) == "true";
}

void publish_to_ci(const AuditResult& r) {
  append_step_summary(render_markdown_report(r));
  if (under_github_actions()) fmt::print("{}", github_error_annotations(r));
}

void append_step_summary(const std::string& markdown) {
  if (const char* path = std::getenv("GITHUB_STEP_SUMMARY"); path && *path) {
    const std::string md = markdown + "\n";
    const auto warn = [&](const std::string& why) {
      fmt::print(stderr, "nvdet: warning: cannot append to GITHUB_STEP_SUMMARY '{}': {}\n",
                 excerpt(path), why);
    };
    // Opened without blocking and appended to only when it is a regular file: a FIFO with no
    // reader would block the open for ever, one with a reader the write.
    const int fd =
        ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0644);
    struct stat st {};
    if (fd < 0) {
      warn(std::strerror(errno));
    } else if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      warn("not a regular file");
    } else {
      size_t done = 0;
      while (done < md.size()) {
        const ssize_t n = ::write(fd, md.data() + done, md.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
      if (done < md.size()) warn(std::strerror(errno));
    }
    if (fd >= 0) ::close(fd);
  }
}

}  // namespace nvdet
