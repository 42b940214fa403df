// The FP8 GEMM of the cublas backend: cuBLASLt's FP8 matmul with one scale per operand.
//
// The activations are quantised on the host by the scheme's rule (lib/ops/fp8_quant.h, the same
// function the CPU backends call), so the codes and the scale are the CPU's bit for bit; the
// weight's codes and scale are the workload's. cuBLASLt then computes, in its column-major terms,
// D[n, m] = scale_w * scale_a * (W_codes^T[n, k] · A_codes[k, m]) (+ bias[n]), the weight as the
// transposed first operand and the activations as the second (the TN layout its FP8 kernels
// need), D in fp32, then the bias and one rounding to the output dtype. `accumulation: fast` sets
// CUBLASLT_MATMUL_DESC_FAST_ACCUM: the tensor cores' own reduced-precision accumulator, never
// promoted to fp32; `promoted` leaves it off, and cuBLASLt promotes its partial sums to fp32 at an
// interval of its own choosing (not necessarily the CPU's 128-wide K groups, so the two agree
// within the tolerance of the tests, not bitwise). The heuristic's choice is in the notes, as for
// the 16-bit GEMM.
#include <cstring>
#include <string>

#include "kernels/gemm_invariant.cuh"
#include "lib/core/error.h"
#include "lib/cuda/cublaslt_handles.h"
#include "lib/cuda/cuda_ops.h"
#include "lib/cuda/elem_type.h"

namespace nvdet::cuda {
namespace {

constexpr size_t kFp8WorkspaceBytes = size_t{32} << 20;

cudaDataType_t fp8_data_type(Fp8Format f) {
  return f == Fp8Format::kE4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2;
}

// cuBLASLt's FP8 kernels read 16-byte-aligned columns: K (the codes' leading dimension) a multiple
// of 16, and the fp32 product's leading dimension (n elements) a multiple of 16 bytes.
void check_fp8_shape(int64_t m, int64_t n, int64_t k) {
  if (k % 16 != 0) {
    throw_input_error("backend 'cublas': cuBLASLt's FP8 GEMM needs k a multiple of 16, got k = " +
                      std::to_string(k));
  }
  if (n % 4 != 0) {
    throw_input_error("backend 'cublas': cuBLASLt's FP8 GEMM needs n a multiple of 4, got n = " +
                      std::to_string(n));
  }
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) {
    throw_input_error("gemm: dimensions beyond 2^31 - 1 are not supported on the GPU");
  }
}

}  // namespace

