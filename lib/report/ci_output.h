#pragma once
// What CI systems pick up from an audit, beside the report files: under GitHub Actions, the
// Markdown report appended to the job summary ($GITHUB_STEP_SUMMARY) and one `::error` workflow
// command per failed expectation or failed manifest check, which GitHub shows as an annotation
// on the scenario file's line.
#include <string>
#include <string_view>

#include "lib/core/error.h"
#include "lib/runner/audit_result.h"

namespace nvdet {

// `::error file=scenarios/x.yaml,line=12,title=...::message` lines, one per failed backend and
// one for a failed manifest verification ("" when the audit passed).
std::string github_error_annotations(const AuditResult& r);

// GitHub's escaping of workflow-command data (% \r \n) and, with `property`, of property values
// (also : and ,).
std::string github_escape(std::string_view text, bool property);

// `::error file=F,line=L,col=C::message` for an input error that has a place in a file ("" when
// it has none): GitHub shows it on that line, as it does failed expectations.
std::string github_input_error_annotation(const SourceLocation& where, std::string_view message);

// True when GITHUB_ACTIONS=true: workflow commands are printed.
bool under_github_actions();

// With GITHUB_STEP_SUMMARY set: appends the Markdown report to that file (a failure to do so is
// a warning on stderr; it changes no verdict). With GITHUB_ACTIONS=true: prints the error
// annotations on stdout.
void publish_to_ci(const AuditResult& r);

// With GITHUB_STEP_SUMMARY set: appends `markdown` (the audit's report, bench's table) to the
// job summary; a failure to do so is a warning on stderr.
void append_step_summary(const std::string& markdown);

}  // namespace nvdet
