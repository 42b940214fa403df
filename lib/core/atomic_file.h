#pragma once
// Writes a file so that readers never see a half-written one: the content goes to a temporary
// file in the same folder, is flushed to disk, and is renamed over the target (rename is atomic
// within one file system). A CI job that reads a report while nvdet is still writing it, or a
// run killed half-way, leaves either the old file or the new one, never a truncated mix.
#include <filesystem>
#include <string_view>

namespace nvdet {

// Writes `content` to `path` atomically. The parent folder must exist. On failure the temporary
// file is removed and Error(kBadInput) is thrown: "cannot write <what> '<path>': <reason>"
// (an unwritable destination is a usage problem, exit 2). Only a regular file (or a symbolic
// link, which is replaced as a link, never its target) is ever replaced: a device node, FIFO,
// socket or folder at `path` is refused the same way and left untouched.
void write_file_atomic(const std::filesystem::path& path, std::string_view content,
                       std::string_view what = "file");

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
// that signal. Called once by the CLI at start-up.
void install_interrupt_cleanup();

}  // namespace nvdet
