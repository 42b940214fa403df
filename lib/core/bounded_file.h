#pragma once
// The one way nvdet reads a whole input file into memory. Files come from other people (CI runs
// nvdet on scenarios, prompts, tensors and checkpoints it did not write), so before a byte is read
// the path must name a regular file (not a FIFO, which would block forever, nor a device such as
// /dev/zero, which never ends) whose size is under the caller's cap. /proc and /sys files claim a
// size of 0 and then produce text (an environment, say): a file that yields more bytes than its
// size is refused too, before its content can reach an error message.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace nvdet {

// Caps for each kind of input, in bytes: far above any real file of the kind, far below memory.
constexpr uint64_t kMaxScenarioBytes = uint64_t{4} << 20;      // 4 MiB of YAML
constexpr uint64_t kMaxPromptsFileBytes = uint64_t{64} << 20;  // 64 MiB of token ids
constexpr uint64_t kMaxJsonFileBytes = uint64_t{64} << 20;     // manifests, config.json, indexes
// JSON audit reports (`nvdet report`): one hash per token per case, so a wide sweep's report is
// tens of MiB (an H200 prefill sweep's is 24 MiB).
constexpr uint64_t kMaxAuditReportBytes = uint64_t{256} << 20;

// Reads all of `path`. `what` names the file's role in messages ("scenario", "prompts file").
// Throws Error(kBadInput): "cannot read scenario 'p': No such file or directory",
// "scenario 'p' is not a regular file (it is a FIFO)", "scenario 'p' is 9000000 bytes, more than
// the limit of 4194304 for a scenario", "scenario 'p' is a special file whose size is not known
// in advance (e.g. under /proc); copy it to a regular file".
std::string read_bounded_file(const std::filesystem::path& path, uint64_t max_bytes,
                              std::string_view what);

// Opens `path` read-only without blocking (a FIFO opens at once and is then refused) and checks
// that it is a regular file. Returns the descriptor (the caller closes it) and its size. Same
// errors as read_bounded_file, except the size cap.
int open_regular_file(const std::filesystem::path& path, std::string_view what, uint64_t* size);

}  // namespace nvdet
