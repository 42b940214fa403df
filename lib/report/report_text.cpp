#include "lib/report/report_text.h"

#include <absl/strings/str_join.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

#include "lib/runner/verdict.h"

namespace nvdet::report_text {
namespace {

std::optional<int64_t> as_integer(const std::string& s) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// Folds the values (already in sweep order) into "a..b" runs where they are consecutive integers.
std::string fold_runs(const std::vector<std::string>& values) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < values.size()) {
    size_t j = i;
    const auto first = as_integer(values[i]);
    if (first) {
      while (j + 1 < values.size()) {
        const auto next = as_integer(values[j + 1]);
        const auto cur = as_integer(values[j]);
        if (!next || *next != *cur + 1) break;
        ++j;
      }
    }
    if (j - i >= 2) {
      parts.push_back(values[i] + ".." + values[j]);
    } else {
      for (size_t k = i; k <= j; ++k) parts.push_back(values[k]);
    }
    i = j + 1;
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace

std::string exact_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // Tensor values are bf16/fp16/fp32, all exact as float: the shortest float text ("0.18616834")
  // names the same value as the long double text ("0.1861683428287506") and reads better.
  const auto f = static_cast<float>(v);
  if (static_cast<double>(f) == v) return fmt::format("{}", f);
  return fmt::format("{}", v);
}

std::string short_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.4g}", v);
}

std::string ulp_text(uint64_t ulp) {
  return ulp == std::numeric_limits<uint64_t>::max() ? "n/a" : std::to_string(ulp);
}

std::string named_coords(const std::vector<int64_t>& coords,
                         const std::vector<std::string>& names) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < coords.size(); ++i) {
    const std::string name =
        i < names.size() && !names[i].empty() ? names[i] : "dim" + std::to_string(i);
    parts.push_back(name + "=" + std::to_string(coords[i]));
  }
  return absl::StrJoin(parts, ", ");
}

std::vector<std::string> notes_that_differ(const RunNotes& baseline, const RunNotes& other) {
  std::set<std::string> keys;
  for (const auto& [k, v] : baseline) keys.insert(k);
  for (const auto& [k, v] : other) keys.insert(k);
  std::vector<std::string> out;
  for (const std::string& k : keys) {
    const auto a = baseline.find(k), b = other.find(k);
    const std::string av = a == baseline.end() ? "-" : a->second;
    const std::string bv = b == other.end() ? "-" : b->second;
    if (av != bv) out.push_back(k + " " + av + " \u2192 " + bv);
  }
  return out;
}

std::string device_line(const SystemInfo& s) {
  if (s.gpus.empty()) {
    std::string line = "CPU only";
    if (!s.device_error.empty()) line += " (" + s.device_error + ")";
    if (!s.host.empty()) line += "; host " + s.host;
    return line;
  }
  const GpuInfo& g = s.gpus.front();
  std::string line =
      g.name + " (" + std::to_string(g.sm_count) + " SMs, compute " + g.compute_capability + ")";
  if (s.gpus.size() > 1) line += " + " + std::to_string(s.gpus.size() - 1) + " more";
  line += ", driver " + (s.driver_version.empty() ? std::string("?") : s.driver_version);
  line += ", CUDA runtime " +
          (s.cuda_runtime_version.empty() ? std::string("?") : s.cuda_runtime_version);
  line += ", cuBLAS " + (s.cublas_version.empty() ? std::string("?") : s.cublas_version);
  return line;
}

std::optional<std::string> context_value(
    const std::vector<std::pair<std::string, AxisValue>>& values, const std::string& axis) {
  for (const auto& [k, v] : values) {
    if (k == axis) return axis_value_string(v);
  }
  return std::nullopt;
}

std::string context_label(const AuditResult& r, int context_index, const std::string& context_id) {
  const Context* c = find_context(r, context_index);
  if (!c || c->values.empty()) return context_id;
  std::vector<std::string> parts;
  for (const auto& [k, v] : c->values) parts.push_back(k + "=" + axis_value_string(v));
  return absl::StrJoin(parts, ", ");
}

std::vector<const CaseRecord*> decoding_cases(const AuditResult& r) {
  std::vector<const CaseRecord*> out;
  for (const CaseRecord& c : r.cases) {
    if (c.generated_tokens > 0) out.push_back(&c);
  }
  return out;
}

double tokens_per_second(const CaseRecord& c) {
  return c.seconds > 0 ? static_cast<double>(c.generated_tokens) / c.seconds : 0.0;
}

std::vector<std::pair<std::string, std::vector<std::string>>> varying_axes(const AuditResult& r) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const auto& axis : r.scenario.axes) {
    if (axis.second.size() > 1) out.push_back(axis);
  }
  return out;
}

