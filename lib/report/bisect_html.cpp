#include "lib/report/bisect_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "lib/report/html_report.h"

namespace nvdet {
namespace {

using json = nlohmann::json;

constexpr const char* kColours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr size_t kColourCount = sizeof(kColours) / sizeof(kColours[0]);

std::string text(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string("-");
}

std::string number(const json& v) {
  return v.is_number() ? fmt::format("{:.6g}", v.get<double>()) : std::string("-");
}

std::string tokens(const json& completion) {
  std::string s;
  for (const json& t : completion) s += (s.empty() ? "" : " ") + std::to_string(t.get<int64_t>());
  return s;
}

// Max |diff| per column over the steps, on a log scale: zero differences sit on the bottom line,
// labelled "0"; the first flip is marked with a vertical line.
std::string growth_plot(const json& b) {
  const json& growth = b.at("growth");
  const json& columns = b.at("columns");
  if (growth.empty() || columns.empty()) return "<p class=\"muted\">No steps to plot.</p>";
  double lo = INFINITY, hi = 0;
  int64_t max_step = 0;
  for (const json& g : growth) {
    max_step = std::max<int64_t>(max_step, g.at("step").get<int64_t>());
    for (const json& v : g.at("max_abs_diff")) {
      if (v.is_number() && v.get<double>() > 0) {
        lo = std::min(lo, v.get<double>());
        hi = std::max(hi, v.get<double>());
      }
    }
  }
  if (!(hi > 0)) return "<p class=\"muted\">Every difference is zero.</p>";
  const double log_lo = std::floor(std::log10(lo)) - 0.5, log_hi = std::ceil(std::log10(hi));
  const double W = 760, H = 320, left = 60, right = 150, top = 10, bottom = 40;
  auto x_of = [&](int64_t step) {
    return left + (W - left - right) * (max_step ? double(step) / double(max_step) : 0.5);
  };
  auto y_of = [&](double v) {
    const double l = v > 0 ? std::log10(v) : log_lo;
    return top + (H - top - bottom) * (1.0 - (l - log_lo) / (log_hi - log_lo));
  };
  std::string svg = fmt::format(
      "<svg id=\"growth-plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "role=\"img\" aria-label=\"max |diff| per layer per step\">",
      W, H);
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>", left,
      top, W - left - right, H - top - bottom);
  for (int e = static_cast<int>(std::ceil(log_lo)); e <= static_cast<int>(log_hi); ++e) {
    const double y = y_of(std::pow(10.0, e));
    svg += fmt::format(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#eee\"/>"
        "<text x=\"{}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">1e{}</text>",
        left, W - right, y, y, left - 4, y + 4, e);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">0</text>",
                     left - 4, y_of(0) + 4);
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">decode step "
      "(0 = prefill)</text>",
      (left + W - right) / 2, H - 8);
  for (int64_t s : {int64_t{0}, max_step}) {
    svg +=
        fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
                    x_of(s), H - bottom + 14, s);
  }
  if (b.contains("first_flip") && b["first_flip"].is_object()) {
    const double x = x_of(b["first_flip"].at("step").get<int64_t>());
    svg += fmt::format(
        "<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"#b3261e\" "
        "stroke-dasharray=\"4 3\"><title>first argmax flip</title></line>",
        x, x, top, H - bottom);
  }
  for (size_t c = 0; c < columns.size(); ++c) {
    std::string points;
    for (const json& g : growth) {
      const json& v = g.at("max_abs_diff").at(c);
      if (!v.is_number()) continue;
      points +=
          fmt::format("{:.1f},{:.1f} ", x_of(g.at("step").get<int64_t>()), y_of(v.get<double>()));
    }
    const char* colour = kColours[c % kColourCount];
    svg += fmt::format(
        "<polyline class=\"series\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" "
        "points=\"{}\"><title>{}</title></polyline>",
        colour, points, html_escape(columns[c].get<std::string>()));
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
        "<text x=\"{}\" y=\"{}\" font-size=\"12\">{}</text>",
        W - right + 10, top + 16 * c, colour, W - right + 24, top + 16 * c + 9,
        html_escape(columns[c].get<std::string>()));
  }
  return svg + "</svg>";
}

}  // namespace

