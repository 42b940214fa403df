#include "lib/report/report_tables.h"

#include "lib/report/html_report.h"

namespace nvdet {
namespace {

std::string markdown_cell(const std::string& s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '|': out += "\\|"; break;
      case '\n':
      case '\r': out += ' '; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string markdown_table(const std::vector<std::string>& heads, const TableRows& rows) {
  std::string o = "|";
  for (const std::string& h : heads) o += " " + markdown_cell(h) + " |";
  o += "\n|";
  for (size_t i = 0; i < heads.size(); ++i) o += "---|";
  o += "\n";
  for (const auto& row : rows) {
    o += "|";
    for (const std::string& v : row) o += " " + markdown_cell(v) + " |";
    o += "\n";
  }
  return o;
}

// Wide tables scroll inside their box instead of running past the page's width; numbers align
// right and keep to one line, words (context ids, completions) wrap.
std::string html_table(const std::vector<std::string>& heads, const TableRows& rows) {
  std::string o = "<div class=\"wide\"><table>\n<thead><tr>";
  for (const std::string& h : heads) o += "<th>" + html_escape(h) + "</th>";
  o += "</tr></thead>\n<tbody>\n";
  for (const auto& row : rows) {
    o += "<tr>";
    for (const std::string& v : row) {
      const bool number = !v.empty() && v.find_first_not_of("0123456789.e+-") == std::string::npos;
      o += std::string(number ? "<td class=\"num\">" : "<td class=\"wrap\">") + html_escape(v) +
           "</td>";
    }
    o += "</tr>\n";
  }
  return o + "</tbody>\n</table></div>\n";
}

}  // namespace nvdet
