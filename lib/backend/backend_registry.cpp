#include <absl/strings/numbers.h>
#include <absl/strings/str_join.h>
#include <absl/strings/str_split.h>

#include <algorithm>

#include "lib/backend/backend.h"
#include "lib/core/error.h"
#include "lib/core/system_info.h"
#include "lib/core/text_excerpt.h"

namespace nvdet {
namespace {

// The registry itself: the built-in backends, then any added by register_backend.
std::vector<BackendRegistration>& registry() {
  static std::vector<BackendRegistration> all = [] {
    std::vector<BackendRegistration> v = cpu_backend_registrations();
    for (auto& r : cuda_backend_registrations()) v.push_back(std::move(r));
    for (auto& r : cudnn_backend_registrations()) v.push_back(std::move(r));
    return v;
  }();
  return all;
}

std::string dtype_list(const std::vector<DType>& dtypes) {
  return absl::StrJoin(dtypes, ", ", [](std::string* out, DType t) { out->append(dtype_name(t)); });
}

}  // namespace

HostTensor Backend::gemm_k_chunk_partials(const GemmArgs& /*args*/, RunNotes* /*notes*/) {
  throw_input_error("backend '" + info().name +
                    "' does not give its GEMM's K-chunk partials (only invariant backends with a "
                    "chunked GEMM do)");
}

DeviceFacts device_facts() {
  const SystemInfo sys = collect_system_info();
  DeviceFacts d;
  d.cuda_built = sys.cuda_built;
  d.gpu = !sys.gpus.empty();
  d.device_error = sys.device_error;
  if (d.gpu) {
    // "9.0" -> 9, 0; a capability that does not parse stays 0.0, which no requirement accepts.
    const std::vector<std::string> parts = absl::StrSplit(sys.gpus.front().compute_capability, '.');
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &d.cc_major) ||
        !absl::SimpleAtoi(parts[1], &d.cc_minor)) {
      d.cc_major = d.cc_minor = 0;
    }
  }
  return d;
}

std::vector<std::pair<OpKind, std::vector<DType>>> all_ops_all_dtypes() {
  const std::vector<DType> all = {DType::kBF16, DType::kFP16, DType::kFP32};
  return {{OpKind::kGemm, all},
          {OpKind::kRmsNorm, all},
          {OpKind::kLogSoftmax, all},
          {OpKind::kAttentionDecode, all},
          {OpKind::kAttentionPrefill, all},
          {OpKind::kMoe, all}};
}

SupportsFn supports_from(SupportTable table) {
  return [t = std::move(table)](OpKind op, DType dtype, const DeviceFacts& device) -> Support {
    using S = Support::Status;
    const auto entry =
        std::find_if(t.ops.begin(), t.ops.end(), [op](const auto& e) { return e.first == op; });
    if (entry == t.ops.end()) {
      const std::string computes = absl::StrJoin(
          t.ops, ", ", [](std::string* out, const auto& e) { out->append(op_name(e.first)); });
      return {S::kUnsupportedOp, "does not compute " + std::string(op_name(op)) + " (it computes " +
                                     computes + " only)"};
    }
    if (std::find(entry->second.begin(), entry->second.end(), dtype) == entry->second.end()) {
      return {S::kUnsupportedOp, "does not compute " + std::string(op_name(op)) + " in " +
                                     std::string(dtype_name(dtype)) + " (only in " +
                                     dtype_list(entry->second) + ")"};
    }
    if (t.needs_gpu && !device.cuda_built) {
      return {S::kUnsupportedDevice, "needs a GPU; this nvdet was built without CUDA"};
    }
    if (t.needs_gpu && !device.gpu) {
      return {
          S::kUnsupportedDevice,
          "needs a GPU; none is available (" +
              (device.device_error.empty() ? std::string("no CUDA device") : device.device_error) +
              ")"};
    }
    if (t.device_requirement) {
      if (std::string missing = t.device_requirement(device); !missing.empty()) {
        return {S::kUnsupportedDevice, std::move(missing)};
      }
    }
    return {};
  };
}

const std::vector<BackendRegistration>& backend_registry() { return registry(); }

const BackendRegistration* find_backend(std::string_view name) {
  for (const auto& r : backend_registry()) {
    if (r.info.name == name) return &r;
  }
  return nullptr;
}

std::unique_ptr<Backend> make_backend(std::string_view name) {
  const BackendRegistration* r = find_backend(name);
  if (!r) {
    const std::string known = absl::StrJoin(
        backend_registry(), ", ",
        [](std::string* out, const BackendRegistration& b) { out->append(b.info.name); });
    throw_input_error("unknown backend '" + excerpt(name) + "' (known: " + known + ")");
  }
  return r->make();
}

void register_backend(BackendRegistration registration) {
  const std::string& name = registration.info.name;
  if (name.empty()) throw_input_error("a backend needs a name");
  if (find_backend(name)) throw_input_error("backend '" + name + "' is already registered");
  if (!registration.make || !registration.supports || !registration.kernel_path) {
    throw_input_error("backend '" + name +
                      "' needs a factory, a support table and a kernel-path description");
  }
  registry().push_back(std::move(registration));
}

std::string default_bench_baseline(OpKind op, const std::vector<std::string>& timed) {
  std::vector<const BackendRegistration*> known;
  for (const std::string& name : timed) {
    if (const BackendRegistration* r = find_backend(name)) known.push_back(r);
  }
  const auto first = [&](auto&& pred) -> std::string {
    for (const BackendRegistration* r : known) {
      if (pred(*r)) return r->info.name;
    }
    return "";
  };
  for (std::string pick :
       {first([op](const BackendRegistration& r) {
          const auto& ops = r.bench.baseline_for;
          return std::find(ops.begin(), ops.end(), op) != ops.end();
        }),
        first([](const BackendRegistration& r) { return r.bench.fallback_baseline; }),
        first([](const BackendRegistration& r) {
          return !r.info.invariant_by_design && !r.bench.reference;
        })}) {
    if (!pick.empty()) return pick;
  }
  return timed.empty() ? "" : timed.front();
}

std::string backend_fp8_refusal(std::string_view name, OpKind op, const Fp8Scheme& scheme) {
  const BackendRegistration* r = find_backend(name);
  if (!r) return "is not a known backend";
  if (!r->fp8) {
    return "does not compute FP8: FP8 GEMMs run on cpu-reference, cpu-invariant, cpu-variant and "
           "cublas only so far";
  }
  return r->fp8(op, scheme);
}

Support backend_supports(std::string_view name, OpKind op, DType dtype, const DeviceFacts& device) {
  const BackendRegistration* r = find_backend(name);
  if (!r) return {Support::Status::kUnsupportedOp, "is not a known backend"};
  return r->supports(op, dtype, device);
}

}  // namespace nvdet
