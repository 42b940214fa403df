// Renders the HTML report in headless Chromium (when one is installed) and checks that it loads
// with every section present and no script error, console error or Content-Security-Policy
// violation. Errors are caught by a small probe script inserted into a copy of the report: it
// records window errors, console.error calls and CSP violations into an element that
// `--dump-dom` then prints. A deliberately broken page checks that the probe itself works.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "lib/report/html_report.h"
#include "lib/report/json_report_reader.h"
#include "tests/report_sample_result.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

namespace fs = std::filesystem;

// The first Chromium-like browser on PATH, or "".
std::string find_chromium() {
  for (const char* name :
       {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}) {
    const std::string cmd = std::string("command -v ") + name + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return name;
  }
  return "";
}

constexpr const char* kProbeHead = R"(<script>
window.__nvdetErrors = [];
function __nvdetRecord(message) {
  window.__nvdetErrors.push(String(message));
  var box = document.getElementById('nvdet-probe-errors');
  if (box) box.textContent = 'errors=' + window.__nvdetErrors.length + ' ' + window.__nvdetErrors.join(' | ');
}
window.addEventListener('error', function (e) { __nvdetRecord('error: ' + e.message); });
window.addEventListener('unhandledrejection', function (e) { __nvdetRecord('rejection: ' + e.reason); });
document.addEventListener('securitypolicyviolation', function (e) { __nvdetRecord('csp: ' + e.violatedDirective + ' ' + e.blockedURI); });
var __nvdetConsoleError = console.error;
console.error = function () { __nvdetRecord('console.error: ' + Array.prototype.join.call(arguments, ' ')); __nvdetConsoleError.apply(console, arguments); };
</script>
)";

// Written at the very end of the body, after the report's own script has run.
constexpr const char* kProbeTail = R"(<div id="nvdet-probe-errors"></div>
<script>document.getElementById('nvdet-probe-errors').textContent = 'errors=' + window.__nvdetErrors.length + ' ' + window.__nvdetErrors.join(' | ');</script>
)";

std::string with_probe(std::string html) {
  const size_t head = html.find("<head>");
  const size_t body_end = html.rfind("</body>");
  if (head == std::string::npos || body_end == std::string::npos) return "";
  html.insert(body_end, kProbeTail);
  html.insert(head + 6, kProbeHead);
  return html;
}

struct Rendered {
  int exit_code = -1;
  std::string dom;
  std::string log;
};

Rendered render(const std::string& browser, const fs::path& page, const fs::path& work,
                const std::string& window = "") {
  const fs::path out = work / "dom.html", err = work / "stderr.txt";
  // A fresh profile keeps the run independent of any user state; --no-sandbox because tests may
  // run as root in containers.
  const std::string cmd =
      "timeout 120 " + browser +
      " --headless --disable-gpu --no-sandbox --no-first-run"
      " --disable-extensions --disable-dev-shm-usage --enable-logging=stderr --v=0"
      " --user-data-dir=" +
      (work / "profile").string() + (window.empty() ? std::string() : " --window-size=" + window) +
      " --virtual-time-budget=2000 --dump-dom file://" + page.string() + " >" + out.string() +
      " 2>" + err.string() + " </dev/null";
  const int status = std::system(cmd.c_str());
  Rendered r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.dom = testing::read_file(out);
  r.log = testing::read_file(err);
  return r;
}

// Console messages Chromium logs at error level or for uncaught exceptions.
bool log_has_page_error(const std::string& log) {
  return log.find("Uncaught") != std::string::npos || log.find("Refused to") != std::string::npos;
}

TEST(HtmlChromium, ReportLoadsWithoutErrorsAndHasItsSections) {
  const std::string browser = find_chromium();
  if (browser.empty()) GTEST_SKIP() << "no chromium on PATH";
  const fs::path work = testing::make_temp_dir("chromium");

  const std::string html = render_html_report(testing::make_sample_audit_result());
  const std::string probed = with_probe(html);
  ASSERT_FALSE(probed.empty());
  testing::write_file(work / "report.html", probed);
  const Rendered r = render(browser, work / "report.html", work);
  ASSERT_EQ(r.exit_code, 0) << r.log;
  ASSERT_FALSE(r.dom.empty()) << r.log;

  EXPECT_NE(r.dom.find("<div id=\"nvdet-probe-errors\">errors=0 </div>"), std::string::npos)
      << r.dom.substr(std::min(r.dom.size(), r.dom.rfind("nvdet-probe-errors") - 20));
  EXPECT_FALSE(log_has_page_error(r.log)) << r.log;
  for (const char* id : {"summary", "backends", "heatmaps", "divergences", "bisect",
                         "heatmap-cpu-variant", "divergence-table", "divergence-filter"}) {
    EXPECT_NE(r.dom.find("id=\"" + std::string(id) + "\""), std::string::npos) << id;
  }
  // The SVG was parsed as SVG (its cells are in the DOM with their titles).
  EXPECT_NE(r.dom.find("<rect class=\"cell\""), std::string::npos);
  EXPECT_NE(r.dom.find("<title>batch=5, position=first: result #3"), std::string::npos);
  fs::remove_all(work);
}

