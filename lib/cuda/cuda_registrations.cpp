#include "lib/cuda/cuda_backend_infos.h"
#include "lib/cuda/cuda_ops.h"

namespace nvdet {
namespace cuda {
std::unique_ptr<Backend> make_cuda_backend(const BackendInfo& info, CudaFlavor flavor);
std::unique_ptr<Backend> make_portable_backend(const BackendInfo& info);
}

std::vector<BackendRegistration> cuda_backend_registrations() {
  std::vector<BackendRegistration> out;
  for (const BackendInfo& info : cuda_backend_infos()) {
    cuda::CudaFlavor flavor = cuda::CudaFlavor::kInvariant;
    if (info.name == "cublas") flavor = cuda::CudaFlavor::kCublas;
    if (info.name == "cublaslt-nosplit") flavor = cuda::CudaFlavor::kCublasLtNoSplit;
    if (info.name == "cuda-vendor-policy") flavor = cuda::CudaFlavor::kVendorPolicy;
    if (info.name == "cublaslt-ws1k") flavor = cuda::CudaFlavor::kCublasLtSmallWorkspace;
    if (info.name == "cuda-portable") {
      out.push_back({info, [info] { return cuda::make_portable_backend(info); }});
      continue;
    }
    out.push_back({info, [info, flavor] { return cuda::make_cuda_backend(info, flavor); }});
  }
  return out;
}

}  // namespace nvdet
