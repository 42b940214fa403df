// Every GPU backend (each CUDA flavor, cuda-portable, cublas-grouped, cudnn) computes each op and
// dtype its registry record claims on this GPU (tests/backend_claims.h). Skipped without a device.
#include "tests/backend_claims.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

TEST(GpuBackendClaims, EachGpuBackendComputesWhatItsSupportTableClaims) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const DeviceFacts device = device_facts();
  for (const BackendRegistration& r : backend_registry()) {
    if (!r.info.gpu) continue;
    SCOPED_TRACE(r.info.name);
    // A backend this machine cannot run (cudnn without cuDNN) claims nothing here: every answer
    // is kUnsupportedDevice, and none runs.
    expect_backend_computes_its_claims(r, device);
  }
}

}  // namespace
}  // namespace nvdet::testing
