// Every CPU backend computes each op and dtype its registry record claims (tests/backend_claims.h);
// the GPU backends' claims are checked by tests/gpu_backend_claims_test.cpp on a GPU.
#include "tests/backend_claims.h"

namespace nvdet::testing {
namespace {

TEST(BackendClaims, EachCpuBackendComputesWhatItsSupportTableClaims) {
  const DeviceFacts device = device_facts();
  int backends = 0;
  for (const BackendRegistration& r : backend_registry()) {
    if (r.info.gpu || r.info.name.rfind("test-", 0) == 0) continue;  // test-only records: theirs
    const int ran = expect_backend_computes_its_claims(r, device);
    EXPECT_GT(ran, 0) << r.info.name << " claims no op it can run here";
    ++backends;
  }
  EXPECT_GE(backends, 4);  // cpu-reference, cpu-invariant, cpu-variant, cpu-portable at least
}

}  // namespace
}  // namespace nvdet::testing
