#pragma once
// The report writers: one interface, one registry (a FormatRegistry, as bench's and bisect's
// formats are). `--format md,json,junit,html` selects writers by name, the CLI's help lists them
// from the registry, and writing an audit's reports into a folder is one loop over the selected
// writers. Writers read only the result model
// (AuditResult, verify result included); they know nothing about backends or kernels.
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/report/format_registry.h"
#include "lib/runner/audit_result.h"

namespace nvdet {

// An audit report format (lib/report/format_registry.h: name, suffix, description, aliases,
// companion), rendered from the audit result.
class ReportWriter : public Writer<AuditResult> {
 public:
  // True for writers that have something to say only after a manifest verification (--verify):
  // they are skipped for results without one.
  virtual bool needs_verify() const { return false; }
};

// The audit's registry (also nvdet report's): the built-in writers, then any registered.
const FormatRegistry<ReportWriter>& report_format_registry();

// Every writer, in the order --help lists them: the built-in ones, then any registered.
const std::vector<std::unique_ptr<ReportWriter>>& report_writers();

// Adds a writer. Throws Error(kBadInput) when its name or an alias is taken, or when it is the
// companion of a writer that does not exist.
void register_report_writer(std::unique_ptr<ReportWriter> writer);

// The writer --format calls `name` (a name or an alias, any case); null when none.
const ReportWriter* find_report_writer(std::string_view name);

// Parses a comma-separated list of format names ("md,json,junit,html"; aliases are accepted;
// spaces around names are ignored; duplicates collapse). Throws Error(kBadInput) naming the
// unknown format and the known ones, or for an empty list.
std::vector<const ReportWriter*> parse_report_formats(const std::string& csv);

// The writers chosen by name, comma separated ("md, json, junit, html"), and one line per writer
// for --help.
std::string report_format_names();
std::string report_formats_help();

// The writers that write for `selected`: each selected writer followed by its companions.
std::vector<const ReportWriter*> writers_with_companions(
    const std::vector<const ReportWriter*>& selected);

// The base file name of an audit's reports: the scenario name with anything but letters, digits,
// '.', '_' and '-' replaced by '-' ("audit" when the name is empty).
std::string report_base_name(const AuditResult& result);
std::string report_base_name(const std::string& scenario_name);  // the same, from the name
// A shard's reports: "<base>.shard-2-of-3", so that every shard can write into one folder.
std::string report_base_name(const std::string& scenario_name, int shard_index, int shard_count);

// Creates `dir` (and its parents) and writes `<base><extension>` for every writer of
// writers_with_companions(formats) that has something to say about `result`, as one set: every
// file is written to a temporary first and all are renamed only when all were written
// (AtomicFileSet), so a failure leaves the previous reports whole. Returns the paths written, in
// that order. Throws Error "cannot write report '...': reason" (exit 2 when the folder cannot be
// created or a file cannot be created, exit 3 when the disk is full).
std::vector<std::filesystem::path> write_reports(const AuditResult& result,
                                                 const std::filesystem::path& dir,
                                                 const std::vector<const ReportWriter*>& formats);

}  // namespace nvdet
