// Entry point of the GPU test binary: says once why everything is skipped when there is no GPU.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/test_support.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!nvdet::testing::gpu_available()) {
    std::fprintf(stderr, "nvdet GPU tests: no CUDA device (or a CPU-only build); skipping\n");
  }
  return RUN_ALL_TESTS();
}
