#pragma once
// The temporaries nvdet creates besides the files of atomic writes (lib/core/atomic_file.h), in
// the same registry: the SIGINT/SIGTERM handler that install_interrupt_cleanup() installs removes
// every registered temporary before nvdet exits.
#include <filesystem>
#include <optional>
#include <string>

namespace nvdet {

// A temporary folder (a synthetic checkpoint written to be read back: GBs for the 8B-shaped
// scenarios), registered before it is created: SIGINT or SIGTERM removes the files in it and
// the folder; the destructor removes it with everything in it. Files in it should be written
// with write_file_atomic (their temporaries are registered too); the signal handler removes the
// folder's files, not subfolders.
class TemporaryFolder {
 public:
  explicit TemporaryFolder(std::filesystem::path path);  // registers; the caller creates it
  ~TemporaryFolder();
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int slot_;
};

// The folder nvdet's temporaries go in: $TMPDIR, or /tmp when it is unset. A TMPDIR that is set
// but empty, missing, not a folder or not writable is the environment's fault and is refused
// (Error kRuntime, exit 3) with one sentence naming TMPDIR, its value and `purpose`, what needed
// it ("the synthetic checkpoint of scenario 'x'"), instead of a path error about ''.
std::filesystem::path temporary_base(const std::string& purpose);

// Whether this build honours the test-only environment hooks (NVDET_TEST_HOLD_WRITE_MS): true
// only when configured with -DNVDET_TEST_HOOKS=ON. Tests that need a hook skip without it.
bool test_hooks_built();

// Test hook: NVDET_TEST_DEVICE_COUNT=N makes `nvdet audit --devices` take this host for one with
// N GPUs, so that the CPU test suite can run its shards; nullopt unless the build has the test
// hooks and the variable is set to a number from 0 to 64.
std::optional<int> test_device_count();

}  // namespace nvdet
