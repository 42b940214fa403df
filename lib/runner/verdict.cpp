#include "lib/runner/verdict.h"

#include <fmt/format.h>

#include <limits>

namespace nvdet {

std::string describe_first_mismatch(const Divergence& d,
                                    const std::vector<std::string>& coord_names) {
  const FirstMismatch& f = d.first_mismatch;
  std::string coords;
  for (size_t i = 0; i < f.coords.size(); ++i) {
    const std::string name = i < coord_names.size() ? coord_names[i] : fmt::format("d{}", i);
    coords += fmt::format("{}{}={}", i ? ", " : "", name, f.coords[i]);
  }
  const std::string ulp = f.ulp == std::numeric_limits<uint64_t>::max()
                              ? std::string("NaN involved")
                              : fmt::format("{} ulp", f.ulp);
  return fmt::format("request {}, token {}, element ({}): {:.9g} vs {:.9g} (bits {} vs {}, {})",
                     d.request, d.token, coords, f.a, f.b, f.a_bits, f.b_bits, ulp);
}

std::string describe_op_location(int32_t step, int32_t layer, std::string_view op) {
  if (layer < 0) return fmt::format("step {}, op {}", step, op);
  return fmt::format("step {}, layer {}, op {}", step, layer, op);
}

void decide_verdict(BackendOutcome& o, const std::optional<Divergence>& first, bool partial) {
  const bool diverged = o.divergent_contexts > 0 || o.run_to_run_divergences > 0;
  const std::string where =
      first ? fmt::format("; first at {} ({})", first->context,
                          first->kind == DivergenceKind::kRunToRun
                              ? "run-to-run, repeat " + std::to_string(first->repeat)
                              : "vs " + first->baseline_context)
            : std::string();
  const std::string extent = fmt::format(
      "{} of {} contexts differ from the baseline, up to {} distinct results per request{}",
      o.divergent_contexts, o.contexts_run, o.max_distinct_results,
      o.run_to_run_divergences
          ? fmt::format(", {} run-to-run differences", o.run_to_run_divergences)
          : std::string());
  switch (o.expect) {
    case Expectation::kInvariant:
      o.passed = !diverged;
      o.verdict = o.passed ? fmt::format("held: all {} contexts bitwise identical to the baseline",
                                         o.contexts_run)
                           : fmt::format("expected invariant, but {}{}", extent, where);
      break;
    case Expectation::kVariant:
      if (partial && !diverged) {
        o.passed = true;
        o.verdict = fmt::format(
            "no divergence in this shard's {} contexts (the merged shards "
            "decide the expectation)",
            o.contexts_run);
        break;
      }
      o.passed = diverged;
      o.verdict = o.passed ? fmt::format("diverged as expected: {}{}", extent, where)
                           : fmt::format(
                                 "expected to diverge, but all {} contexts were bitwise "
                                 "identical: this sweep cannot see variation",
                                 o.contexts_run);
      break;
    case Expectation::kReport:
      o.passed = true;
      o.verdict = diverged
                      ? fmt::format("recorded: {}{}", extent, where)
                      : fmt::format("recorded: all {} contexts bitwise identical", o.contexts_run);
      break;
  }
}

}  // namespace nvdet
