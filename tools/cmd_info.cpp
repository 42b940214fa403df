// nvdet info: the machine, the GPUs, CUDA, cuBLAS, compiled architectures and backends.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "lib/backend/backend.h"
#include "lib/core/error.h"
#include "lib/core/system_info.h"
#include "lib/core/text_excerpt.h"
#include "lib/report/system_info_json.h"
#include "tools/command.h"
#if NVDET_WITH_CUDA
#include "lib/cuda/kernel_paths.h"
#endif

namespace nvdet::cli {

Action add_info_command(CLI::App& app) {
  auto format = std::make_shared<std::string>("text");
  CLI::App* cmd =
      app.add_subcommand("info", "Show devices, driver, CUDA, cuBLAS, architectures and backends");
  cmd->add_option("--format", *format,
                  "text or json (the audit report's \"device\" object, "
                  "plus the backends)")
      ->capture_default_str();
  return [format] {
    if (*format != "text" && *format != "json") {
      throw_input_error("unknown --format '" + excerpt(*format) + "' (text or json)");
    }
    const SystemInfo s = collect_system_info();
    if (*format == "json") {
      auto j = system_info_json<nlohmann::ordered_json>(s);
      nlohmann::ordered_json backends = nlohmann::ordered_json::array();
      // Which backends this machine can run, and why not (the support table is nvdet list's).
      nlohmann::ordered_json available = nlohmann::ordered_json::object();
      const DeviceFacts device = device_facts();
      for (const BackendRegistration& r : backend_registry()) {
        backends.push_back(r.info.name);
        nlohmann::ordered_json row = backend_support_json(r, device);
        row.erase("supports");
        available[r.info.name] = row;
      }
      j["backends"] = backends;
      j["backend_availability"] = available;
      nlohmann::ordered_json host_paths = nlohmann::ordered_json::object();
      for (const BackendRegistration& r : backend_registry()) {
        if (!r.info.gpu) host_paths[r.info.name] = r.kernel_path();
      }
      j["backend_paths_host"] = host_paths;
#if NVDET_WITH_CUDA
      // The same facts as the text form's kernel-image and path lines, so that a script can
      // tell which code each GPU backend ran (JIT-compiled PTX on a GPU newer than the build).
      if (!s.gpus.empty()) {
        j["kernel_image_gpu0"] = cuda::kernel_image_description(s.compiled_architectures);
        nlohmann::ordered_json paths = nlohmann::ordered_json::object();
        for (const BackendRegistration& r : backend_registry()) {
          if (r.info.gpu) paths[r.info.name] = r.kernel_path();
        }
        j["backend_paths_gpu0"] = paths;
      }
#endif
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    fmt::print("nvdet {}\n", s.nvdet_version);
    fmt::print("host: {}\n", s.host);
    fmt::print("host floating-point flags: {}\n", s.cxx_fp_flags);
    if (!s.cuda_built) {
      fmt::print("CUDA: not built (CPU backends only)\n");
    } else {
      fmt::print("CUDA: built for {} with {}\n", s.compiled_architectures, s.cuda_fp_flags);
      fmt::print("driver: {}  runtime: {}  cuBLAS: {}\n",
                 s.driver_version.empty() ? "none" : s.driver_version, s.cuda_runtime_version,
                 s.cublas_version);
      for (const GpuInfo& g : s.gpus) {
        fmt::print("GPU {}: {}, compute capability {}, {} SMs, {:.1f} GiB, L2 {} MiB\n", g.index,
                   g.name, g.compute_capability, g.sm_count,
                   static_cast<double>(g.memory_bytes) / (1 << 30), g.l2_bytes >> 20);
      }
    }
    if (s.gpus.empty()) fmt::print("GPUs: none ({})\n", s.device_error);
#if NVDET_WITH_CUDA
    if (!s.gpus.empty()) {
      fmt::print("kernel image on GPU 0: {}\n",
                 cuda::kernel_image_description(s.compiled_architectures));
      for (const BackendRegistration& r : backend_registry()) {
        if (r.info.gpu) fmt::print("path of {} on GPU 0: {}\n", r.info.name, r.kernel_path());
      }
    }
#endif
    for (const BackendRegistration& r : backend_registry()) {
      if (!r.info.gpu) fmt::print("path of {} on the host: {}\n", r.info.name, r.kernel_path());
    }
    // Every backend of the build, and whether this machine can run it (a GPU backend without a
    // GPU is listed, marked unavailable with the reason, as `--format json` says).
    fmt::print("backends:\n");
    const DeviceFacts device = device_facts();
    for (const BackendRegistration& r : backend_registry()) {
      const nlohmann::ordered_json row = backend_support_json(r, device);
      fmt::print("  {:<20} {}\n", r.info.name,
                 row.at("available").get<bool>()
                     ? std::string("available")
                     : "unavailable: " + row.at("unavailable_reason").get<std::string>());
    }
    return 0;
  };
}

}  // namespace nvdet::cli
