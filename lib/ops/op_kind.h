#pragma once
// Every op nvdet knows: the ops a backend computes (one OpArgs alternative each, op_args.h) and
// kModel, a decoder that calls them, and kProbe, a server that nvdet only talks to. Each has one
// record in the op table (lib/loader/op_table.h), which says everything else about it: its keys,
// workload and memory estimate (its sweep axes: the axis table, lib/scenario/axis.h).
#include <string_view>

namespace nvdet {

enum class OpKind {
  kGemm,
  kRmsNorm,
  kLogSoftmax,
  kAttentionDecode,
  kAttentionPrefill,
  kMoe,
  kModel,
  kProbe,  // a running server probed through its HTTP API (nvdet probe): no backend computes it
};
inline constexpr int kOpKindCount = static_cast<int>(OpKind::kProbe) + 1;

std::string_view op_name(
    OpKind op);  // "gemm", "rmsnorm", "log_softmax", ..., "moe", "model", "probe"

}  // namespace nvdet
