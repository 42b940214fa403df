#pragma once
// A backend is a set of kernels that computes ops. The audit pipeline sees only this interface:
// it hands a backend an op's arguments and gets the output tensor back.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/core/dtype.h"
#include "lib/ops/op_args.h"

namespace nvdet {

class DeviceDecodeOps;  // lib/backend/device_decode_ops.h

struct BackendInfo {
  std::string name;         // "cpu-reference", "cublas", ...
  std::string description;  // one line for `nvdet list`
  bool gpu = false;
  // What the backend is built to show: true for the invariant kernels (cpu-invariant,
  // cuda-invariant), false for vendor and variant ones. Informational; the scenario's
  // expectation decides pass/fail.
  bool invariant_by_design = false;
  // Which real kernels a vendor-style policy reproduces, per op ("attention_decode" ->
  // "FlashDecoding split-KV heuristic ..."). Shown in reports.
  std::map<std::string, std::string> stands_for;
};

// Facts about one call that explain its result: the algorithm, tile and split-K count cuBLASLt
// chose, the number of KV splits, the block size... Key order is kept for reports.
using RunNotes = std::map<std::string, std::string>;

struct TimingOptions {
  int warmup = 5;
  int repetitions = 20;
  // GPU backends: evict the device's L2 before each timed run, outside the timed region
  // (`nvdet bench --l2 cold`), so that a call's operands come from DRAM rather than from the
  // cache the previous run left them in. Host-timed CPU rows are unaffected.
  bool flush_l2 = false;
  // GPU backends: false queues the timed runs behind a held stream, so that each run's time is
  // the GPU's work alone, as a serving stack's CUDA graphs replay it; true launches each run as
  // the GPU reaches it, so that a call whose host-side launch outlasts its kernels is timed at
  // the host's pace (`nvdet bench --launch-gaps`).
  bool launch_gaps = false;
};

struct Timing {
  double median_us = 0.0;
  double min_us = 0.0;
  int repetitions = 0;
  double max_us = 0.0;  // with min_us: the spread of the timed runs
  // GPU timings: the runs were queued ahead of the device (TimingOptions::launch_gaps false and
  // the call's launch never waited for the device); false: each launched as the GPU reached it.
  bool queued = false;
};

// What the machine offers, as far as a backend's support depends on it. Read once, before any
// backend exists (device_facts()), so that an audit can refuse what cannot run before it starts.
struct DeviceFacts {
  bool cuda_built = false;         // this nvdet was built with CUDA
  bool gpu = false;                // a CUDA device answers
  std::string device_error;        // why none does, when none does
  int cc_major = 0, cc_minor = 0;  // device 0's compute capability, when there is one
};

DeviceFacts device_facts();  // from collect_system_info()

// A backend's answer to "can you compute `op` in `dtype` on this machine?". An op or dtype a
// backend does not implement is the scenario's mistake (exit 2); a machine that lacks what the
// backend needs (a GPU, cuDNN) is a runtime condition (exit 3, or skipped on request).
struct Support {
  enum class Status { kSupported, kUnsupportedOp, kUnsupportedDevice };
  Status status = Status::kSupported;
  std::string reason;  // a clause that follows "backend 'NAME' ", e.g. "needs a GPU; ..."
  bool ok() const { return status == Status::kSupported; }
};

using SupportsFn = std::function<Support(OpKind op, DType dtype, const DeviceFacts& device)>;

// The usual support table: the dtypes each op is computed in, whether a GPU is needed, and any
// further device requirement (returns "" when met, else the clause saying what is missing).
struct SupportTable {
  std::vector<std::pair<OpKind, std::vector<DType>>> ops;
  bool needs_gpu = false;
  std::function<std::string(const DeviceFacts&)> device_requirement;
};
SupportsFn supports_from(SupportTable table);

// Every op in every dtype (the CPU backends and cuda-portable).
std::vector<std::pair<OpKind, std::vector<DType>>> all_ops_all_dtypes();

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const BackendInfo& info() const = 0;

  // Computes the op. `notes`, when given, receives facts about the call (see RunNotes).
  // Throws Error(kBadInput) for arguments it cannot take, Error(kRuntime) for device failures.
  virtual HostTensor run(const OpArgs& args, RunNotes* notes) = 0;

  // GPU backends: the median device time of the op with its inputs already resident, measured
  // with CUDA events after a warm-up. CPU backends return nullopt (nvdet bench is for GPUs).
  virtual std::optional<Timing> time(const OpArgs& /*args*/, const TimingOptions& /*opts*/) {
    return std::nullopt;
  }

