#include "lib/report/bisect_writers.h"

#include "lib/report/bisect_html.h"

namespace nvdet {
namespace {

std::string render_bisect_json(const BisectResult& r) { return bisect_to_json(r).dump(2) + "\n"; }
std::string render_bisect_page(const BisectResult& r) { return render_bisect_html(bisect_to_json(r)); }

FormatRegistry<BisectWriter>& registry() {
  static FormatRegistry<BisectWriter> all = [] {
    FormatRegistry<BisectWriter> r("bisect");
    using W = FunctionWriter<BisectWriter>;
    r.add(std::make_unique<W>(W::Facts{"text", ".txt", "the summary for people"},
                              render_bisect_text));
    r.add(std::make_unique<W>(W::Facts{"json", ".json", "all of it, for tools"},
                              render_bisect_json));
    r.add(std::make_unique<W>(
        W::Facts{"html", ".html", "a self-contained page with the growth plot"},
        render_bisect_page));
    return r;
  }();
  return all;
}

}  // namespace

const FormatRegistry<BisectWriter>& bisect_format_registry() { return registry(); }

void register_bisect_writer(std::unique_ptr<BisectWriter> writer) {
  registry().add(std::move(writer));
}

}  // namespace nvdet
