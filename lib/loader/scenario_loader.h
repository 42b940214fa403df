#pragma once
// Reading scenario files: YAML in, a validated nvdet::Scenario out. What each op accepts comes
// from the op table (lib/loader/op_table.h).
#include <string>
#include <vector>

#include "lib/scenario/scenario.h"

namespace nvdet {

// Loads and validates a scenario file. Throws Error(kBadInput) with `file:line:column: sentence`.
Scenario load_scenario(const std::string& path);
// Loads every file named on one command line; two scenarios with one name are bad input, since
// their `outputs` ("reports and manifest entries") would overwrite each other.
std::vector<Scenario> load_scenarios(const std::vector<std::string>& paths,
                                     const std::string& outputs);
// Same, from text (tests); `path` is used in messages.
Scenario parse_scenario(const std::string& yaml_text, const std::string& path);

}  // namespace nvdet