  // GPU backends: the device's streaming ceiling, GB/s read + written by a large device-to-device
  // copy timed like time(); memory-bound kernels are reported as a fraction of it. CPU: nullopt.
  virtual std::optional<double> copy_bandwidth_gbps(const TimingOptions& /*opts*/) {
    return std::nullopt;
  }

  // GPU backends whose ops can run on device buffers (lib/backend/device_decode_ops.h): the
  // model decoder then keeps weights, KV cache and activations on the device. Others: null.
  virtual DeviceDecodeOps* device_decode_ops() { return nullptr; }

  // Invariant backends whose GEMM adds fp32 partials of fixed K chunks in chunk order
  // (cpu-invariant): the chunk length for inputs of `dtype` (0: the backend has no such chunks),
  // and the partials themselves, fp32 [chunks, m, n] without the bias, chunk c covering
  // [c * k_chunk, ...). A tensor-parallel plan adds the ranks' partials in global chunk order and
  // gets the unsharded GEMM's bits (lib/workloads/tp_gemm.h). Others throw Error(kBadInput).
  virtual int64_t gemm_k_chunk(DType /*dtype*/) const { return 0; }
  virtual HostTensor gemm_k_chunk_partials(const GemmArgs& args, RunNotes* notes);
};

using BackendFactory = std::function<std::unique_ptr<Backend>()>;

// A backend's answer to "can you compute `op` (gemm, moe or model) with this FP8 scheme?"
// (README "FP8"): "" when it can, else the clause that follows "backend 'NAME' ", naming what it
// does not compute and why, e.g. "does not compute FP8 accumulation 'fast': ...".
using Fp8SupportFn = std::function<std::string(OpKind op, const Fp8Scheme& scheme)>;

// The part a backend plays in `nvdet bench` when --baseline is not given: the ratios are taken
// against the timed backend that is the baseline of the scenario's op, else the timed fallback
// baseline, else the first timed vendor-style backend (neither invariant by design nor a
// correctness reference), else the first timed one.
struct BenchRole {
  std::vector<OpKind> baseline_for;  // the vendor kernel users run for these ops (cudnn: attention)
  bool fallback_baseline = false;    // the baseline of an op whose own is not timed (cublas)
  bool reference = false;            // a correctness reference, never a vendor baseline
};

// A backend is one record: what it is, how to create it, and what it computes where. The
// registry is the only place that knows which backends exist; the CLI, the audit's checks and
// the reports all read it.
struct BackendRegistration {
  BackendInfo info;
  BackendFactory make;  // may throw Error(kRuntime) (e.g. no GPU)
  SupportsFn supports;  // the truth about which ops and dtypes `make`'s backend computes
  // What the backend runs, for `nvdet info`: its kernels and, for a GPU backend, the path they
  // take on device 0 (asked only where a GPU answers). Every record has one.
  std::function<std::string()> kernel_path;
  BenchRole bench;
  // FP8 (README "FP8"): null for a backend that computes no FP8 (every GPU backend but cublas).
  Fp8SupportFn fp8 = {};
};

// All backends known to this build, CPU ones first. GPU backends are listed even in a CPU-only
// build; creating one there throws Error(kRuntime) with a sentence saying so.
const std::vector<BackendRegistration>& backend_registry();
const BackendRegistration* find_backend(std::string_view name);
std::unique_ptr<Backend> make_backend(std::string_view name);  // throws kBadInput if unknown

// Adds a backend to the registry (after the built-in ones). Throws Error(kBadInput) when the name
// is taken or the record lacks a factory, a support table or a kernel-path description. Call it
// before looking backends up: it may move the records that find_backend pointed to.
void register_backend(BackendRegistration registration);

// `name`'s answer for `op` in `dtype` on `device`; kUnsupportedOp when the name is unknown.
Support backend_supports(std::string_view name, OpKind op, DType dtype, const DeviceFacts& device);

// `name`'s refusal of `scheme` for `op` ("" when it computes it): its Fp8SupportFn's clause, or
// that it computes no FP8 at all.
std::string backend_fp8_refusal(std::string_view name, OpKind op, const Fp8Scheme& scheme);

// `nvdet bench`'s baseline among `timed` (registered names, in timing order) for `op` when
// --baseline is not given (BenchRole); "" when `timed` is empty.
std::string default_bench_baseline(OpKind op, const std::vector<std::string>& timed);

// Provided by lib/reference, lib/cuda and lib/cudnn (compiled in every build: a CPU-only nvdet
// lists the GPU backends too); collected by backend_registry(), in this order. The registry is
// below them: it names them through these declarations only, so no folder includes upwards.
std::vector<BackendRegistration> cpu_backend_registrations();
std::vector<BackendRegistration> cuda_backend_registrations();
std::vector<BackendRegistration> cudnn_backend_registrations();

}  // namespace nvdet
