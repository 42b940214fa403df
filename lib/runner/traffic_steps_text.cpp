#include "lib/runner/traffic_steps_text.h"

#include <absl/strings/str_join.h>
#include <fmt/format.h>

#include <map>
#include <vector>

namespace nvdet {
namespace {

// "r3, probe 0, r7" / "r9 x10, probe 0 x6": a pass's rows of one kind, the first few requests.
std::string rows_text(const EngineStep& e, bool decode) {
  std::vector<std::string> names;
  for (const StepRows& s : e.requests) {
    if (s.decode != decode) continue;
    names.push_back(decode ? s.request : fmt::format("{} x{}", s.request, s.rows));
  }
  constexpr size_t kShown = 8;
  if (names.size() > kShown) {
    const size_t more = names.size() - kShown;
    names.resize(kShown);
    names.push_back(fmt::format("{} more", more));
  }
  return absl::StrJoin(names, ", ");
}

}  // namespace

std::string probe_step_text(const ProbeStep& p) {
  std::vector<std::string> parts;
  for (const EngineStep& e : p.engine_steps) {
    std::string t =
        fmt::format("engine step {}: {} rows = {} decode", e.step, e.rows(), e.decode_rows);
    if (e.decode_rows > 0) t += " (" + rows_text(e, true) + ")";
    t += fmt::format(" + {} prefill", e.prefill_rows);
    if (e.prefill_rows > 0) t += " (" + rows_text(e, false) + ")";
    parts.push_back(std::move(t));
  }
  std::string out = absl::StrJoin(parts, "; ");
  if (p.cached_tokens > 0)
    out += fmt::format("; {} prompt tokens from the prefix cache", p.cached_tokens);
  return out;
}

RunNotes step_plan(const ProbeStep& p) {
  std::map<std::string, std::vector<std::string>> values;
  for (const EngineStep& e : p.engine_steps) {
    values["rows"].push_back(std::to_string(e.rows()));
    for (const auto& [k, v] : e.notes) values[k].push_back(v);
  }
  RunNotes out;
  for (const auto& [k, v] : values) out[k] = absl::StrJoin(v, "/");
  return out;
}

nlohmann::json probe_step_json(const ProbeStep& p) {
  using nlohmann::json;
  json steps = json::array();
  for (const EngineStep& e : p.engine_steps) {
    json requests = json::array();
    for (const StepRows& r : e.requests)
      requests.push_back({{"request", r.request}, {"rows", r.rows}, {"decode", r.decode}});
    json notes = json::object();
    for (const auto& [k, v] : e.notes) notes[k] = v;
    steps.push_back({{"step", e.step},
                     {"decode_rows", e.decode_rows},
                     {"prefill_rows", e.prefill_rows},
                     {"requests", requests},
                     {"notes", notes}});
  }
  return {{"step", p.step}, {"cached_tokens", p.cached_tokens}, {"engine_steps", steps}};
}

}  // namespace nvdet
