#pragma once
// Reads a JSON audit report (json_report.h) back into the result model, so that the other
// formats can be rendered again with the current writers from a run made elsewhere (a GPU
// machine) without running anything: `nvdet report AUDIT.json --report-dir DIR`.
#include <nlohmann/json.hpp>
#include <string>

#include "lib/runner/audit_result.h"

namespace nvdet {

// `what` names the file in messages. Reports written before contexts carried their group get it
// recomputed from the scenario's request-defining axes. Throws Error(kBadInput) "cannot read
// audit report '<what>': <reason>" for anything that is not a schema_version 1 audit report.
AuditResult audit_from_json(const nlohmann::json& j, const std::string& what);

// Reads and parses the file (plain JSON).
AuditResult read_audit_report(const std::string& path);

}  // namespace nvdet
