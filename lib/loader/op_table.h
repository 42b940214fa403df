#pragma once
// The op table: one record per op, and the only place that says what an op is. The scenario
// loader reads it (op names, shape keys, the keys and sweep axes each op accepts), `nvdet list`
// prints it, the audit asks it which backend ops a scenario needs and how to build its workload,
// the budget check asks it for the memory estimate, and README.md's op table is checked against it
// (tests/op_table_test.cpp). Adding an op: a workload file (factory + footprint), its kernels and
// backend entry points, its tests, and one record in op_table.cpp.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/ops/op_args.h"
#include "lib/scenario/scenario.h"
#include "lib/workloads/footprint.h"
#include "lib/workloads/workload.h"

namespace nvdet {

// One key of the scenario's `shape:` map: an integer 1 .. 2^24 stored in a Scenario field.
struct ShapeKey {
  const char* name;
  int64_t Scenario::*field;
};

struct OpSpec {
  OpKind kind = OpKind::kGemm;  // its name is op_name(kind), the word after `op:`
  std::string description;      // one line, for nvdet list and README.md
  // `shape:` keys, all required; empty: the op takes no `shape:`. shape_hint replaces the
  // default "(expected n, k)" of the loader's message when a key is unknown.
  std::vector<ShapeKey> shape;
  std::string shape_hint;
  // Top-level keys beyond the common ones (name, description, op, dtype, out_dtype, seed,
  // requests, repeat, sweep, backends) that this op accepts; the loader refuses them for others.
  std::vector<std::string> keys;
  // The backend ops its workload calls: a backend must support each (audit start).
  std::vector<OpKind> uses;
  std::unique_ptr<Workload> (*make_workload)(const Scenario&) = nullptr;
  Footprint (*footprint)(const Scenario&) = nullptr;
  // What only the op can check of a scenario (a tp its shapes cannot split, an MoE shape past its
  // limits, a model whose heads a tp does not divide): throws Error(kBadInput) with the place in
  // the file. Null: the loader's checks are all there is.
  void (*check)(const Scenario&) = nullptr;
  // op probe: a running server answers it, through `nvdet probe` (lib/probe/); it has no workload
  // and no backend computes it, so audit, bench and bisect refuse it (select_backends).
  bool server = false;

  std::string_view name() const { return op_name(kind); }
  bool accepts_key(std::string_view key) const;
  // Whether the op takes the sweep axis: the axis table's business (AxisSpec::ops).
  bool accepts_axis(std::string_view axis) const;
};

// Every op, in the order nvdet list shows them; exactly one record per OpKind.
const std::vector<OpSpec>& op_table();
const OpSpec& op_spec(OpKind kind);
const OpSpec* find_op(std::string_view name);  // null when no op has that name

// The names of the ops that accept `key` (or axis), joined for messages: "gemm, rmsnorm and
// log_softmax".
std::string ops_accepting_key(std::string_view key);
std::vector<std::string> ops_accepting_axis(std::string_view axis);

// The op's own checks of a scenario (OpSpec::check): every command runs them for every scenario
// it names before any budget is estimated, context expanded or backend run, so that a shape
// error is exit 2 before an out-of-budget exit 3 and before an earlier scenario's results.
void check_op_scenario(const Scenario& s);
// Refuses a server op's scenario (OpSpec::server) where kernels would run it: Error(kBadInput)
// "scenario 'x' (op probe) probes a running server; run it with nvdet probe".
[[noreturn]] void refuse_server_op(const Scenario& s);

// Builds a scenario's workload (throws Error(kBadInput) for contexts the op cannot take).
std::unique_ptr<Workload> make_workload(const Scenario& s);

}  // namespace nvdet
