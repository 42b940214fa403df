#pragma once
// Reading scenario files: YAML in, a validated nvdet::Scenario out. What each op accepts comes
// from the op table (lib/loader/op_table.h).
#include <string>
#include <vector>

#include "lib/scenario/scenario.h"

namespace nvdet {

// `--axis NAME=VALUES`: the sweep axis NAME takes VALUES instead of the scenario's (or is added
// to its sweep), written as the scenario's sweep would hold them ("1,8,64", or a list with range
// maps "[1, {from: 16, to: 64, mul: 2}]") and checked by the same rules.
struct AxisOverride {
  std::string axis, values;
};
inline constexpr size_t kMaxAxisOverrideChars = 4096;
// Splits "NAME=VALUES"; throws Error(kBadInput) for another shape or an over-long text.
AxisOverride parse_axis_override(const std::string& text);

// Loads and validates a scenario file. Throws Error(kBadInput) with `file:line:column: sentence`
// (`--axis NAME:line:column: sentence` for a bad override).
Scenario load_scenario(const std::string& path, const std::vector<AxisOverride>& overrides = {});
// Loads every file named on one command line; two scenarios with one name are bad input, since
// their `outputs` ("reports and manifest entries") would overwrite each other. The overrides
// apply to every scenario (each checks them against its own op).
std::vector<Scenario> load_scenarios(const std::vector<std::string>& paths,
                                     const std::string& outputs,
                                     const std::vector<AxisOverride>& overrides = {});
// Same, from text (tests); `path` is used in messages.
Scenario parse_scenario(const std::string& yaml_text, const std::string& path,
                        const std::vector<AxisOverride>& overrides = {});

}  // namespace nvdet
