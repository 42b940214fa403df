// Builds without cuDNN's or cudnn-frontend's headers: the backend is listed, and asking for it
// is a runtime failure that says why (see cmake/cudnn.cmake).
#include "lib/core/error.h"
#include "lib/cudnn/cudnn_backend.h"

namespace nvdet::cudnn {

std::string cudnn_unavailable_reason() {
  return std::string("this nvdet was built without the cudnn backend: ") +
         NVDET_CUDNN_UNAVAILABLE_REASON;
}

std::unique_ptr<Backend> make_cudnn_backend(const BackendInfo& /*info*/) {
  throw_runtime_error("backend 'cudnn' is unavailable: " + cudnn_unavailable_reason());
}

}  // namespace nvdet::cudnn
