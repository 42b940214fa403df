// CPU-only builds (NVDET_CUDA=OFF, or no nvcc): the GPU backends are listed, but asking for one
// is a runtime failure with a sentence that says why.
#include "lib/core/error.h"
#include "lib/cuda/cuda_backend_infos.h"

namespace nvdet {

std::vector<BackendRegistration> cuda_backend_registrations() {
  std::vector<BackendRegistration> out;
  for (const BackendInfo& info : cuda_backend_infos()) {
    out.push_back({info, [name = info.name]() -> std::unique_ptr<Backend> {
                     throw_runtime_error("backend '" + name +
                                         "' needs a GPU, but this nvdet was built without CUDA "
                                         "(configure with -DNVDET_CUDA=ON)");
                   }});
  }
  return out;
}

}  // namespace nvdet
