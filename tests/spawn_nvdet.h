#pragma once
// Starting nvdet without waiting for it, for the tests that signal it while it runs.
#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/test_support.h"

extern char** environ;

namespace nvdet::testing {

// Starts `nvdet ARGS...` (no shell) with `env_extra` ("NAME=value") added to this process's
// environment, its stdout to /dev/null and its stderr to `err`; returns its pid, -1 when it
// could not start. The caller signals it and waits for it.
inline pid_t spawn_nvdet(const std::vector<std::string>& args,
                         const std::vector<std::string>& env_extra,
                         const std::string& err = "/dev/null") {
  std::vector<std::string> argv_s = {nvdet_binary().string()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s(env_extra);
  for (char** e = environ; *e; ++e) env_s.push_back(*e);
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

}  // namespace nvdet::testing
