// A/B timing of the invariant GEMM across commits: built against one tree's kernels/ (NS names
// its namespace), times gemm_invariant_launch like nvdet bench (events around each launch,
// median after warm-up), hot (inputs left in L2) and cold (a 256 MiB write between launches).
// Usage: gemm_ab [config] m,n,k ...
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ab_timing.cuh"
#include "kernels/gemm_invariant.cuh"
#ifndef NS
#define NS nvdet::kernels
#endif
__global__ void fill(__nv_bfloat16* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    unsigned x = unsigned(i) * 2654435761u ^ seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    p[i] = __float2bfloat16((int(x & 0xFFFF) - 32768) / 65536.0f);
  }
}
int main(int argc, char** argv) {
  int config = -1, first = 1;
  if (argc > 1 && std::strchr(argv[1], ',') == nullptr) {
    config = std::atoi(argv[1]);
    first = 2;
  }
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  NS::GemmDevice dev;
  dev.cc_major = prop.major;
  dev.cc_minor = prop.minor;
  dev.sm_count = prop.multiProcessorCount;
  const size_t scrub_n = size_t(64) << 20;
  float* scrub_buf;
  CK(cudaMalloc(&scrub_buf, scrub_n * 4));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  for (int a = first; a < argc; ++a) {
    int m, n, k;
    if (std::sscanf(argv[a], "%d,%d,%d", &m, &n, &k) != 3) continue;
    __nv_bfloat16 *A, *W, *O;
    CK(cudaMalloc(&A, size_t(m) * k * 2));
    CK(cudaMalloc(&W, size_t(n) * k * 2));
    CK(cudaMalloc(&O, size_t(m) * n * 2));
    fill<<<1024, 256>>>(A, size_t(m) * k, 1);
    fill<<<1024, 256>>>(W, size_t(n) * k, 2);
    NS::GemmProblem p;
    p.a = A;
    p.w = W;
    p.out = O;
    p.m = m;
    p.n = n;
    p.k = k;
    p.lda = k;
    p.ldw = k;
    p.ldo = n;
    p.in_type = NS::GemmType::kBF16;
    p.out_type = NS::GemmType::kBF16;
    const NS::GemmPlan plan =
        NS::gemm_invariant_plan(p, dev, NS::GemmSchedule::kAuto, NS::GemmPath::kAuto, config, 0);
    void* ws = nullptr;
    if (plan.workspace_bytes) CK(cudaMalloc(&ws, plan.workspace_bytes));
    for (int cold = 0; cold < 2; ++cold) {
      const LaunchTimes t = time_launches(
          [&] { CK(NS::gemm_invariant_launch(p, plan, ws, plan.workspace_bytes, s)); }, s, cold,
          scrub_buf, scrub_n, 20, 100);
      std::printf(
          "m=%d n=%d k=%d config=%d ctas=%d tile=%dx%d stages=%d %s median %.2f us min %.2f\n", m,
          n, k, plan.config, plan.ctas, plan.tile_m, plan.tile_n, plan.stages,
          cold ? "cold" : "hot ", t.median_us, t.min_us);
    }
    cudaFree(A);
    cudaFree(W);
    cudaFree(O);
    if (ws) cudaFree(ws);
  }
  return 0;
}
