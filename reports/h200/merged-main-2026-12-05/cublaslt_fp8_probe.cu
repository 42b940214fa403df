// Which cuBLASLt FP8 configurations launch on this GPU (a throwaway probe, not part of nvdet).
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>
static const char* st(cublasStatus_t s) { return cublasGetStatusString(s); }
int run(int m, int n, int k, cudaDataType_t dtype, bool separate_scales, bool bias, int fast) {
  cublasLtHandle_t h;
  cublasLtCreate(&h);
  void *a, *w, *d, *sc, *sc2, *b, *ws;
  cudaMalloc(&a, m * k);
  cudaMalloc(&w, n * k);
  cudaMalloc(&d, m * n * 4);
  cudaMalloc(&sc, 64);
  cudaMalloc(&sc2, 64);
  cudaMalloc(&b, n * 4);
  cudaMalloc(&ws, 32 << 20);
  cudaMemset(a, 0x38, m * k);
  cudaMemset(w, 0x38, n * k);
  float ones[2] = {1.f, 1.f};
  cudaMemcpy(sc, ones, 8, cudaMemcpyHostToDevice);
  cudaMemcpy(sc2, ones, 8, cudaMemcpyHostToDevice);
  const float* ws_p = (const float*)sc;
  const float* as_p = separate_scales ? (const float*)sc2 : ws_p + 1;
  cublasLtMatmulDesc_t desc;
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof nn);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &ws_p, sizeof ws_p);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &as_p, sizeof as_p);
  int8_t f = fast;
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &f, sizeof f);
  if (bias) {
    cublasLtEpilogue_t e = CUBLASLT_EPILOGUE_BIAS;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b);
  }
  cublasLtMatrixLayout_t lw, la, ld, lc;
  cublasLtMatrixLayoutCreate(&lw, CUDA_R_8F_E4M3, k, n, k);
  cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, k, m, k);
  cublasLtMatrixLayoutCreate(&ld, dtype, n, m, n);
  cublasLtMatrixLayoutCreate(&lc, dtype, n, m, n);
  cublasLtMatmulPreference_t p;
  cublasLtMatmulPreferenceCreate(&p);
  uint64_t mx = 32 << 20;
  cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &mx, sizeof mx);
  cublasLtMatmulHeuristicResult_t r;
  int found = 0;
  cublasStatus_t s1 = cublasLtMatmulAlgoGetHeuristic(h, desc, lw, la, lc, ld, p, 1, &r, &found);
  float alpha = 1, beta = 0;
  cublasStatus_t s2 = found ? cublasLtMatmul(h, desc, &alpha, w, lw, a, la, &beta, d, lc, d, ld,
                                             &r.algo, ws, 32 << 20, 0)
                            : CUBLAS_STATUS_NOT_SUPPORTED;
  cudaError_t e = cudaDeviceSynchronize();
  float out = 0;
  cudaMemcpy(&out, d, 4, cudaMemcpyDeviceToHost);
  printf(
      "m=%d n=%d k=%d D=%s sep=%d bias=%d fast=%d: heuristic %s found %d, matmul %s, sync %s, "
      "d[0]=%g (bf16/fp32 bits)\n",
      m, n, k, dtype == CUDA_R_32F ? "fp32" : "bf16", separate_scales, bias, fast, st(s1), found,
      st(s2), cudaGetErrorString(e), out);
  return 0;
}
int main() {
  for (int sep : {0, 1})
    for (cudaDataType_t dt : {CUDA_R_32F, CUDA_R_16BF})
      for (int m : {1, 64}) run(m, 384, 512, dt, sep, false, 0);
  run(64, 384, 512, CUDA_R_16BF, 1, true, 0);
  run(64, 384, 512, CUDA_R_16BF, 1, false, 1);
  run(64, 384, 512, CUDA_R_32F, 1, true, 1);
  return 0;
}
