#include "tests/test_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "lib/core/system_info.h"

namespace nvdet::testing {

// The build's paths, unless the environment names others: GPU tests run from a copy of the tree
// and of the build on another machine, where the paths compiled in do not exist.
static std::filesystem::path env_or(const char* name, const char* compiled_in) {
  const char* value = std::getenv(name);
  return (value != nullptr && *value != '\0') ? value : compiled_in;
}
std::filesystem::path source_dir() { return env_or("NVDET_SOURCE_DIR", NVDET_SOURCE_DIR); }
std::filesystem::path nvdet_binary() { return env_or("NVDET_BINARY", NVDET_BINARY); }
std::string shipped_scenario(const std::string& name) {
  return (source_dir() / "scenarios" / name).string();
}

std::filesystem::path make_temp_dir(const std::string& tag) {
  static std::atomic<int> counter{0};
  const auto dir =
      std::filesystem::temp_directory_path() /
      ("nvdet-test-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

CommandResult run_nvdet(const std::string& args) { return run_nvdet_env("", args); }

CommandResult run_nvdet_env(const std::string& env, const std::string& args) {
  const auto dir = make_temp_dir("cmd");
  const auto out = dir / "stdout", err = dir / "stderr";
  const std::string cmd = (env.empty() ? "" : env + " ") + nvdet_binary().string() + " " + args +
                          " >" + out.string() + " 2>" + err.string() + " </dev/null";
  const int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  std::filesystem::remove_all(dir);
  return r;
}

CommandResult run_nvdet_in(const std::filesystem::path& cwd, const std::string& args) {
  return run_nvdet_env("cd '" + cwd.string() + "' &&", args);
}

bool gpu_available() {
  static const bool available = [] {
    const SystemInfo s = collect_system_info();
    return s.cuda_built && !s.gpus.empty();
  }();
  return available;
}

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

nlohmann::json without_timings(nlohmann::json j) {
  if (j.is_object()) {
    j.erase("seconds");
    j.erase("started_at");
    for (auto& [k, v] : j.items()) v = without_timings(v);
  } else if (j.is_array()) {
    for (auto& v : j) v = without_timings(v);
  }
  return j;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace nvdet::testing
