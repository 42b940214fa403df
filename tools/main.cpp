// nvdet: does the result of my request depend on what else was in the batch?
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <new>
#include <string>
#include <system_error>

#include "lib/core/atomic_file.h"
#include "lib/core/error.h"
#include "lib/core/host_memory.h"
#include "lib/core/text_excerpt.h"
#include "lib/report/ci_output.h"
#include "lib/scenario/typo_hint.h"
#include "tools/command.h"

namespace {

// What stdout's output cost: everything printed is flushed here, where a failure (a full disk,
// `>/dev/full`, a closed pipe) can still change the exit code. Output that did not arrive is a
// runtime failure (exit 3), never a pass.
int flush_stdout(int code) {
  errno = 0;
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return code;
  const int err = errno;
  std::fprintf(stderr, "nvdet: cannot write to standard output: %s\n",
               err ? std::strerror(err) : "write error");
  return code == static_cast<int>(nvdet::ExitCode::kBadInput)
             ? code
             : static_cast<int>(nvdet::ExitCode::kRuntime);
}

// A filesystem error that reached the top: a path that cannot be looked up (a loop of symbolic
// links, a name too long, a missing or unreadable entry) is the input's fault, running out of
// room the machine's.
int filesystem_failure(const std::filesystem::filesystem_error& e) {
  const std::error_code c = e.code();
  const bool no_room = c == std::errc::no_space_on_device || c == std::errc::file_too_large ||
                       c == std::errc::io_error || c.value() == EDQUOT;
  std::string where = nvdet::excerpt(e.path1().string(), 200);
  std::fprintf(stderr, "nvdet: cannot use '%s': %s\n", where.c_str(), c.message().c_str());
  return static_cast<int>(no_room ? nvdet::ExitCode::kRuntime : nvdet::ExitCode::kBadInput);
}

// "nvdet: unknown command 'audti' (did you mean 'audit'?) (commands: audit, bench, ...)", exit 2.
int unknown_command(const char* word, const std::map<std::string, nvdet::cli::Action>& actions) {
  std::vector<std::string> names;
  for (const auto& [name, action] : actions) names.push_back(name);
  std::string known;
  for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
  std::fprintf(stderr, "nvdet: unknown command '%s'%s (commands: %s)\n",
               nvdet::excerpt(word).c_str(), nvdet::typo_hint(word, names).c_str(), known.c_str());
  return static_cast<int>(nvdet::ExitCode::kBadInput);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"nvdet: audits LLM inference kernels for batch invariance, bit for bit"};
  app.set_version_flag("--version", std::string("nvdet ") + NVDET_VERSION);
  app.require_subcommand(1);
  const std::map<std::string, nvdet::cli::Action> actions = {
      {"audit", nvdet::cli::add_audit_command(app)},
      {"diff", nvdet::cli::add_diff_command(app)},
      {"bisect", nvdet::cli::add_bisect_command(app)},
      {"bench", nvdet::cli::add_bench_command(app)},
      {"info", nvdet::cli::add_info_command(app)},
      {"list", nvdet::cli::add_list_command(app)},
      {"report", nvdet::cli::add_report_command(app)},
      {"probe", nvdet::cli::add_probe_command(app)},
  };

  nvdet::install_interrupt_cleanup();
  // An unknown command is named before CLI11 parses anything, so that `nvdet probe --help` is
  // not answered with the global help (and exit 0) as if the command existed.
  if (argc > 1 && argv[1][0] != '-' && actions.find(argv[1]) == actions.end()) {
    return unknown_command(argv[1], actions);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Within a subcommand: name a mistyped option's nearest spelling, and its own help.
    if (argc > 1 && actions.count(argv[1])) {
      std::fprintf(stderr, "nvdet %s: %s (see nvdet %s --help)\n", argv[1],
                   nvdet::printable_message(
                       nvdet::cli::option_error(*app.get_subcommand(argv[1]), e, argc, argv))
                       .c_str(),
                   argv[1]);
      return static_cast<int>(nvdet::ExitCode::kBadInput);
    }
    std::fprintf(stderr, "nvdet: %s (see nvdet --help)\n",
                 nvdet::printable_message(e.what()).c_str());
    return static_cast<int>(nvdet::ExitCode::kBadInput);
  }
  for (CLI::App* sub : app.get_subcommands()) {
    if (const std::string empty = nvdet::cli::empty_option_value(*sub); !empty.empty()) {
      std::fprintf(stderr, "nvdet %s: %s (see nvdet %s --help)\n", sub->get_name().c_str(),
                   empty.c_str(), sub->get_name().c_str());
      return static_cast<int>(nvdet::ExitCode::kBadInput);
    }
  }
  try {
    for (CLI::App* sub : app.get_subcommands()) {
      auto it = actions.find(sub->get_name());
      if (it != actions.end()) return flush_stdout(it->second());
    }
    return static_cast<int>(nvdet::ExitCode::kBadInput);
  } catch (const nvdet::Error& e) {
    std::fprintf(stderr, "nvdet: %s\n", nvdet::printable_message(e.what()).c_str());
    // Under GitHub Actions an input error with a place in a file is annotated on that line, as
    // a failed expectation is.
    if (e.code() == nvdet::ExitCode::kBadInput && nvdet::under_github_actions()) {
      std::fputs(nvdet::github_input_error_annotation(e.where(), nvdet::printable_message(e.what()))
                     .c_str(),
                 stdout);
    }
    return flush_stdout(static_cast<int>(e.code()));
  } catch (const std::bad_alloc& e) {
    // A large allocation says what it was for and how large (lib/core/host_memory.h).
    const auto* known = dynamic_cast<const nvdet::HostAllocationError*>(&e);
    std::fprintf(stderr, "nvdet: out of host memory%s%s\n", known ? " allocating " : "",
                 known ? known->what() : "");
    return static_cast<int>(nvdet::ExitCode::kRuntime);
  } catch (const std::filesystem::filesystem_error& e) {
    return flush_stdout(filesystem_failure(e));
  } catch (const std::system_error& e) {
    // fmt::print throws this when stdout refuses a write.
    if (std::ferror(stdout)) {
      std::fprintf(stderr, "nvdet: cannot write to standard output: %s\n",
                   e.code().message().c_str());
      return static_cast<int>(nvdet::ExitCode::kRuntime);
    }
    std::fprintf(stderr, "nvdet: internal error: %s\n", nvdet::printable_message(e.what()).c_str());
    return static_cast<int>(nvdet::ExitCode::kRuntime);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nvdet: internal error: %s\n", nvdet::printable_message(e.what()).c_str());
    return static_cast<int>(nvdet::ExitCode::kRuntime);
  }
}
