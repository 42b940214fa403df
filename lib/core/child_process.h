#pragma once
// Running copies of nvdet side by side (`nvdet audit --devices 0,1,...`: one shard per GPU):
// each child gets its own arguments, extra environment variables and a log file for its stdout
// and stderr; the caller waits for all of them.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace nvdet {

struct ChildSpec {
  std::vector<std::string> args;           // args[0]: the program
  std::map<std::string, std::string> env;  // set or replaced in the parent's environment
  std::vector<std::string> unset;          // removed from it
  std::filesystem::path log;               // stdout and stderr go here (created)
};

// This program's path (/proc/self/exe), so that a child runs the same build.
std::filesystem::path own_executable();

// Starts every child, then waits for all; returns their exit codes in order (128 + the signal
// for a child killed by one). Throws Error(kRuntime) when a child cannot be started (after
// waiting for those already started).
std::vector<int> run_children(const std::vector<ChildSpec>& children);

}  // namespace nvdet
