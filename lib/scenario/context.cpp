#include "lib/scenario/context.h"
#include "lib/scenario/context_filter.h"

#include <re2/re2.h>

#include <map>
#include <memory>

#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"

namespace nvdet {

bool Context::has(const std::string& axis) const {
  for (const auto& [name, v] : values) {
    if (name == axis) return true;
  }
  return false;
}

int64_t Context::get_int(const std::string& axis, int64_t fallback) const {
  for (const auto& [name, v] : values) {
    if (name == axis) {
      if (const auto* i = std::get_if<int64_t>(&v)) return *i;
      return fallback;
    }
  }
  return fallback;
}

std::string Context::get_string(const std::string& axis, const std::string& fallback) const {
  for (const auto& [name, v] : values) {
    if (name == axis) return axis_value_string(v);
  }
  return fallback;
}

namespace {
bool axis_defines_request(const std::string& name) {
  for (const AxisDescription& a : known_axes()) {
    if (a.name == name) return a.defines_request;
  }
  return false;
}
}  // namespace

std::vector<Context> expand_contexts(const Scenario& s) {
  std::vector<Context> out;
  std::vector<size_t> digit(s.sweep.size(), 0);
  for (;;) {
    Context c;
    c.index = static_cast<int>(out.size());
    c.id = std::string(op_name(s.op)) + "(";
    for (size_t a = 0; a < s.sweep.size(); ++a) {
      const AxisValue& v = s.sweep[a].values[digit[a]];
      c.values.emplace_back(s.sweep[a].name, v);
      const std::string item = s.sweep[a].name + "=" + axis_value_string(v);
      c.id += (a ? "," : "") + item;
      if (axis_defines_request(s.sweep[a].name)) c.group += (c.group.empty() ? "" : ",") + item;
    }
    c.id += ")";
    out.push_back(std::move(c));
    // Odometer increment, last axis fastest.
    size_t a = s.sweep.size();
    while (a > 0) {
      --a;
      if (++digit[a] < s.sweep[a].values.size()) break;
      digit[a] = 0;
      if (a == 0) return out;
    }
    if (s.sweep.empty()) return out;
  }
}

ContextFilter::ContextFilter(const std::string& pattern) : pattern_(pattern) {
  if (pattern.empty()) return;
  if (pattern.size() > kMaxFilterBytes)
    throw_input_error("--filter is " + std::to_string(pattern.size()) + " bytes, more than the limit of " +
                      std::to_string(kMaxFilterBytes));
  // RE2 matches in time linear in the id, without backtracking ('(.+)+X' is no slower than
  // 'X'), parses without recursion limits of the stack (nesting past its own limit is an error),
  // and bounds the memory of its automata.
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(int64_t{8} << 20);
  auto re = std::make_shared<RE2>(pattern, options);
  if (!re->ok())
    throw_input_error("--filter '" + excerpt(pattern) + "' is not a valid regular expression (" +
                      excerpt(re->error()) + ")");
  re_ = std::move(re);
}

bool ContextFilter::matches(const std::string& id) const {
  return !re_ || RE2::PartialMatch(id, *re_);
}

std::vector<Context> select_contexts(std::vector<Context> contexts, const ContextFilter& filter) {
  if (filter.empty() || contexts.empty()) return contexts;
  std::vector<bool> matched(contexts.size()), keep(contexts.size());
  std::map<std::string, size_t> group_first;
  for (size_t i = 0; i < contexts.size(); ++i) {
    group_first.try_emplace(contexts[i].group, i);
    matched[i] = filter.matches(contexts[i].id);
  }
  for (size_t i = 0; i < contexts.size(); ++i) {
    if (matched[i]) keep[i] = keep[group_first.at(contexts[i].group)] = true;
  }
  std::vector<Context> kept;
  for (size_t i = 0; i < contexts.size(); ++i) {
    if (keep[i]) kept.push_back(std::move(contexts[i]));
  }
  return kept;
}

std::string no_match_text(const ContextFilter& filter, const std::vector<Context>& contexts) {
  std::string s = "--filter '" + excerpt(filter.pattern()) + "' matches no context";
  if (!contexts.empty()) s += " (ids look like '" + contexts.back().id + "')";
  return s;
}

std::string filter_run_note(const std::string& pattern, const std::vector<std::string>& unmatched,
                            size_t scenarios) {
  if (unmatched.empty()) return "";
  std::string names;
  for (const std::string& n : unmatched) names += (names.empty() ? "'" : ", '") + excerpt(n) + "'";
  const std::string filter = "--filter '" + excerpt(pattern) + "' matches no context of ";
  if (unmatched.size() == scenarios)
    throw_input_error(filter + "any of the " + std::to_string(scenarios) + " scenarios (" + names + ")");
  return filter + (unmatched.size() > 1 ? "scenarios " : "scenario ") + names + ": not run";
}

std::vector<Context> filter_contexts(std::vector<Context> contexts, const std::string& filter) {
  const ContextFilter f(filter);
  if (f.empty() || contexts.empty()) return contexts;
  std::vector<Context> kept = select_contexts(contexts, f);
  if (kept.empty()) throw_input_error(no_match_text(f, contexts));
  return kept;
}

}  // namespace nvdet