// Measures the laid-out page: how far the document is wider than the window, and each table and
// heatmap whose right edge lies past the window's (a column a reader could not see without
// scrolling). Written at the end of the body, after layout.
constexpr const char* kLayoutProbe = R"(<div id="nvdet-layout"></div>
<script>
(function(){
  var w = document.documentElement.clientWidth, cut = [];
  var boxes = document.querySelectorAll('table, svg');
  for (var i = 0; i < boxes.length; i++) {
    var r = boxes[i].getBoundingClientRect();
    if (r.right > w + 0.5) cut.push((boxes[i].id || boxes[i].parentNode.id || boxes[i].tagName) + ':' + Math.round(r.right));
  }
  document.getElementById('nvdet-layout').textContent = 'width=' + w + ' overflow=' +
      (document.documentElement.scrollWidth - w) + ' cut=' + cut.length + ' [' + cut.join(' ') + '] tables=' + boxes.length;
})();
</script>
)";

std::string layout_line(const std::string& dom) {
  const size_t at = dom.find("<div id=\"nvdet-layout\">");
  if (at == std::string::npos) return "";
  const size_t start = at + 23, end = dom.find("</div>", start);
  return dom.substr(start, end - start);
}

// At a usual 1280-pixel window, nothing is cut off: no table or heatmap reaches past the window
// and the page does not scroll sideways; several notes are folded into <details>. Checked on the
// hand-built sample and on the committed H200 decode sweep (300 contexts, 10 groups).
TEST(HtmlChromium, FitsA1280PixelWindow) {
  const std::string browser = find_chromium();
  if (browser.empty()) GTEST_SKIP() << "no chromium on PATH";
  const fs::path work = testing::make_temp_dir("chromium-layout");
  const fs::path h200 =
      testing::source_dir() / "reports" / "h200" / "audit" / "decode-kv-sweep.json";
  std::vector<std::pair<std::string, std::string>> pages = {
      {"sample", render_html_report(testing::make_sample_audit_result())}};
  if (fs::exists(h200))
    pages.emplace_back("h200", render_html_report(read_audit_report(h200.string())));
  for (const auto& [name, html] : pages) {
    std::string page = html;
    page.insert(page.rfind("</body>"), kLayoutProbe);
    testing::write_file(work / (name + ".html"), page);
    const Rendered r = render(browser, work / (name + ".html"), work, "1280,900");
    ASSERT_EQ(r.exit_code, 0) << r.log;
    const std::string line = layout_line(r.dom);
    ASSERT_EQ(line.rfind("width=", 0), 0u) << name << ": no layout line\n" << r.log;
    const int width = std::stoi(line.substr(6));
    EXPECT_GT(width, 1200) << line;  // the window size took effect
    EXPECT_LE(width, 1280) << line;
    EXPECT_NE(line.find(" overflow=0 cut=0 []"), std::string::npos) << name << ": " << line;
    EXPECT_NE(r.dom.find("<details><summary>Results per group"), std::string::npos) << name;
  }
  fs::remove_all(work);
}

TEST(HtmlChromium, ProbeCatchesAScriptError) {
  const std::string browser = find_chromium();
  if (browser.empty()) GTEST_SKIP() << "no chromium on PATH";
  const fs::path work = testing::make_temp_dir("chromium-broken");
  std::string html = render_html_report(testing::make_sample_audit_result());
  // Break the page on purpose: a call to a function that does not exist.
  html.insert(html.rfind("</body>"), "<script>nvdetNoSuchFunction();</script>\n");
  testing::write_file(work / "broken.html", with_probe(html));
  const Rendered r = render(browser, work / "broken.html", work);
  ASSERT_EQ(r.exit_code, 0) << r.log;
  EXPECT_NE(r.dom.find("errors=1 error: Uncaught ReferenceError: nvdetNoSuchFunction"),
            std::string::npos)
      << r.dom.substr(std::min(r.dom.size(), r.dom.rfind("nvdet-probe-errors") - 20));
  fs::remove_all(work);
}

}  // namespace
}  // namespace nvdet
