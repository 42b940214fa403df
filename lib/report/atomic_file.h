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
// (an unwritable destination is a usage problem, exit 2).
void write_file_atomic(const std::filesystem::path& path, std::string_view content,
                       std::string_view what = "file");

}  // namespace nvdet
