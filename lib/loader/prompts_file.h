#pragma once
// The prompts file of a model scenario: one prompt per line, token ids separated by spaces or
// commas; blank lines and lines starting with '#' are skipped.
#include <cstdint>
#include <string>
#include <vector>

namespace nvdet {

// Reads `path`; every id must be in [0, max_token_id]. Throws Error(kBadInput): unreadable file
// ("cannot read prompts file 'p': reason"), or `path:line:column: ...` for a bad token, or a file
// with no prompt.
std::vector<std::vector<int32_t>> read_prompts_file(const std::string& path, int64_t max_token_id);

}  // namespace nvdet
