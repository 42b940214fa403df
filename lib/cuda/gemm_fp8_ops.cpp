// The FP8 GEMM of the cublas backend: cuBLASLt's FP8 matmul with the scale mode that matches
// the scheme (cublas_fp8_refusal says which pairs it takes):
//   static or dynamic_tensor with tensor:   one fp32 scale per operand (SCALAR_32F);
//   dynamic_token with channel:             one scale per row of each operand (OUTER_VEC_32F);
//   group_128 with block_128x128:           one scale per row and 128-wide K group of the
//                                           activations (VEC128_32F) and one per 128 x 128 block
//                                           of the weight (BLK128x128_32F).
// The activations are quantised on the host by the scheme's rule (lib/ops/fp8_quant.h, the same
// function the CPU backends call), so the codes and scales are the CPU's bit for bit; the
// weight's codes and scales are the workload's. cuBLASLt then computes, in its column-major
// terms, D[n, m] = (W_codes^T[n, k] with its scales) · (A_codes[k, m] with theirs), the weight
// as the transposed first operand and the activations as the second (the TN layout its FP8
// kernels need). Without a bias, D is the output dtype and cuBLASLt's epilogue rounds its fp32
// product once, as a serving stack calls it; with one, D is fp32 and one pass adds the bias and
// rounds once (cuBLASLt's own bias epilogue on the FP8 path was off by about a tenth of
// sum |a w| on the H200). Scale layouts (a
// probe on the H200, reports/h200/traffic-fp8-2026-12-05): VEC128 K-group-major (s[g * m + i]),
// BLK128x128 in the checkpoint's order (s[n_block * k_groups + g]).
//
// cuBLASLt's block-scaled kernels did not take every m on the H200 (none at m = 1 or 33, one at
// m = 256): where its heuristic finds no algorithm for m, the activations are padded with zero
// rows (scale 1) to the next multiple of 16, 128 or 256 that it takes, and the notes say so; the
// padded rows are never returned.
//
// `accumulation: fast` sets CUBLASLT_MATMUL_DESC_FAST_ACCUM: the tensor cores' own
// reduced-precision accumulator, never promoted to fp32; `promoted` leaves it off, and cuBLASLt
// promotes its partial sums to fp32 at an interval of its own choosing (not necessarily the CPU's
// 128-wide K groups, so the two agree within the tolerance of the tests, not bitwise). The
// heuristic's choice is in the notes, as for the 16-bit GEMM.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

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

// How cuBLASLt reads the scales of a scheme cublas computes.
enum class LtScales { kTensor, kRows, kBlocks };

LtScales lt_scales(const Fp8Scheme& s) {
  if (s.act_scale == Fp8ActScale::kDynamicToken) return LtScales::kRows;
  if (s.act_scale == Fp8ActScale::kGroup128) return LtScales::kBlocks;
  return LtScales::kTensor;
}

const char* lt_scales_note(LtScales mode) {
  switch (mode) {
    case LtScales::kTensor: return "one scale per operand (SCALAR_32F)";
    case LtScales::kRows: return "one scale per row of each operand (OUTER_VEC_32F)";
    case LtScales::kBlocks:
      return "activations per row and 128-wide K group (VEC128_32F), weight per 128x128 block "
             "(BLK128x128_32F)";
  }
  return "";
}

// The weight's scales in cuBLASLt's layout for `mode`.
std::vector<float> weight_scales(const Fp8Weight& w, LtScales mode) {
  std::vector<float> out;
  if (mode == LtScales::kTensor) return {w.scales.at(0)};
  if (mode == LtScales::kRows) {
    for (int64_t j = 0; j < w.rows; ++j) out.push_back(w.scale(j, 0));
    return out;
  }
  // Blocks: one 128-row grid. Weights stacked from parts whose rows are not multiples of 128
  // keep each part's own scale rows, which no 128-row grid can hold.
  for (int64_t j = 0; j < w.rows; ++j) {
    if (w.scale_row[j] != w.scale_row[j - j % kFp8Group] ||
        (j % kFp8Group == 0 && w.scale_row[j] != j / kFp8Group)) {
      throw_input_error(
          "backend 'cublas': this FP8 weight's 128x128 scale blocks do not lie on one 128-row "
          "grid (it stacks parts whose rows are not multiples of 128), which cuBLASLt's "
          "BLK128x128 mode needs");
    }
  }
  return w.scales;  // [ceil(rows / 128)][ceil(cols / 128)]: the checkpoint's order
}

