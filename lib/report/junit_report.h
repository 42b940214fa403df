#pragma once
// The JUnit XML report, for CI systems that show test results: one <testsuite> per backend, one
// <testcase> per (backend, request), a <failure> where the backend's expectation failed for that
// request.
#include <string>

#include "lib/runner/audit_result.h"

namespace nvdet {

std::string render_junit_report(const AuditResult& result);

// Escapes text for XML character data and attribute values (& < > " '), and drops characters
// XML 1.0 cannot carry (control characters other than tab, newline, carriage return).
std::string xml_escape(std::string_view text);

}  // namespace nvdet
