#pragma once
// Helpers shared by the tests: paths into the source tree, running the nvdet binary, temporary
// folders, and the GPU-presence check that GPU tests skip on.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace nvdet::testing {

std::filesystem::path source_dir();  // the repository root ($NVDET_SOURCE_DIR overrides)
std::string shipped_scenario(const std::string& name);  // scenarios/NAME, as a path
std::filesystem::path nvdet_binary();                   // the built CLI ($NVDET_BINARY overrides)
std::filesystem::path make_temp_dir(const std::string& tag);  // fresh, under the system temp dir

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs `nvdet ARGS` (arguments joined with spaces; quote them yourself) and captures its output.
CommandResult run_nvdet(const std::string& args);
// Same, with environment assignments ("NAME=value NAME2=value") for the command only.
CommandResult run_nvdet_env(const std::string& env, const std::string& args);

// Same, run from folder `cwd` (relative paths in ARGS are taken from there).
CommandResult run_nvdet_in(const std::filesystem::path& cwd, const std::string& args);

// True when a CUDA build sees a device; false otherwise (GPU tests GTEST_SKIP on false).
bool gpu_available();

void write_file(const std::filesystem::path& p, const std::string& text);
// A JSON report without what differs between two runs of one sweep: every timing ("seconds",
// "started_at"), at any depth.
nlohmann::json without_timings(nlohmann::json j);
std::string read_file(const std::filesystem::path& p);

}  // namespace nvdet::testing

// NVDET_ASAN: defined in an AddressSanitizer build, where tests that limit the address space or
// make an impossible allocation skip (ASan reserves terabytes of shadow and ends the process on
// an allocation it cannot serve).
#if defined(__SANITIZE_ADDRESS__)
#define NVDET_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NVDET_ASAN 1
#endif
#endif