std::string render_bisect_html(const json& b) {
  std::string h =
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'unsafe-inline'; img-src data:\">"
      "<title>nvdet bisect</title><style>body{font-family:system-ui,sans-serif;margin:24px;"
      "color:#222;max-width:1200px}table{border-collapse:collapse;margin:8px 0 16px}th,td{border:"
      "1px solid #ccc;padding:3px 8px;font-size:13px}td.num{text-align:right;font-variant-numeric:"
      "tabular-nums}code{font-size:12px}.muted{color:#666}</style></head><body>";
  h += fmt::format("<h1>nvdet bisect: <code>{}</code></h1>", html_escape(text(b, "scenario")));
  h += fmt::format(
      "<section id=\"summary\"><p>backend <code>{}</code>, request {}</p><p>A: <code>{}</code><br>"
      "B: <code>{}</code></p></section>",
      html_escape(text(b, "backend")), b.value("request", int64_t{0}),
      html_escape(text(b, "context_a")), html_escape(text(b, "context_b")));
  h += "<section id=\"first-op\"><h2>First op whose bits differ</h2>";
  if (b.contains("first_op") && b["first_op"].is_object()) {
    const json& f = b["first_op"];
    const json& m = f.at("first_mismatch");
    std::string coords;
    for (const json& c : m.at("coords"))
      coords += (coords.empty() ? "" : ", ") + std::to_string(c.get<int64_t>());
    h += fmt::format(
        "<p>step {}, {}op <code>{}</code>: element ({}) A {} (<code>{}</code>) vs B {} "
        "(<code>{}</code>), {} ulp; {} of {} elements differ, max |diff| {}</p>",
        f.at("step").get<int64_t>(),
        // An op outside the layers (embed, final_norm, logits) is traced as layer -1.
        f.at("layer").get<int64_t>() < 0 ? std::string()
                                         : fmt::format("layer {}, ", f.at("layer").get<int64_t>()),
        html_escape(text(f, "op")), coords, number(m.at("a")), html_escape(text(m, "a_bits")),
        number(m.at("b")), html_escape(text(m, "b_bits")),
        m.at("ulp").is_number() ? std::to_string(m["ulp"].get<uint64_t>()) : "-",
        f.value("mismatch_count", int64_t{0}), f.value("numel", int64_t{0}),
        number(f.at("max_abs_diff")));
  } else {
    h += "<p>No op differs: the two contexts are bitwise identical.</p>";
  }
  h += "</section><section id=\"first-flip\"><h2>First argmax flip</h2>";
  if (b.contains("first_flip") && b["first_flip"].is_object()) {
    const json& f = b["first_flip"];
    h += fmt::format(
        "<p>step {}: A chose {} (logit {}, margin over its second choice {}), B chose {} (logit "
        "{}; B's logit of A's token {})</p>",
        f.at("step").get<int64_t>(), f.at("token_a").get<int64_t>(),
        number(f.at("a_logit_of_token_a")), number(f.at("a_margin")),
        f.at("token_b").get<int64_t>(), number(f.at("b_logit_of_token_b")),
        number(f.at("b_logit_of_token_a")));
  } else {
    h += "<p>No flip: both contexts generate the same tokens.</p>";
  }
  h += fmt::format("<p>A: <code>{}</code><br>B: <code>{}</code></p></section>",
                   tokens(b.at("completion_a")), tokens(b.at("completion_b")));
  h += "<section id=\"growth\"><h2>How the difference grew</h2>" + growth_plot(b);
  h += "<table><tr><th>step</th>";
  for (const json& c : b.at("columns")) h += "<th>" + html_escape(c.get<std::string>()) + "</th>";
  h += "</tr>";
  for (const json& g : b.at("growth")) {
    h += fmt::format("<tr><td class=\"num\">{}</td>", g.at("step").get<int64_t>());
    for (const json& v : g.at("max_abs_diff")) h += "<td class=\"num\">" + number(v) + "</td>";
    h += "</tr>";
  }
  return h + "</table></section></body></html>\n";
}

}  // namespace nvdet
