#include "lib/core/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "lib/core/error.h"

extern char** environ;

namespace nvdet {
namespace {

// The children being waited for, for the interrupt handler: fixed storage and atomics only.
constexpr int kChildSlots = 256;
std::atomic<pid_t> g_children[kChildSlots];

void register_child(pid_t pid) {
  for (std::atomic<pid_t>& slot : g_children) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, pid)) return;
  }
}

void unregister_child(pid_t pid) {
  for (std::atomic<pid_t>& slot : g_children) {
    pid_t mine = pid;
    if (slot.compare_exchange_strong(mine, 0)) return;
  }
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 128;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 128;
}

// The parent's environment with `extra` set or replaced and `unset` removed.
std::vector<std::string> environment_with(const std::map<std::string, std::string>& extra,
                                          const std::vector<std::string>& unset) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    if (extra.count(name) || std::find(unset.begin(), unset.end(), name) != unset.end()) continue;
    env.push_back(entry);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::filesystem::path own_executable() {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw_runtime_error("cannot find this program's own path (/proc/self/exe): " + ec.message());
  return p;
}

std::vector<int> run_children(const std::vector<ChildSpec>& children) {
  std::vector<pid_t> pids;
  std::string failure;
  for (const ChildSpec& c : children) {
    std::vector<std::string> args = c.args, env = environment_with(c.env, c.unset);
    std::vector<char*> argv = pointers(args), envp = pointers(env);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, c.log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (c.error_log.empty()) {
      posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    } else {
      posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, c.error_log.c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
    }
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      failure = "cannot start '" + c.args[0] + "': " + std::strerror(rc);
      break;
    }
    register_child(pid);
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (const pid_t pid : pids) {
    codes.push_back(wait_for(pid));
    unregister_child(pid);
  }
  if (!failure.empty()) throw_runtime_error(failure);
  return codes;
}

int stop_children_for_signal(int sig) {
  int stopped = 0;
  for (std::atomic<pid_t>& slot : g_children) {
    if (const pid_t pid = slot.load(); pid > 0) {
      ::kill(pid, sig);
      ++stopped;
    }
  }
  // Each child's own handler removes its temporaries and exits; one that does not within 10 s
  // is killed.
  for (int tick = 0; tick < 200; ++tick) {
    bool running = false;
    for (std::atomic<pid_t>& slot : g_children) {
      const pid_t pid = slot.load();
      if (pid <= 0) continue;
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == 0) {
        running = true;
      } else {
        slot.store(0);
      }
    }
    if (!running) return stopped;
    const struct timespec pause = {0, 50 * 1000 * 1000};
    ::nanosleep(&pause, nullptr);
  }
  for (std::atomic<pid_t>& slot : g_children) {
    if (const pid_t pid = slot.load(); pid > 0) {
      ::kill(pid, SIGKILL);
      int status = 0;
      ::waitpid(pid, &status, 0);
      slot.store(0);
    }
  }
  return stopped;
}

}  // namespace nvdet
