#include "lib/loader/prompts_file.h"

#include <charconv>
#include <sstream>
#include <string_view>

#include "lib/core/bounded_file.h"
#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"

namespace nvdet {
namespace {

bool is_separator(char c) { return c == ' ' || c == '\t' || c == '\r' || c == ','; }

}  // namespace

std::vector<std::vector<int32_t>> read_prompts_file(const std::string& path, int64_t max_token_id) {
  const std::string text = read_bounded_file(path, kMaxPromptsFileBytes, "prompts file");

  std::vector<std::vector<int32_t>> prompts;
  std::istringstream lines(text);
  std::string line;
  int line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    std::vector<int32_t> ids;
    size_t i = 0;
    while (i < line.size()) {
      if (is_separator(line[i])) {
        ++i;
        continue;
      }
      if (ids.empty() && line[i] == '#') break;
      const size_t start = i;
      while (i < line.size() && !is_separator(line[i])) ++i;
      const std::string_view word(line.data() + start, i - start);
      const SourceLocation where{path, line_no, static_cast<int>(start) + 1};
      int64_t id = -1;
      const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), id);
      if (ec != std::errc() || end != word.data() + word.size() || id < 0)
        throw_input_error(where, "token id '" + excerpt(word) + "' is not a non-negative integer");
      if (id > max_token_id)
        throw_input_error(where, "token id " + std::to_string(id) +
                                     " is outside the vocabulary (0.." +
                                     std::to_string(max_token_id) + ")");
      ids.push_back(static_cast<int32_t>(id));
    }
    if (!ids.empty()) prompts.push_back(std::move(ids));
  }
  if (prompts.empty()) throw_input_error("prompts file '" + path + "' holds no prompts");
  return prompts;
}

std::vector<std::string> read_text_prompts_file(const std::string& path) {
  const std::string text = read_bounded_file(path, kMaxPromptsFileBytes, "prompts file");
  std::vector<std::string> prompts;
  std::istringstream lines(text);
  std::string line;
  int line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    for (size_t i = 0; i < line.size(); ++i) {
      const auto c = static_cast<unsigned char>(line[i]);
      if (c < 0x20 && c != '\t')
        throw_input_error(SourceLocation{path, line_no, static_cast<int>(i) + 1},
                          "a prompt holds the control byte '" + excerpt(line.substr(i, 1)) + "'");
    }
    prompts.push_back(std::move(line));
  }
  if (prompts.empty()) throw_input_error("prompts file '" + path + "' holds no prompts");
  return prompts;
}

}  // namespace nvdet
