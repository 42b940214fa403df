#pragma once
// The prompts file of a model scenario: one prompt per line, token ids separated by spaces or
// commas; blank lines and lines starting with '#' are skipped. A probe scenario's (op probe) holds
// text: one prompt per line, blank lines and lines starting with '#' skipped.
#include <cstdint>
#include <string>
#include <vector>

namespace nvdet {

// Reads `path`; every id must be in [0, max_token_id]. Throws Error(kBadInput): unreadable file
// ("cannot read prompts file 'p': reason"), or `path:line:column: ...` for a bad token, or a file
// with no prompt.
std::vector<std::vector<int32_t>> read_prompts_file(const std::string& path, int64_t max_token_id);

// Reads a text prompts file: each prompt is one line without its line end, sent as it is. Throws
// Error(kBadInput) as above, and `path:line:column: ...` for a control byte in a prompt.
std::vector<std::string> read_text_prompts_file(const std::string& path);

}  // namespace nvdet
