#include "lib/report/bench_writers.h"

#include "lib/report/bench_report.h"

namespace nvdet {
namespace {

std::string render_bench_json(const BenchResult& r) { return bench_to_json(r).dump(2) + "\n"; }

FormatRegistry<BenchWriter>& registry() {
  static FormatRegistry<BenchWriter> all = [] {
    FormatRegistry<BenchWriter> r("bench");
    using W = FunctionWriter<BenchWriter>;
    r.add(std::make_unique<W>(
        W::Facts{"md", ".md", "Markdown table (the one printed on stdout)", {"markdown"}},
        render_bench_markdown));
    r.add(std::make_unique<W>(W::Facts{"json", ".json", "one key per row, for tools"},
                              render_bench_json));
    r.add(std::make_unique<W>(W::Facts{"csv", ".csv", "one line per row, for plotting"},
                              render_bench_csv));
    return r;
  }();
  return all;
}

}  // namespace

const FormatRegistry<BenchWriter>& bench_format_registry() { return registry(); }

void register_bench_writer(std::unique_ptr<BenchWriter> writer) {
  registry().add(std::move(writer));
}

}  // namespace nvdet
