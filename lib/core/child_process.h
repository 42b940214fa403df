#pragma once
// Running copies of nvdet side by side (`nvdet audit --devices 0,1,...`: one shard per GPU):
// each child gets its own arguments, extra environment variables and log files for its stdout
// and stderr; the caller waits for all of them. While they run they are registered for the
// interrupt handler (install_interrupt_cleanup, lib/core/atomic_file.h): SIGINT or SIGTERM to
// nvdet is passed on to them and nvdet waits for them to stop before it exits, so that no shard
// goes on running (and holding a GPU) after its parent is gone.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace nvdet {

struct ChildSpec {
  std::vector<std::string> args;           // args[0]: the program
  std::map<std::string, std::string> env;  // set or replaced in the parent's environment
  std::vector<std::string> unset;          // removed from it
  std::filesystem::path log;               // stdout goes here (created)
  std::filesystem::path error_log;         // stderr goes here (created); empty: into `log`
};

// This program's path (/proc/self/exe), so that a child runs the same build.
std::filesystem::path own_executable();

// Starts every child, then waits for all; returns their exit codes in order (128 + the signal
// for a child killed by one). Throws Error(kRuntime) when a child cannot be started (after
// waiting for those already started).
std::vector<int> run_children(const std::vector<ChildSpec>& children);

// For the interrupt handler only (async-signal-safe: kill, waitpid and nanosleep): sends `sig`
// to every child run_children is waiting for, waits up to 10 s for them to stop (then kills
// them), and returns how many there were.
int stop_children_for_signal(int sig);

}  // namespace nvdet
