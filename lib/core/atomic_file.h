#pragma once
// Writes a file so that readers never see a half-written one: the content goes to a temporary
// file in the same folder, is flushed to disk, and is renamed over the target (rename is atomic
// within one file system). A CI job that reads a report while nvdet is still writing it, or a
// run killed half-way, leaves either the old file or the new one, never a truncated mix.
#include <filesystem>
#include <string_view>
#include <vector>

namespace nvdet {

// Writes `content` to `path` atomically. The parent folder must exist. On failure the temporary
// file is removed and Error is thrown: "cannot write <what> '<path>': <reason>". An unwritable
// destination (no such folder, no permission, read-only) is a usage problem, exit 2; running out
// of room while writing (a full disk, a quota, `ulimit -f`, an I/O error) is a runtime failure,
// exit 3. Only a regular file (or a symbolic link, which is replaced as a link, never its target)
// is ever replaced: a device node, FIFO, socket or folder at `path` is refused the same way and
// left untouched.
void write_file_atomic(const std::filesystem::path& path, std::string_view content,
                       std::string_view what = "file");

// Files that are replaced together or not at all (an audit's report set): stage() writes each
// one's content to a temporary beside it and flushes it to disk, commit() renames them all over
// their targets. A failure while staging (a full disk half-way through the set) throws as
// write_file_atomic does and leaves every target as it was; temporaries not committed are
// removed when the set is destroyed (and by the SIGINT/SIGTERM cleanup meanwhile).
class AtomicFileSet {
 public:
  AtomicFileSet() = default;
  AtomicFileSet(const AtomicFileSet&) = delete;
  AtomicFileSet& operator=(const AtomicFileSet&) = delete;
  ~AtomicFileSet();

  void stage(const std::filesystem::path& path, std::string_view content, std::string_view what);
  // Renames every staged file over its target, in staging order; returns their paths.
  std::vector<std::filesystem::path> commit();

 private:
  struct Staged {
    std::filesystem::path path, temp;
    std::string what;
    int slot;
  };
  void discard();
  std::vector<Staged> staged_;
};

// Checks, before any work is done, that `write_file_atomic(path, ...)` can succeed as far as can
// be known: `path` is absent, a regular file or a symbolic link, and its folder exists and is
// writable. Throws Error(kBadInput) "cannot write <what> '<path>': <reason>".
void check_output_file(const std::filesystem::path& path, std::string_view what);

// Creates folder `dir` (and its parents) when absent and checks that it is a writable folder.
// Throws Error(kBadInput) "cannot write <what> '<dir>': <reason>".
void prepare_output_dir(const std::filesystem::path& dir, std::string_view what);

// Installs SIGINT and SIGTERM handlers that remove the temporary files of writes in progress,
// print one line on stderr ("nvdet: interrupted by SIGINT: removed the unfinished
// reports/.quickstart.md.tmp-41-0; 2 files written before it are complete") and end the process
// with exit status 128 + the signal's number (130, 143), as shells report a process killed by
// that signal. Called once by the CLI at start-up. Also ignores SIGXFSZ, so that a write past
// `ulimit -f` fails with EFBIG (exit 3, temporaries removed) instead of killing the process
// silently.
void install_interrupt_cleanup();

}  // namespace nvdet
