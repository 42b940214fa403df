#pragma once
// The result of checking an audit against a golden manifest (`nvdet audit --verify FILE`): what
// changed in the environment, every request whose hash moved (with its first differing token),
// and the entries recorded but not run or run but not recorded. It is part of the audit result
// (AuditResult::verify) so that every writer states the same verdict as the exit code.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/compare/compare.h"
#include "lib/hash/hash.h"

namespace nvdet {

struct ManifestChange {
  std::string backend, expectation, context;
  int context_index = 0;
  int repeat = 0;
  int64_t request = 0;
  Hash128 recorded, now;
  int64_t first_token = -1;  // first token whose hash differs (-1: token hashes unavailable)
  int64_t tokens_recorded = 0, tokens_now = 0;
  int64_t changed_tokens = 0;  // over the tokens both have
  bool fails = false;          // counts against the verdict (invariant backend, or strict)
  std::optional<TensorComparison> elementwise;  // from the two dumps, when both exist
  std::string dump_note;  // why there is no element-wise detail ("" when there is)
};

struct ManifestEntryRef {
  std::string backend, context;
  int repeat = 0;
  int64_t request = 0;
};

struct VerifyResult {
  std::string manifest;  // the file, as given
  std::string scenario;
  std::vector<std::string> environment;  // "driver 580.95 → 580.159", in a fixed order
  std::vector<ManifestChange> changes;
  std::vector<ManifestEntryRef> missing;           // recorded but not run now
  std::vector<ManifestEntryRef> added;             // run now but not recorded
  std::map<std::string, std::string> recorded_as;  // --verify-as: run backend -> recorded backend
  // --strict: any change, missing or new entry fails. Unknown (nullopt) in reports written
  // before it was recorded.
  std::optional<bool> strict;
  int compared = 0;
  bool passed = true;
  std::string verdict;  // one sentence
};

// Whether a changed hash fails the verification: under strict, for a backend expected
// invariant (its promise extends across machines), or under --verify-as (a claim of equal
// bits).
bool change_fails(const ManifestChange& change, bool strict,
                  const std::map<std::string, std::string>& recorded_as);

// The verification's verdict from its changes (their `fails`), missing and new entries:
// `passed` and the sentence. The manifest's verify and a report read back both decide it here.
void decide_verify_verdict(VerifyResult& v);

}  // namespace nvdet