std::vector<std::string> describe_context_set(const AuditResult& r,
                                              const std::map<int, std::string>& contexts,
                                              size_t max_lines) {
  std::vector<std::string> lines;
  if (contexts.empty()) return lines;
  const auto axes = varying_axes(r);

  // Group by the other varying axes; remember the order in which groups first appear in the
  // sweep (context_index order) so the lines follow the sweep.
  bool groupable = !axes.empty();
  struct Group {
    int first_index = std::numeric_limits<int>::max();
    std::set<size_t> positions;  // indices into the first axis's values
  };
  std::map<std::string, Group> groups;
  if (groupable) {
    const auto& [first_axis, first_values] = axes.front();
    for (const auto& [index, id] : contexts) {
      const Context* c = find_context(r, index);
      if (!c || c->values.empty()) {
        groupable = false;
        break;
      }
      const auto v = context_value(c->values, first_axis);
      const auto pos =
          v ? std::find(first_values.begin(), first_values.end(), *v) : first_values.end();
      if (pos == first_values.end()) {
        groupable = false;
        break;
      }
      std::vector<std::string> key_parts;
      for (size_t a = 1; a < axes.size(); ++a) {
        const auto w = context_value(c->values, axes[a].first);
        key_parts.push_back(axes[a].first + "=" + (w ? *w : "?"));
      }
      Group& g = groups[absl::StrJoin(key_parts, ", ")];
      g.positions.insert(static_cast<size_t>(pos - first_values.begin()));
      g.first_index = std::min(g.first_index, index);
    }
  }

  if (!groupable) {
    std::vector<std::string> labels;
    for (const auto& [index, id] : contexts) labels.push_back(context_label(r, index, id));
    for (size_t i = 0; i < labels.size() && i < max_lines; ++i) lines.push_back(labels[i]);
    if (labels.size() > max_lines) {
      lines.push_back("... and " + std::to_string(labels.size() - max_lines) + " more");
    }
    return lines;
  }

  // Groups with the same first-axis values are merged ("position=first or position=last"), and
  // when one merged group covers every combination of the other axes the prefix is dropped.
  struct Merged {
    int first_index;
    std::vector<std::string> keys;
    std::set<size_t> positions;
  };
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [key, g] : groups) order.emplace_back(g.first_index, key);
  std::sort(order.begin(), order.end());
  std::vector<Merged> merged;
  for (const auto& [first_index, key] : order) {
    const Group& g = groups.at(key);
    auto same = std::find_if(merged.begin(), merged.end(),
                             [&](const Merged& m) { return m.positions == g.positions; });
    if (same == merged.end()) {
      merged.push_back({first_index, {key}, g.positions});
    } else {
      same->keys.push_back(key);
    }
  }
  size_t combinations = 1;
  std::vector<std::string> other_names;
  for (size_t a = 1; a < axes.size(); ++a) {
    combinations *= axes[a].second.size();
    other_names.push_back(axes[a].first);
  }
  const auto& [first_axis, first_values] = axes.front();
  for (size_t i = 0; i < merged.size(); ++i) {
    if (i == max_lines) {
      lines.push_back("... and " + std::to_string(merged.size() - max_lines) + " more groups");
      break;
    }
    const Merged& m = merged[i];
    std::vector<std::string> values;
    for (const size_t p : m.positions) values.push_back(first_values[p]);
    std::string line = first_axis + " = " + fold_runs(values);
    if (axes.size() > 1) {
      if (m.keys.size() == combinations) {
        line += " (every " + absl::StrJoin(other_names, " \u00d7 ") + ")";
      } else {
        line = absl::StrJoin(m.keys, " or ") + ": " + line;
      }
    }
    lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> stands_for_lines(const BackendOutcome& b, const std::string& op) {
  const auto it = b.stands_for.find(op);
  if (it != b.stands_for.end()) return {it->first + ": " + it->second};
  std::vector<std::string> out;
  for (const auto& [name, what] : b.stands_for) out.push_back(name + ": " + what);
  return out;
}

std::string command_name(const AuditResult& r) { return r.probe ? "probe" : "audit"; }

std::string plural(int64_t n, const std::string& singular, const std::string& plural_form) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural_form);
}

std::optional<TokenLevelResult> token_level_result(const AuditResult& r, const BackendOutcome& b) {
  if (r.scenario.op != "model" || b.skipped) return std::nullopt;
  TokenLevelResult t;
  if (b.max_distinct_completions > 0) {
    t.completions = fmt::format("up to {} distinct per request", b.max_distinct_completions);
  }
  for (const Divergence& d : r.divergences) {  // the first divergence whose tokens differ
    if (d.backend != b.name || !d.completion) continue;
    const CompletionDivergence& c = *d.completion;
    // A sampled token was drawn, not chosen as the argmax: the top-1/top-2 margin says nothing
    // about it (its probabilities do, below).
    t.first_flip = fmt::format(
        "request {} at step {} in {}: {} vs {} (baseline logits {:.6g} vs {:.6g}{})", d.request,
        c.step, d.context, c.baseline_token, c.token, c.baseline_logit_of_baseline_token,
        c.baseline_logit_of_token,
        c.sampled ? std::string() : fmt::format(", top-1/top-2 margin {:.3g}", c.baseline_margin));
    if (c.sampled) {
      t.sampled = fmt::format("baseline probabilities {:.4g} vs {:.4g} (margin {:.3g})",
                              c.baseline_prob_of_baseline_token, c.baseline_prob_of_token,
                              c.baseline_prob_of_baseline_token - c.baseline_prob_of_token);
    }
    if (d.first_op) {
      t.first_op = describe_op_location(d.first_op->step, d.first_op->layer, d.first_op->op);
    }
    break;
  }
  return t;
}

}  // namespace nvdet::report_text
