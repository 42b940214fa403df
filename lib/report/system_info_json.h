#pragma once
// The device and software facts as JSON, shared by the audit report ("device") and the manifest
// ("system"), so that both always carry the same fields. A template because the report uses
// nlohmann::json and the manifest nlohmann::ordered_json.
#include <cstdint>

#include "lib/core/system_info.h"

namespace nvdet {

template <class Json>
Json system_info_json(const SystemInfo& s) {
  Json gpus = Json::array();
  for (const GpuInfo& g : s.gpus) {
    gpus.push_back({{"index", g.index},
                    {"name", g.name},
                    {"sm_count", g.sm_count},
                    {"compute_capability", g.compute_capability},
                    {"memory_bytes", static_cast<uint64_t>(g.memory_bytes)},
                    {"l2_bytes", static_cast<uint64_t>(g.l2_bytes)}});
  }
  return {{"nvdet_version", s.nvdet_version},
          {"host", s.host},
          {"cuda_built", s.cuda_built},
          {"compiled_architectures", s.compiled_architectures},
          {"cuda_fp_flags", s.cuda_fp_flags},
          {"cxx_fp_flags", s.cxx_fp_flags},
          {"driver_version", s.driver_version},
          {"cuda_runtime_version", s.cuda_runtime_version},
          {"cublas_version", s.cublas_version},
          {"device_error", s.device_error},
          {"gpus", gpus}};
}

}  // namespace nvdet
