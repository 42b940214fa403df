#pragma once
// The temporaries nvdet creates besides the files of atomic writes (lib/core/atomic_file.h), in
// the same registry: the SIGINT/SIGTERM handler that install_interrupt_cleanup() installs removes
// every registered temporary before nvdet exits.
#include <filesystem>

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

// Whether this build honours the test-only environment hooks (NVDET_TEST_HOLD_WRITE_MS): true
// only when configured with -DNVDET_TEST_HOOKS=ON. Tests that need a hook skip without it.
bool test_hooks_built();

}  // namespace nvdet
