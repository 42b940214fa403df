#include "lib/report/verify_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "lib/core/text_excerpt.h"
#include "lib/report/json_report.h"

namespace nvdet {
namespace {

using ojson = nlohmann::ordered_json;

// A missing entry's backend and context come from the manifest file: quoted as excerpts.
std::string ref_text(const ManifestEntryRef& r) {
  return fmt::format("{} {} repeat {} request {}", excerpt(r.backend, 64), excerpt(r.context, 128),
                     r.repeat, r.request);
}

}  // namespace

std::pair<std::string, std::string> short_hashes(const Hash128& recorded, const Hash128& now) {
  const std::string a = recorded.hex(), b = now.hex();
  size_t differ = 0;
  while (differ < a.size() && differ < b.size() && a[differ] == b[differ]) ++differ;
  const size_t n = std::max<size_t>(12, differ + 1);
  return {a.substr(0, n), b.substr(0, n)};
}

std::string render_verify_text(const VerifyResult& v) {
  std::string s = fmt::format("verify {} against {}\n", v.scenario, v.manifest);
  for (const auto& [run, recorded] : v.recorded_as) {
    s += fmt::format("  {} checked against the hashes recorded for {}\n", run, recorded);
  }
  if (v.environment.empty()) {
    s += "  environment: unchanged\n";
  } else {
    for (const std::string& e : v.environment) s += "  environment: " + e + "\n";
  }
  constexpr size_t kShown = 10;
  for (size_t i = 0; i < v.changes.size() && i < kShown; ++i) {
    const ManifestChange& c = v.changes[i];
    const auto [recorded, now] = short_hashes(c.recorded, c.now);
    s += fmt::format("  {} {} {} repeat {} request {}: {} → {}", c.fails ? "CHANGED" : "changed",
                     c.backend, c.context, c.repeat, c.request, recorded, now);
    if (c.first_token >= 0) {
      s += fmt::format(", first at token {} ({} of {} tokens differ)", c.first_token,
                       c.changed_tokens, std::min(c.tokens_recorded, c.tokens_now));
    }
    if (c.tokens_recorded != c.tokens_now) {
      s += fmt::format(", {} tokens recorded, {} now", c.tokens_recorded, c.tokens_now);
    }
    s += fmt::format(" [{}]\n",
                     c.expectation.empty() ? "not in this run's backends" : c.expectation);
    if (c.elementwise && c.elementwise->first) {
      const FirstMismatch& f = *c.elementwise->first;
      std::string coords;
      for (size_t k = 0; k < f.coords.size(); ++k)
        coords += (k ? ", " : "") + std::to_string(f.coords[k]);
      const std::string ulp = f.ulp == std::numeric_limits<uint64_t>::max()
                                  ? std::string("NaN involved")
                                  : fmt::format("{} ulp", f.ulp);
      s += fmt::format(
          "      first mismatch: element ({}): {:.9g} vs {:.9g} (bits {} vs {}, {}); "
          "max |diff| {:.3g}, {} elements differ\n",
          coords, f.a, f.b, f.a_bits, f.b_bits, ulp, c.elementwise->max_abs_diff,
          c.elementwise->mismatch_count);
    } else if (c.elementwise) {
      s += "      the two dumps are identical element by element (the recorded dump does not match "
           "the recorded hash)\n";
    } else if (!c.dump_note.empty()) {
      s += "      no element-wise detail: " + c.dump_note + "\n";
    }
  }
  if (v.changes.size() > kShown)
    s += fmt::format("  ... and {} more changes\n", v.changes.size() - kShown);
  for (size_t i = 0; i < v.missing.size() && i < kShown; ++i) {
    s += "  missing (recorded, not run): " + ref_text(v.missing[i]) + "\n";
  }
  if (v.missing.size() > kShown)
    s += fmt::format("  ... and {} more missing\n", v.missing.size() - kShown);
  for (size_t i = 0; i < v.added.size() && i < kShown; ++i) {
    s += "  new (run, not recorded): " + ref_text(v.added[i]) + "\n";
  }
  if (v.added.size() > kShown) s += fmt::format("  ... and {} more new\n", v.added.size() - kShown);
  s += fmt::format("verify {}: {}\n", v.passed ? "PASSED" : "FAILED", v.verdict);
  return s;
}

ojson verify_to_json(const VerifyResult& v) {
  ojson changes = ojson::array();
  for (const ManifestChange& c : v.changes) {
    ojson j = {{"backend", c.backend},
               {"expectation", c.expectation},
               {"context", c.context},
               {"repeat", c.repeat},
               {"request", c.request},
               {"recorded_hash", c.recorded.hex()},
               {"hash", c.now.hex()},
               {"first_token", c.first_token < 0 ? ojson(nullptr) : ojson(c.first_token)},
               {"changed_tokens", c.changed_tokens},
               {"tokens_recorded", c.tokens_recorded},
               {"tokens", c.tokens_now},
               {"fails", c.fails}};
    if (c.elementwise && c.elementwise->first) {
      j["first_mismatch"] = first_mismatch_to_json(*c.elementwise->first);
      j["max_abs_diff"] = json_number(c.elementwise->max_abs_diff);
      j["max_rel_diff"] = json_number(c.elementwise->max_rel_diff);
      j["mismatch_count"] = c.elementwise->mismatch_count;
    }
    changes.push_back(j);
  }
  auto refs = [](const std::vector<ManifestEntryRef>& rs) {
    ojson a = ojson::array();
    for (const auto& r : rs) {
      a.push_back({{"backend", r.backend},
                   {"context", r.context},
                   {"repeat", r.repeat},
                   {"request", r.request}});
    }
    return a;
  };
  ojson j = {{"manifest", v.manifest}, {"scenario", v.scenario},
             {"passed", v.passed},     {"verdict", v.verdict},
             {"compared", v.compared}, {"environment", v.environment},
             {"changes", changes},     {"missing", refs(v.missing)},
             {"new", refs(v.added)},   {"recorded_as", v.recorded_as}};
  if (v.strict) j["strict"] = *v.strict;  // what nvdet report decides the verdict with again
  return j;
}

}  // namespace nvdet
