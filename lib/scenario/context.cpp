#include "lib/scenario/context.h"

#include <map>

#include "lib/core/error.h"

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

std::vector<Context> filter_contexts(std::vector<Context> contexts, const std::string& filter) {
  if (filter.empty() || contexts.empty()) return contexts;
  std::regex re;
  try {
    re = std::regex(filter, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw_input_error("--filter '" + filter + "' is not a valid regular expression (" + e.what() +
                      ")");
  }
  std::vector<bool> matched(contexts.size()), keep(contexts.size());
  std::map<std::string, size_t> group_first;
  bool any = false;
  for (size_t i = 0; i < contexts.size(); ++i) {
    group_first.try_emplace(contexts[i].group, i);
    matched[i] = std::regex_search(contexts[i].id, re);
    any = any || matched[i];
  }
  if (!any) {
    throw_input_error("--filter '" + filter + "' matches no context (ids look like '" +
                      contexts.back().id + "')");
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

}  // namespace nvdet
