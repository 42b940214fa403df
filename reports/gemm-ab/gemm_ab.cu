// A/B timing of the invariant GEMM across commits: built against one tree's kernels/ (NS names
// its namespace), times gemm_invariant_launch like nvdet bench (events around each launch,
// median after warm-up), hot (inputs left in L2) and cold (a 256 MiB write between launches),
// and cuBLAS's GEMM (cublasGemmEx, bf16 in and out, fp32 compute) on the same operands beside it.
// Usage: gemm_ab [config] m,n,k[,pad] ...
//   pad: W's rows pitch k + pad elements apart (default 0), for the effect of W's row stride on L2
//   (a power-of-two stride puts a tile's rows in few of its sets).
#include <cublas_v2.h>
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
  cublasHandle_t blas;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS ||
      cublasSetStream(blas, s) != CUBLAS_STATUS_SUCCESS) {
    std::printf("cuBLAS failed to start\n");
    return 1;
  }
  for (int a = first; a < argc; ++a) {
    int m, n, k, pad = 0;
    if (std::sscanf(argv[a], "%d,%d,%d,%d", &m, &n, &k, &pad) < 3) continue;
    const size_t ldw = size_t(k) + pad;
    __nv_bfloat16 *A, *W, *O;
    CK(cudaMalloc(&A, size_t(m) * k * 2));
    CK(cudaMalloc(&W, size_t(n) * ldw * 2));
    CK(cudaMalloc(&O, size_t(m) * n * 2));
    fill<<<1024, 256>>>(A, size_t(m) * k, 1);
    fill<<<1024, 256>>>(W, size_t(n) * ldw, 2);
    NS::GemmProblem p;
    p.a = A;
    p.w = W;
    p.out = O;
    p.m = m;
    p.n = n;
    p.k = k;
    p.lda = k;
    p.ldw = static_cast<int64_t>(ldw);
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
          "m=%d n=%d k=%d pad=%d config=%d ctas=%d tile=%dx%d stages=%d %s median %.2f us min "
          "%.2f\n",
          m, n, k, pad, plan.config, plan.ctas, plan.tile_m, plan.tile_n, plan.stages,
          cold ? "cold" : "hot ", t.median_us, t.min_us);
      // out^T [n, m] = W [n, k] . A^T in cuBLAS's column-major terms.
      const float alpha = 1.0f, beta = 0.0f;
      const LaunchTimes c = time_launches(
          [&] {
            if (cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, W, CUDA_R_16BF,
                             static_cast<int>(ldw), A, CUDA_R_16BF, k, &beta, O, CUDA_R_16BF, n,
                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS) {
              std::printf("cublasGemmEx failed\n");
              std::exit(1);
            }
          },
          s, cold, scrub_buf, scrub_n, 20, 100);
      std::printf("m=%d n=%d k=%d pad=%d cublas %s median %.2f us min %.2f\n", m, n, k, pad,
                  cold ? "cold" : "hot ", c.median_us, c.min_us);
    }
    cudaFree(A);
    cudaFree(W);
    cudaFree(O);
    if (ws) cudaFree(ws);
  }
  return 0;
}
