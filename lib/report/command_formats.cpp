#include "lib/report/command_formats.h"

#include <initializer_list>
#include <utility>

#include "lib/report/bench_report.h"
#include "lib/report/bisect_html.h"

namespace nvdet {
namespace {

// A registry of built-in formats, each its facts and render function.
template <class W>
FormatRegistry<W> built_in(
    std::string noun,
    std::initializer_list<std::pair<typename FunctionWriter<W>::Facts,
                                    typename FunctionWriter<W>::RenderFn>> formats) {
  FormatRegistry<W> r(std::move(noun));
  for (const auto& [facts, render] : formats) {
    r.add(std::make_unique<FunctionWriter<W>>(facts, render));
  }
  return r;
}

std::string render_bench_json(const BenchResult& r) { return bench_to_json(r).dump(2) + "\n"; }

std::string render_bisect_json(const BisectResult& r) { return bisect_to_json(r).dump(2) + "\n"; }
std::string render_bisect_page(const BisectResult& r) { return render_bisect_html(bisect_to_json(r)); }

}  // namespace

FormatRegistry<BenchWriter>& bench_format_registry() {
  static FormatRegistry<BenchWriter> all = built_in<BenchWriter>(
      "bench", {{{"md", ".md", "Markdown table (the one printed on stdout)", {"markdown"}},
                 render_bench_markdown},
                {{"json", ".json", "one key per row, for tools"}, render_bench_json},
                {{"csv", ".csv", "one line per row, for plotting"}, render_bench_csv}});
  return all;
}

FormatRegistry<BisectWriter>& bisect_format_registry() {
  static FormatRegistry<BisectWriter> all = built_in<BisectWriter>(
      "bisect", {{{"text", ".txt", "the summary for people"}, render_bisect_text},
                 {{"json", ".json", "all of it, for tools"}, render_bisect_json},
                 {{"html", ".html", "a self-contained page with the growth plot"},
                  render_bisect_page}});
  return all;
}

}  // namespace nvdet
