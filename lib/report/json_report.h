#pragma once
// The JSON report (DESIGN.md, "The JSON report"): the whole result model, for machines.
//
// Number conventions, fixed by schema_version 1:
// - Doubles that are not finite are written as the strings "nan", "inf" and "-inf" (JSON has no
//   such numbers, and null would lose whether a value overflowed or went NaN, which is exactly
//   what a first mismatch may be about). Every other double is a JSON number that reads back to
//   the same bits.
// - `ulp` is null when the ULP distance is undefined (a NaN on either side).
// - Hashes are 32 lowercase hex digits (XXH3-128, high word first); bit patterns are "0x..."
//   strings zero-padded to the dtype's width.
#include <nlohmann/json.hpp>
#include <string>

#include "lib/compare/compare.h"
#include "lib/runner/audit_result.h"

namespace nvdet {

nlohmann::json audit_to_json(const AuditResult& result);

// {flat_index, coords, a, b, a_bits, b_bits, ulp}: shared with `nvdet diff --format json` so both
// say a first mismatch in the same words.
nlohmann::json first_mismatch_to_json(const FirstMismatch& m);

// A double as JSON under the conventions above.
nlohmann::json json_number(double v);

// audit_to_json, pretty-printed with a trailing newline.
std::string render_json_report(const AuditResult& result);

}  // namespace nvdet
