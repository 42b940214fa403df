#pragma once
// A hand-built audit result for the report writer tests: a GEMM batch sweep (batch 1..8, 16, 32 ×
// position first/last, repeat 2) over four backends chosen to exercise every branch of the writers:
// - cpu-variant (variant): request 0 changes at position=first, batch 5..8, 16 (split_k 1 -> 4)
//   and at position=last, batch 2, 32 (split_k 1 -> 2): passes, 3 distinct results;
// - cpu-invariant (invariant): request 7 differs at batch=3, position=last with an inf/NaN first
//   mismatch and a NaN max |diff|: fails;
// - cpu-canary (variant): never differs: fails;
// - cpu-reference (report): one run-to-run divergence of request 0: recorded, never fails.
// Text fields carry characters that must be escaped (<, &, ", |).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "lib/runner/audit_result.h"
#include "lib/runner/result_classes.h"

namespace nvdet::testing {

inline const std::vector<std::string>& sample_batches() {
  static const std::vector<std::string> v = {"1", "2", "3", "4", "5", "6", "7", "8", "16", "32"};
  return v;
}

// Puts a context into the result's table (ascending index, as the audit keeps it) and returns
// it; a context already there is returned as it is.
inline Context& add_sample_context(AuditResult& r, int index, const std::string& id,
                                   std::vector<std::pair<std::string, AxisValue>> values,
                                   const std::string& group = "") {
  auto it = std::lower_bound(r.contexts.begin(), r.contexts.end(), index,
                             [](const Context& c, int i) { return c.index < i; });
  if (it != r.contexts.end() && it->index == index) return *it;
  Context c;
  c.index = index;
  c.id = id;
  c.values = std::move(values);
  c.group = group;
  return *r.contexts.insert(it, std::move(c));
}

inline std::string sample_context_id(const std::string& batch, const std::string& position) {
  return "gemm(batch=" + batch + ",position=" + position + ")";
}

// The sweep index of a context: batches in order, each at position first then last.
inline int sample_context_index(const std::string& batch, const std::string& position) {
  const auto& b = sample_batches();
  const int at = static_cast<int>(std::find(b.begin(), b.end(), batch) - b.begin());
  return 2 * at + (position == "last" ? 1 : 0);
}

inline AuditResult make_sample_audit_result() {
  AuditResult r;
  ScenarioSummary& s = r.scenario;
  s.name = "gemm-batch-sweep";
  s.path = "scenarios/gemm.yaml";
  s.description = "Row 0 of A*W^T <script>alert(1)</script> & friends | pipes";
  s.op = "gemm";
  s.dtype = "bf16";
  s.out_dtype = "bf16";
  s.seed = 1234;
  s.requests = {0, 7};
  s.repeat = 2;
  s.axes = {{"batch", sample_batches()}, {"position", {"first", "last"}}};
  s.coord_names = {"token", "col"};

  SystemInfo& sys = r.system;
  sys.nvdet_version = "0.1.0";
  sys.host = "Test CPU (2 cores)";
  sys.cuda_built = true;
  sys.compiled_architectures = "80-real;90a-real";
  sys.cuda_fp_flags = "-fmad=true";
  sys.cxx_fp_flags = "-ffp-contract=off -fno-fast-math";
  sys.driver_version = "580.82";
  sys.cuda_runtime_version = "13.0";
  sys.cublas_version = "13.1.0";
  sys.gpus.push_back({0, "NVIDIA H200", 132, "9.0", size_t{150} << 30, size_t{60} << 20});

  auto backend = [](std::string name, Expectation e, bool passed, int divergent, int r2r,
                    int distinct, std::string verdict) {
    BackendOutcome b;
    b.name = std::move(name);
    b.description = "test backend " + b.name;
    b.expect = e;
    b.passed = passed;
    b.contexts_run = 20;
    b.divergent_contexts = divergent;
    b.run_to_run_divergences = r2r;
    b.max_distinct_results = distinct;
    b.verdict = std::move(verdict);
    return b;
  };
  r.backends.push_back(backend("cpu-variant", Expectation::kVariant, true, 7, 0, 3,
                               "varies as expected: 7 of 20 contexts differ"));
  r.backends.push_back(backend("cpu-invariant", Expectation::kInvariant, false, 1, 0, 2,
                               "request 7 differs at 1 context (a < b & \"quoted\")"));
  r.backends.push_back(backend("cpu-canary", Expectation::kVariant, false, 0, 0, 1,
                               "expected variation, found none"));
  r.backends.push_back(backend("cpu-reference", Expectation::kReport, true, 0, 1, 1,
                               "recorded: 1 run-to-run divergence"));
  r.backends[0].stands_for["gemm"] = "cuBLAS split-K heuristic";

  const Hash128 base0{0x1111111111111111ull, 0x0000000000000000ull};
  const Hash128 first_split{0x2222222222222222ull, 0x0000000000000001ull};
  const Hash128 last_split{0x3333333333333333ull, 0x0000000000000002ull};
  const Hash128 base7{0x7777777777777777ull, 0x0000000000000007ull};
  const Hash128 odd7{0x8888888888888888ull, 0x0000000000000008ull};
  const Hash128 r2r{0x9999999999999999ull, 0x0000000000000009ull};

  auto variant_split = [](const std::string& batch, const std::string& position) -> int {
    if (position == "first" &&
        (batch == "5" || batch == "6" || batch == "7" || batch == "8" || batch == "16"))
      return 4;
    if (position == "last" && (batch == "2" || batch == "32")) return 2;
    return 1;
  };

  int index = 0;
  for (const std::string& batch : sample_batches()) {
    for (const std::string position : {"first", "last"}) {
      const std::string id = sample_context_id(batch, position);
      add_sample_context(r, index, id,
                         {{"batch", int64_t{std::stoll(batch)}}, {"position", position}});
      for (const BackendOutcome& b : r.backends) {
        for (int repeat = 0; repeat < 2; ++repeat) {
          CaseRecord c;
          c.backend = b.name;
          c.context_index = index;
          c.repeat = repeat;
          c.seconds = 0.25;
          Hash128 h0 = base0, h7 = base7;
          if (b.name == "cpu-variant") {
            const int split = variant_split(batch, position);
            c.notes = {{"split_k", std::to_string(split)}, {"tile", "64x64"}};
            if (split == 4) h0 = first_split;
            if (split == 2) h0 = last_split;
          }
          if (b.name == "cpu-invariant" && id == sample_context_id("3", "last")) h7 = odd7;
          if (b.name == "cpu-reference" && id == sample_context_id("4", "first") && repeat == 1)
            h0 = r2r;
          RequestRecord q0{0, h0, {h0, Hash128{h0.high, h0.low + 100}}, {}};
          RequestRecord q7{7, h7, {h7, Hash128{h7.high, h7.low + 100}}, {}};
          if (b.name == "cpu-reference") q7.completion = {11, 12, 13};
          c.requests = {q0, q7};
          r.cases.push_back(c);
        }
      }
      ++index;
    }
  }

  const std::string baseline = sample_context_id("1", "first");
  for (const std::string& batch : sample_batches()) {
    for (const std::string position : {"first", "last"}) {
      const int split = variant_split(batch, position);
      if (split == 1) continue;
      Divergence d;
      d.backend = "cpu-variant";
      d.kind = DivergenceKind::kContext;
      d.request = 0;
      d.token = 0;
      d.baseline_context = baseline;
      d.context = sample_context_id(batch, position);
      d.baseline_context_index = sample_context_index("1", "first");
      d.context_index = sample_context_index(batch, position);
      d.first_mismatch = {17, {0, 17}, 1.5, 1.5078125, "0x3fc0", "0x3fc1", 1};
      d.max_abs_diff = 0.0078125;
      d.max_rel_diff = 0.005;
      d.mismatch_count = 12;
      d.mismatched_tokens = 1;
      d.tokens = 2;
      d.baseline_notes = {{"split_k", "1"}, {"tile", "64x64"}};
      d.notes = {{"split_k", std::to_string(split)}, {"tile", "64x64"}};
      r.divergences.push_back(d);
    }
  }
  {
    Divergence d;
    d.backend = "cpu-invariant";
    d.kind = DivergenceKind::kContext;
    d.request = 7;
    d.token = 1;
    d.baseline_context = baseline;
    d.context = sample_context_id("3", "last");
    d.baseline_context_index = sample_context_index("1", "first");
    d.context_index = sample_context_index("3", "last");
    d.first_mismatch = {4101,
                        {1, 5},
                        std::numeric_limits<double>::infinity(),
                        std::numeric_limits<double>::quiet_NaN(),
                        "0x7f80",
                        "0x7fc0",
                        std::numeric_limits<uint64_t>::max()};
    d.max_abs_diff = std::numeric_limits<double>::quiet_NaN();
    d.max_rel_diff = std::numeric_limits<double>::infinity();
    d.mismatch_count = 1;
    d.mismatched_tokens = 1;
    d.tokens = 2;
    r.divergences.push_back(d);
  }
  {
    Divergence d;
    d.backend = "cpu-reference";
    d.kind = DivergenceKind::kRunToRun;
    d.request = 0;
    d.token = 1;
    d.baseline_context = sample_context_id("4", "first");
    d.context = sample_context_id("4", "first");
    d.baseline_context_index = d.context_index = sample_context_index("4", "first");
    d.repeat = 1;
    d.first_mismatch = {4097, {1, 1}, -0.25, -0.2490234375, "0xbe80", "0xbe7f", 1};
    d.max_abs_diff = 0.0009765625;
    d.max_rel_diff = 0.00390625;
    d.mismatch_count = 3;
    d.mismatched_tokens = 1;
    d.tokens = 2;
    r.divergences.push_back(d);
  }

  r.summary.passed = false;
  r.summary.backends = 4;
  r.summary.contexts = 20;
  r.summary.cases = static_cast<int>(r.cases.size());
  r.summary.divergences = static_cast<int>(r.divergences.size());
  r.summary.failed_backends = 2;
  r.summary.seconds = 40.0;
  assign_result_classes(r);
  return r;
}

}  // namespace nvdet::testing
