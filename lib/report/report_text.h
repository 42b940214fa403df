#pragma once
// Phrasing shared by the human-readable writers (Markdown, HTML, JUnit messages): numbers,
// element coordinates, the run notes that changed, and a compact description of where in the
// sweep a backend's results change. Works on the result model only.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/runner/audit_result.h"

namespace nvdet::report_text {

// Shortest text that reads back to the same double; "nan", "inf", "-inf" otherwise.
std::string exact_number(double v);
// Four significant digits, for differences and times ("3.052e-05", "0.125").
std::string short_number(double v);
// The ULP distance, or "n/a" when undefined (a NaN on either side).
std::string ulp_text(uint64_t ulp);

// "token=0, col=17": coordinates named with the scenario's coord_names ("dim2" past their end).
std::string named_coords(const std::vector<int64_t>& coords, const std::vector<std::string>& names);

// The notes whose values differ between two runs, "split_k 1 → 4" ("-" for a missing side),
// in key order.
std::vector<std::string> notes_that_differ(const RunNotes& baseline, const RunNotes& other);

// "NVIDIA H200 (132 SMs, compute 9.0), driver 580.82, CUDA runtime 13.1, cuBLAS 13.1" or
// "CPU only (no CUDA device: ...)".
std::string device_line(const SystemInfo& s);

// The value of `axis` among a context's typed values, as the scenario's axes list it
// ("8", "last"); nullopt when the context does not sweep it.
std::optional<std::string> context_value(
    const std::vector<std::pair<std::string, AxisValue>>& values, const std::string& axis);

// The text of a context for people: "batch=8, position=last" from its values in the result's
// context table, or `context_id` when the table lacks it (or it sweeps no axis).
std::string context_label(const AuditResult& r, int context_index, const std::string& context_id);

// The cases that generate tokens (model scenarios), in case order; empty for other ops.
std::vector<const CaseRecord*> decoding_cases(const AuditResult& r);
// A decoding case's throughput: generated_tokens / seconds (0 when no time was recorded).
double tokens_per_second(const CaseRecord& c);

// The axes that take more than one value, in sweep order.
std::vector<std::pair<std::string, std::vector<std::string>>> varying_axes(const AuditResult& r);

// Where a set of contexts lies in the sweep, compactly: the contexts are grouped by the values of
// every varying axis but the first, and within a group the first axis's values are listed with
// runs of consecutive integers folded: {"batch = 34..64, 128"} with one varying axis, or
// {"position=last: batch = 2..5, 9", ...} with more. Groups with the same values merge
// ("position=first or position=last: ..."), and a group covering every combination of the other
// axes says so ("batch = 5, 8 (every position)"). Falls back to the context labels when the
// contexts carry no axis values. At most `max_lines` lines; a last line says how many were left.
// `contexts` maps each context's index to its id (the label when it has no values).
std::vector<std::string> describe_context_set(const AuditResult& r,
                                              const std::map<int, std::string>& contexts,
                                              size_t max_lines = 20);

// What a backend stands for, for the scenario's op only when the backend names it ("gemm:
// cuBLASLt's default heuristic ..."), else for every op it lists.
std::vector<std::string> stands_for_lines(const BackendOutcome& b, const std::string& op);

// A model audit's token-level result for one backend, in the console's words, for every format
// to state: how many distinct completions a request got, the first token flip and the first op
// whose bits parted on the way to it. A field is "" when there is nothing to state.
struct TokenLevelResult {
  std::string completions;  // "up to 2 distinct per request"
  std::string first_flip;   // "request 1 at step 4 in model(...): 335 vs 1 (baseline logits ...)"
  std::string sampled;      // a sampled flip: "baseline probabilities 0.4 vs 0.3 (margin 0.1)"
  std::string first_op;     // "step 0, layer 0, op down"
};
// nullopt for other ops and for a skipped backend.
std::optional<TokenLevelResult> token_level_result(const AuditResult& r, const BackendOutcome& b);

// The command whose result this is, for titles and closing lines: "probe" (nvdet probe's, which
// carries its server) or "audit".
std::string command_name(const AuditResult& r);

// "1 divergence" / "3 divergences".
std::string plural(int64_t n, const std::string& singular, const std::string& plural_form);

}  // namespace nvdet::report_text
