#pragma once
// Plain tables for the sections that every format shows alike (sampler against trainer, server
// probe): one header row and rows of text cells, as Markdown or HTML. Cells are escaped here, so
// that no text from a report (a server's completion, a context label) breaks the table.
#include <string>
#include <vector>

namespace nvdet {

using TableRows = std::vector<std::vector<std::string>>;

// '|' escaped, line breaks as spaces, '<' and '>' as entities.
std::string markdown_table(const std::vector<std::string>& heads, const TableRows& rows);
std::string html_table(const std::vector<std::string>& heads, const TableRows& rows);

}  // namespace nvdet
