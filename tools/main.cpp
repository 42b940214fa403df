// nvdet: does the result of my request depend on what else was in the batch?
#include <cstdio>
#include <exception>
#include <map>
#include <new>
#include <string>

#include "lib/core/error.h"
#include "lib/core/atomic_file.h"
#include "lib/core/host_memory.h"
#include "lib/scenario/typo_hint.h"
#include "tools/command.h"

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
  };

  nvdet::install_interrupt_cleanup();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // An unknown subcommand arrives as an extra positional argument: hint at the nearest one.
    std::string hint;
    if (argc > 1 && argv[1][0] != '-' && actions.find(argv[1]) == actions.end()) {
      std::vector<std::string> names;
      for (const auto& [name, action] : actions) names.push_back(name);
      hint = nvdet::typo_hint(argv[1], names);
      std::string known;
      for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
      std::fprintf(stderr, "nvdet: unknown command '%s'%s (commands: %s)\n", argv[1], hint.c_str(),
                   known.c_str());
      return static_cast<int>(nvdet::ExitCode::kBadInput);
    }
    // Within a subcommand: name a mistyped option's nearest spelling, and its own help.
    if (argc > 1 && actions.count(argv[1])) {
      std::fprintf(stderr, "nvdet %s: %s (see nvdet %s --help)\n", argv[1],
                   nvdet::cli::option_error(*app.get_subcommand(argv[1]), e, argc, argv).c_str(),
                   argv[1]);
      return static_cast<int>(nvdet::ExitCode::kBadInput);
    }
    std::fprintf(stderr, "nvdet: %s (see nvdet --help)\n", e.what());
    return static_cast<int>(nvdet::ExitCode::kBadInput);
  }
  try {
    for (CLI::App* sub : app.get_subcommands()) {
      auto it = actions.find(sub->get_name());
      if (it != actions.end()) return it->second();
    }
    return static_cast<int>(nvdet::ExitCode::kBadInput);
  } catch (const nvdet::Error& e) {
    std::fprintf(stderr, "nvdet: %s\n", e.what());
    return static_cast<int>(e.code());
  } catch (const std::bad_alloc& e) {
    // A large allocation says what it was for and how large (lib/core/host_memory.h).
    const auto* known = dynamic_cast<const nvdet::HostAllocationError*>(&e);
    std::fprintf(stderr, "nvdet: out of host memory%s%s\n", known ? " allocating " : "",
                 known ? known->what() : "");
    return static_cast<int>(nvdet::ExitCode::kRuntime);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nvdet: internal error: %s\n", e.what());
    return static_cast<int>(nvdet::ExitCode::kRuntime);
  }
}