PreparedCall prepare_fp8_gemm(DeviceContext& ctx, CudaFlavor flavor, const GemmArgs& args,
                              RunNotes* notes) {
  if (flavor == CudaFlavor::kInvariant) return prepare_invariant_fp8_gemm(ctx, args, notes);
  const Fp8Scheme& scheme = args.fp8;
  // The registry refuses these before a run (cublas_fp8_refusal); a direct caller gets the same
  // sentence.
  const std::string refusal =
      flavor == CudaFlavor::kCublas
          ? cublas_fp8_refusal(OpKind::kGemm, scheme)
          : "does not compute FP8 (cublas calls cuBLASLt's FP8 GEMM, cuda-invariant nvdet's)";
  if (!refusal.empty()) throw_input_error("this CUDA backend " + refusal);
  const Fp8Weight& w = *args.fp8_w;
  const int64_t m = args.a->dim(0), k = args.a->dim(1), n = w.rows;
  if (w.cols != k) {
    throw_input_error("gemm: the FP8 weight has " + std::to_string(w.cols) +
                      " columns, the activations " + std::to_string(k));
  }
  const DType out = args.out_dtype;
  check_fp8_shape(m, n, k);

  const Fp8Activations qa = quantize_activations(*args.a, scheme);
  if (qa.scales.size() != 1 || w.scales.size() != 1) {
    throw_runtime_error("the cublas FP8 GEMM got a scale per row or block; it takes one each");
  }
  PreparedCall call;
  call.out_dtype = out;
  call.out_shape = {m, n};
  call.owned.push_back(ctx.upload_array(qa.codes.data(), qa.codes.size()));
  const void* a_codes = call.owned.back().get();
  call.owned.push_back(ctx.upload_array(w.codes.data(), w.codes.size()));
  const void* w_codes = call.owned.back().get();
  // One allocation per scale: cuBLASLt refuses (CUBLAS_STATUS_NOT_SUPPORTED, at the launch) a
  // scale pointer 4 bytes into an allocation (seen on an H200 with cuBLAS 13.1).
  call.owned.push_back(ctx.upload_array(&w.scales[0], sizeof(float)));
  const float* w_scale = static_cast<const float*>(call.owned.back().get());
  call.owned.push_back(ctx.upload_array(&qa.scales[0], sizeof(float)));
  const float* a_scale = static_cast<const float*>(call.owned.back().get());
  // cuBLASLt writes the scaled product in fp32; one pass then adds the bias in full precision
  // and rounds once to the output dtype, as the CPU backends do. (cuBLASLt's own bias epilogue
  // on the FP8 path gave sums off by about a tenth of sum |a w| on the H200.)
  call.owned.emplace_back(static_cast<size_t>(m * n) * sizeof(float));
  float* d_ptr = static_cast<float*>(call.owned.back().get());
  call.owned.emplace_back(static_cast<size_t>(m * n) * dtype_size(out));
  void* out_ptr = call.owned.back().get();
  call.output = out_ptr;
  const void* bias_ptr = nullptr;
  if (args.bias) {
    call.owned.push_back(ctx.upload_array(args.bias->data(), args.bias->nbytes()));
    bias_ptr = call.owned.back().get();
  }
  const kernels::GemmType bias_type = elem_type(args.bias ? args.bias->dtype() : DType::kFP32);
  const kernels::GemmType out_type = elem_type(out);

  cublasLtMatmulDesc_t raw_desc = nullptr;
  check(cublasLtMatmulDescCreate(&raw_desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
        "cublasLtMatmulDescCreate");
  const LtDesc desc(raw_desc, LtDeleter{});
  set_desc(desc.get(), CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T, "setting TRANSA");
  set_desc(desc.get(), CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N, "setting TRANSB");
  set_desc(desc.get(), CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, w_scale, "setting the weight's scale");
  set_desc(desc.get(), CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, a_scale,
           "setting the activations' scale");
  const int8_t fast = scheme.accumulation == Fp8Accumulation::kFast ? 1 : 0;
  set_desc(desc.get(), CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast, "setting fast accumulation");
  const LtLayout w_layout = make_layout(fp8_data_type(w.format), k, n, k);  // op T -> n x k
  const LtLayout a_layout = make_layout(fp8_data_type(scheme.format), k, m, k);
  const LtLayout d_layout = make_layout(CUDA_R_32F, n, m, n);

  cublasLtMatmulPreference_t raw_pref = nullptr;
  check(cublasLtMatmulPreferenceCreate(&raw_pref), "cublasLtMatmulPreferenceCreate");
  const LtPref pref(raw_pref);
  const uint64_t max_ws = kFp8WorkspaceBytes;
  check(cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &max_ws, sizeof(max_ws)),
        "setting the workspace limit");
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  check(cublasLtMatmulAlgoGetHeuristic(ctx.cublas_lt(), desc.get(), w_layout.get(), a_layout.get(),
                                       d_layout.get(), d_layout.get(), pref.get(), 1, &heuristic,
                                       &found),
        "cublasLtMatmulAlgoGetHeuristic (FP8)");
  if (found == 0) {
    throw_runtime_error(
        "cuBLASLt has no FP8 algorithm for this GEMM on this GPU (m=" + std::to_string(m) +
        ", n=" + std::to_string(n) + ", k=" + std::to_string(k) + ", " + fp8_scheme_text(scheme) +
        "); its FP8 kernels need compute capability 8.9 or newer");
  }
  if (notes) {
    describe_lt_algo(heuristic, *notes);
    (*notes)["kernel"] = "cublasLt fp8";
    (*notes)["fp8"] = fp8_scheme_text(scheme);
    (*notes)["fp8_quantisation"] = "activations on the host (the CPU backends' codes and scale)";
    (*notes)["fast_accum"] = fast ? "on" : "off";
    (*notes)["act_scale_value"] = std::to_string(qa.scales[0]);
  }

  void* workspace = ctx.workspace(kFp8WorkspaceBytes);
  cublasLtHandle_t handle = ctx.cublas_lt();
  const int mi = static_cast<int>(m), ni = static_cast<int>(n);
  call.launch = [=](cudaStream_t stream) -> cudaError_t {
    const float alpha = 1.0f, beta = 0.0f;
    const cudaError_t st = lt_launch_status(
        cublasLtMatmul(handle, desc.get(), &alpha, w_codes, w_layout.get(), a_codes, a_layout.get(),
                       &beta, d_ptr, d_layout.get(), d_ptr, d_layout.get(), &heuristic.algo,
                       workspace, kFp8WorkspaceBytes, stream));
    if (st != cudaSuccess) return st;
    return kernels::gemm_convert_output(d_ptr, bias_ptr, bias_type, out_ptr, out_type, mi, ni,
                                        stream);
  };
  return call;
}

}  // namespace nvdet::cuda
