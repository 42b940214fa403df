// The `cudnn` backend without a GPU: it is listed in every build, says why when this build lacks
// it, and (where it is built) reports a cuDNN that cannot be loaded, with the loader's reason,
// as a runtime failure rather than a crash.
#include <gtest/gtest.h>

#include <cstdlib>

#include "lib/backend/backend.h"
#include "lib/core/error.h"
#if NVDET_WITH_CUDNN
#include "lib/cudnn/cudnn_library.h"
#endif

namespace nvdet::testing {
namespace {

TEST(CudnnRegistry, ListedAsAVendorAttentionBackend) {
  const BackendRegistration* r = find_backend("cudnn");
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->info.gpu);
  EXPECT_FALSE(r->info.invariant_by_design);
  EXPECT_EQ(r->info.stands_for.count("attention_decode"), 1u);
  EXPECT_EQ(r->info.stands_for.count("attention_prefill"), 1u);
#if NVDET_WITH_CUDA && !NVDET_WITH_CUDNN
  EXPECT_NE(r->info.description.find("unavailable: this nvdet was built without the cudnn backend"),
            std::string::npos)
      << r->info.description;
#endif
}

TEST(CudnnRegistry, CreatingItWithoutGpuOrCudnnIsARuntimeFailure) {
#if NVDET_WITH_CUDNN
  // Where the backend is built, a cuDNN location that holds no cuDNN must fail to load.
  setenv("NVDET_CUDNN_LIBRARY_PATH", "/nonexistent-nvdet-cudnn-folder", 1);
#endif
  try {
    make_backend("cudnn");
    GTEST_SKIP() << "a GPU and cuDNN are present (the GPU tests cover the backend)";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kRuntime) << e.what();
#if NVDET_WITH_CUDNN
    EXPECT_NE(std::string(e.what()).find("NVDET_CUDNN_LIBRARY_PATH"), std::string::npos)
        << e.what();
#endif
  }
#if NVDET_WITH_CUDNN
  unsetenv("NVDET_CUDNN_LIBRARY_PATH");
#endif
}

#if NVDET_WITH_CUDNN
TEST(CudnnRegistry, ProbeNamesTheMissingLibrary) {
  const std::string why = nvdet::cudnn::probe_cudnn_library("/nonexistent-nvdet-cudnn-folder");
  EXPECT_NE(why.find("/nonexistent-nvdet-cudnn-folder"), std::string::npos) << why;
}
#endif

}  // namespace
}  // namespace nvdet::testing
