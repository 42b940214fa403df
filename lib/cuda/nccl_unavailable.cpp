// nccl_all_reduce in a build without NCCL (or without CUDA): it says why it cannot run.
#include "lib/backend/nccl_collective.h"
#include "lib/core/error.h"

namespace nvdet {
namespace {

const char* why() {
#ifdef NVDET_WITH_CUDA
  return "this nvdet was built without NCCL (CMake found no nccl.h and libnccl)";
#else
  return "this nvdet was built without CUDA, so it has no NCCL all-reduce";
#endif
}

}  // namespace

HostTensor nccl_all_reduce(const std::vector<const HostTensor*>& /*ranks*/,
                           const NcclSettings& /*settings*/, RunNotes* /*notes*/) {
  throw_runtime_error(std::string("the 'nccl' all-reduce cannot run: ") + why());
}

int nccl_device_count(std::string* why_not) {
  if (why_not) *why_not = why();
  return 0;
}

}  // namespace nvdet