// The activations' scales in cuBLASLt's layout for `rows` >= m rows (rows past m: scale 1).
std::vector<float> activation_scales(const Fp8Activations& qa, LtScales mode, int64_t rows) {
  if (mode == LtScales::kTensor) return {qa.scales.at(0)};
  std::vector<float> out(static_cast<size_t>(rows * (mode == LtScales::kRows ? 1 : qa.scale_cols)),
                         1.0f);
  if (mode == LtScales::kRows) {
    for (int64_t i = 0; i < qa.rows; ++i) out[i] = qa.scale(i, 0);
  } else {
    for (int64_t g = 0; g < qa.scale_cols; ++g)
      for (int64_t i = 0; i < qa.rows; ++i) out[g * rows + i] = qa.scale(i, g);
  }
  return out;
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
  const LtScales mode = lt_scales(scheme);
  const Fp8Activations qa = quantize_activations(*args.a, scheme);
  const std::vector<float> w_scales = weight_scales(w, mode);

  cublasLtMatmulDesc_t raw_desc = nullptr;
  check(cublasLtMatmulDescCreate(&raw_desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
        "cublasLtMatmulDescCreate");
  const LtDesc desc(raw_desc, LtDeleter{});
  set_desc(desc.get(), CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T, "setting TRANSA");
  set_desc(desc.get(), CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N, "setting TRANSB");
  const int8_t fast = scheme.accumulation == Fp8Accumulation::kFast ? 1 : 0;
  set_desc(desc.get(), CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast, "setting fast accumulation");
  if (mode != LtScales::kTensor) {
    const int32_t w_mode = mode == LtScales::kRows ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F
                                                   : CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    const int32_t a_mode = mode == LtScales::kRows ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F
                                                   : CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    set_desc(desc.get(), CUBLASLT_MATMUL_DESC_A_SCALE_MODE, w_mode,
             "setting the weight's scale mode");
    set_desc(desc.get(), CUBLASLT_MATMUL_DESC_B_SCALE_MODE, a_mode,
             "setting the activations' scale mode");
  }
  const LtLayout w_layout = make_layout(fp8_data_type(w.format), k, n, k);  // op T -> n x k

  // The scale pointers are set before the heuristic is asked, as for the launch. One allocation
  // per scale array: cuBLASLt refuses (CUBLAS_STATUS_NOT_SUPPORTED, at the launch) a scale
  // pointer 4 bytes into an allocation (seen on an H200 with cuBLAS 13.1). The activations'
  // scales are written once the rows are known (the block mode may pad them, to at most a
  // multiple of 256).
  PreparedCall call;
  call.out_dtype = out;
  call.out_shape = {m, n};
  call.owned.push_back(ctx.upload_array(w_scales.data(), w_scales.size() * sizeof(float)));
  const float* w_scale = static_cast<const float*>(call.owned.back().get());
  const int64_t most_rows = mode == LtScales::kBlocks ? (m + 255) / 256 * 256 : m;
  const size_t a_scale_count =
      mode == LtScales::kTensor ? 1 : static_cast<size_t>(most_rows * qa.scale_cols);
  call.owned.emplace_back(a_scale_count * sizeof(float));
  float* a_scale = static_cast<float*>(call.owned.back().get());
  set_desc(desc.get(), CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const float*>(w_scale),
           "setting the weight's scale");
  set_desc(desc.get(), CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const float*>(a_scale),
           "setting the activations' scale");

  cublasLtMatmulPreference_t raw_pref = nullptr;
  check(cublasLtMatmulPreferenceCreate(&raw_pref), "cublasLtMatmulPreferenceCreate");
  const LtPref pref(raw_pref);
  const uint64_t max_ws = kFp8WorkspaceBytes;
  check(cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &max_ws, sizeof(max_ws)),
        "setting the workspace limit");
  // D: the output dtype itself where there is no bias to add, its rows are 16-byte aligned and
  // cuBLASLt has an algorithm for it (see the top of this file); else fp32 and nvdet's pass.
  bool direct = args.bias == nullptr && (n * static_cast<int64_t>(dtype_size(out))) % 16 == 0;
  cudaDataType_t d_type = direct ? cuda_data_type(out) : CUDA_R_32F;
  // The heuristic for `rows` activation rows; the block-scaled mode may need m padded.
  cublasLtMatmulHeuristicResult_t heuristic{};
  LtLayout a_layout, d_layout;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  const auto find_rows = [&](int64_t rows) {
    a_layout = make_layout(fp8_data_type(scheme.format), k, rows, k);
    d_layout = make_layout(d_type, n, rows, n);
    int found = 0;
    status = cublasLtMatmulAlgoGetHeuristic(ctx.cublas_lt(), desc.get(), w_layout.get(),
                                            a_layout.get(), d_layout.get(), d_layout.get(),
                                            pref.get(), 1, &heuristic, &found);
    return status == CUBLAS_STATUS_SUCCESS && found > 0;
  };
  int64_t rows = m;
  const auto search = [&] {  // m, then (block-scaled) m padded
    rows = m;
    if (find_rows(rows)) return true;
    if (mode != LtScales::kBlocks) return false;
    for (const int64_t multiple : {16, 128, 256}) {
      const int64_t padded = (m + multiple - 1) / multiple * multiple;
      if (padded == rows) continue;
      rows = padded;
      if (find_rows(rows)) return true;
    }
    return false;
  };
  bool ok = search();
  if (!ok && direct) {  // no kernel writes the output dtype here: fp32 D and nvdet's pass
    direct = false;
    d_type = CUDA_R_32F;
    ok = search();
  }
  if (!ok) {
    throw_runtime_error(
        "cuBLASLt has no FP8 algorithm for this GEMM on this GPU (m=" + std::to_string(m) +
        ", n=" + std::to_string(n) + ", k=" + std::to_string(k) + ", " + fp8_scheme_text(scheme) +
        ", " + lt_scales_note(mode) + "): " + cublasGetStatusString(status) +
        "; its FP8 kernels need compute capability 8.9 or newer");
  }
  const std::vector<float> act_scales = activation_scales(qa, mode, rows);
  check(cudaMemcpy(a_scale, act_scales.data(), act_scales.size() * sizeof(float),
                   cudaMemcpyHostToDevice),
        "copying the activations' scales to the device");
  if (rows == m) {
    call.owned.push_back(ctx.upload_array(qa.codes.data(), qa.codes.size()));
  } else {  // zero codes in the padding rows
    std::vector<uint8_t> padded(static_cast<size_t>(rows * k), 0);
    std::copy(qa.codes.begin(), qa.codes.end(), padded.begin());
    call.owned.push_back(ctx.upload_array(padded.data(), padded.size()));
  }
  const void* a_codes = call.owned.back().get();
  call.owned.push_back(ctx.upload_array(w.codes.data(), w.codes.size()));
  const void* w_codes = call.owned.back().get();
  // D is [rows, n], row i of the output at i * n: the output itself where cuBLASLt rounds (the
  // padding rows past m are never returned), else the scaled product in fp32, to which one pass
  // adds the bias in full precision and rounds once to the output dtype, as the CPU backends do.
  float* d_ptr = nullptr;
  if (!direct) {
    call.owned.emplace_back(static_cast<size_t>(rows * n) * sizeof(float));
    d_ptr = static_cast<float*>(call.owned.back().get());
  }
  call.owned.emplace_back(static_cast<size_t>((direct ? rows : m) * n) * dtype_size(out));
  void* out_ptr = call.owned.back().get();
  call.output = out_ptr;
  void* const d_out = direct ? out_ptr : static_cast<void*>(d_ptr);
  const void* bias_ptr = nullptr;
  if (args.bias) {
    call.owned.push_back(ctx.upload_array(args.bias->data(), args.bias->nbytes()));
    bias_ptr = call.owned.back().get();
  }
  const kernels::GemmType bias_type = elem_type(args.bias ? args.bias->dtype() : DType::kFP32);
  const kernels::GemmType out_type = elem_type(out);
  if (notes) {
    describe_lt_algo(heuristic, *notes);
    (*notes)["kernel"] = "cublasLt fp8";
    (*notes)["fp8"] = fp8_scheme_text(scheme);
    (*notes)["fp8_quantisation"] = "activations on the host (the CPU backends' codes and scales)";
    (*notes)["fast_accum"] = fast ? "on" : "off";
    (*notes)["scale_mode"] = lt_scales_note(mode);
    (*notes)["rounding"] = direct ? "cuBLASLt's epilogue, fp32 to the output dtype"
                                  : "fp32 D, then + bias and one rounding (nvdet's pass)";
    if (mode == LtScales::kTensor) (*notes)["act_scale_value"] = std::to_string(qa.scales[0]);
    if (rows != m) {
      (*notes)["m_padded"] = std::to_string(m) + " -> " + std::to_string(rows) +
                             " (cuBLASLt's block-scaled FP8 kernels found no algorithm at m)";
    }
  }

  void* workspace = ctx.workspace(kFp8WorkspaceBytes);
  cublasLtHandle_t handle = ctx.cublas_lt();
  const int mi = static_cast<int>(m), ni = static_cast<int>(n);
  call.launch = [=](cudaStream_t stream) -> cudaError_t {
    const float alpha = 1.0f, beta = 0.0f;
    const cudaError_t st = lt_launch_status(
        cublasLtMatmul(handle, desc.get(), &alpha, w_codes, w_layout.get(), a_codes, a_layout.get(),
                       &beta, d_out, d_layout.get(), d_out, d_layout.get(), &heuristic.algo,
                       workspace, kFp8WorkspaceBytes, stream));
    if (st != cudaSuccess || direct) return st;
    return kernels::gemm_convert_output(d_ptr, bias_ptr, bias_type, out_ptr, out_type, mi, ni,
                                        stream);
  };
  return call;
}

}  // namespace nvdet::cuda
