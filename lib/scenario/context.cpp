#include "lib/scenario/context.h"

#include <re2/re2.h>

#include <map>
#include <memory>

#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"
#include "lib/scenario/context_filter.h"
#include "lib/scenario/typo_hint.h"

namespace nvdet {
namespace {

std::string join_words(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

}  // namespace

int64_t Context::integer(Axis a) const {
  if (const auto* n = std::get_if<int64_t>(&value(a))) return *n;
  throw_runtime_error("context " + id + ": axis '" + axis_spec(a).name +
                      "' holds a word, read as an integer");
}

const std::string& Context::word(Axis a) const {
  if (const auto* w = std::get_if<std::string>(&value(a))) return *w;
  throw_runtime_error("context " + id + ": axis '" + axis_spec(a).name +
                      "' holds an integer, read as a word");
}

Context make_context(OpKind op, int index, std::vector<std::pair<std::string, AxisValue>> values,
                     const AxisSettings* defaults, const std::string& where) {
  Context c;
  c.index = index;
  if (defaults) c.settings = *defaults;
  const auto valid = [op] { return join_words(axes_of_op(op)); };  // for messages only
  const auto refuse = [&where](const std::string& why) { throw_input_error(where + ": " + why); };
  c.id = std::string(op_name(op)) + "(";
  for (size_t i = 0; i < values.size(); ++i) {
    const auto& [name, v] = values[i];
    const AxisSpec* a = find_axis(name);
    if (!a)
      refuse("unknown axis '" + excerpt(name) + "'" + typo_hint(name, axes_of_op(op)) +
             " (axes of op '" + std::string(op_name(op)) + "': " + valid() + ")");
    if (!a->applies_to(op))
      refuse("axis '" + a->name + "' does not apply to op '" + std::string(op_name(op)) +
             "' (its axes: " + valid() + ")");
    if (const std::optional<std::string> why = axis_value_problem(*a, v)) refuse(*why);
    for (size_t k = 0; k < i; ++k)
      if (values[k].first == name) refuse("axis '" + a->name + "' is given twice");
    c.settings[static_cast<size_t>(a->axis)] = v;
    const std::string item = a->name + "=" + axis_value_string(v);
    c.id += (i ? "," : "") + item;
    if (a->defines_request) c.group += (c.group.empty() ? "" : ",") + item;
  }
  c.id += ")";
  c.values = std::move(values);
  return c;
}

std::vector<Context> expand_contexts(const Scenario& s) {
  const AxisSettings defaults = axis_defaults(s);
  std::vector<Context> out;
  std::vector<size_t> digit(s.sweep.size(), 0);
  for (;;) {
    std::vector<std::pair<std::string, AxisValue>> values;
    for (size_t a = 0; a < s.sweep.size(); ++a)
      values.emplace_back(s.sweep[a].name(), s.sweep[a].values[digit[a]]);
    out.push_back(
        make_context(s.op, static_cast<int>(out.size()), std::move(values), &defaults, s.path));
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
    throw_input_error("--filter is " + std::to_string(pattern.size()) +
                      " bytes, more than the limit of " + std::to_string(kMaxFilterBytes));
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
    throw_input_error(filter + "any of the " + std::to_string(scenarios) + " scenarios (" + names +
                      ")");
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
