// The FP8 GEMM of cuda-invariant: nvdet's wgmma e4m3 kernel (kernels/gemm_fp8.cuh), promoted to
// fp32 every 128 elements of K in a fixed order, scales applied in a fixed order, one family of
// tiles for every m and no split-K.
//
// The activations are quantised on the host by the scheme's rule (lib/ops/fp8_quant.h, the
// function every backend calls), so the codes and scales are the CPU backends' bit for bit; the
// kernel then follows the CPU backends' plan (lib/reference/fp8_gemm.cpp) with each 128-wide K
// group's partial from the tensor cores. What it is invariant under is the scheme's business:
// dynamic_tensor's scale is a max over the whole batch, so no kernel is invariant there and the
// reports say so (the scenario expects it to diverge).
#include <cstring>
#include <string>
#include <vector>

#include "kernels/gemm_fp8.cuh"
#include "lib/core/error.h"
#include "lib/cuda/cuda_ops.h"
#include "lib/cuda/elem_type.h"
#include "lib/cuda/gemm_settings.h"

namespace nvdet::cuda {
namespace {

// Whether the weight scales (K-group-major, n per group) hold one value per 128 aligned columns
// in every group, as block_128x128 and tensor-wide scales do: the kernel's cue to form each row's
// scale product once per group (kernels/gemm_fp8.cuh, w_scale_blocks_of_128). Read from the values
// themselves (bit for bit), so a scheme added later cannot get it wrong.
bool w_scale_blocks_of_128(const std::vector<float>& w_scale, int64_t n, int64_t groups) {
  for (int64_t g = 0; g < groups; ++g) {
    const float* row = w_scale.data() + g * n;
    for (int64_t j = 0; j < n; ++j) {
      if (std::memcmp(&row[j], &row[j / 128 * 128], sizeof(float)) != 0) return false;
    }
  }
  return true;
}

}  // namespace

PreparedCall prepare_invariant_fp8_gemm(DeviceContext& ctx, const GemmArgs& args, RunNotes* notes) {
  const Fp8Scheme& scheme = args.fp8;
  if (const std::string refusal = invariant_fp8_refusal(OpKind::kGemm, scheme); !refusal.empty()) {
    throw_input_error("backend 'cuda-invariant' " + refusal);
  }
  if (!kernels::fp8_gemm_available()) {
    throw_runtime_error(
        "backend 'cuda-invariant': its FP8 GEMM runs on wgmma, which needs an sm_90a GPU (a "
        "Hopper GPU and a build with the 90a target); this device or build has none");
  }
  const Fp8Weight& w = *args.fp8_w;
  const int64_t m = args.a->dim(0), k = args.a->dim(1), n = w.rows;
  if (w.cols != k) {
    throw_input_error("gemm: the FP8 weight has " + std::to_string(w.cols) +
                      " columns, the activations " + std::to_string(k));
  }
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) {
    throw_input_error("gemm: dimensions beyond 2^31 - 1 are not supported on the GPU");
  }

  const Fp8Activations qa = quantize_activations(*args.a, scheme);
  // Scales K-group-major (kernels/gemm_fp8.cuh): per group when either operand's scale changes
  // along K, else one per row and one per column.
  const bool per_group = qa.scale_cols > 1 || w.scale_cols > 1;
  const int64_t groups = per_group ? (k + kFp8Group - 1) / kFp8Group : 1;
  std::vector<float> a_scale(static_cast<size_t>(groups * m));
  std::vector<float> w_scale(static_cast<size_t>(groups * n));
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t i = 0; i < m; ++i) a_scale[g * m + i] = qa.scale(i, g);
    for (int64_t j = 0; j < n; ++j) w_scale[g * n + j] = w.scale(j, g);
  }

  PreparedCall call;
  const DType out = args.out_dtype;
  call.out_dtype = out;
  call.out_shape = {m, n};
  call.owned.push_back(ctx.upload_array(qa.codes.data(), qa.codes.size()));
  kernels::Fp8GemmProblem p;
  p.a = static_cast<const uint8_t*>(call.owned.back().get());
  call.owned.push_back(ctx.upload_array(w.codes.data(), w.codes.size()));
  p.w = static_cast<const uint8_t*>(call.owned.back().get());
  call.owned.push_back(ctx.upload_array(a_scale.data(), a_scale.size() * sizeof(float)));
  p.a_scale = static_cast<const float*>(call.owned.back().get());
  call.owned.push_back(ctx.upload_array(w_scale.data(), w_scale.size() * sizeof(float)));
  p.w_scale = static_cast<const float*>(call.owned.back().get());
  if (args.bias) {
    call.owned.push_back(ctx.upload_array(args.bias->data(), args.bias->nbytes()));
    p.bias = call.owned.back().get();
    p.bias_type = elem_type(args.bias->dtype());
  }
  call.owned.emplace_back(static_cast<size_t>(m * n) * dtype_size(out));
  p.out = call.owned.back().get();
  call.output = p.out;
  p.out_type = elem_type(out);
  p.m = static_cast<int>(m);
  p.n = static_cast<int>(n);
  p.k = static_cast<int>(k);
  p.lda = k;
  p.ldw = k;
  p.ldo = n;
  p.per_group = per_group;
  p.w_scale_blocks_of_128 = per_group && w_scale_blocks_of_128(w_scale, n, groups);
  p.promoted = scheme.accumulation == Fp8Accumulation::kPromoted;
  if (const char* why = kernels::fp8_gemm_unsupported(p)) {
    throw_input_error(std::string("backend 'cuda-invariant': ") + why + " (m=" + std::to_string(m) +
                      ", n=" + std::to_string(n) + ", k=" + std::to_string(k) + ")");
  }
  kernels::Fp8GemmPlan plan =
      kernels::fp8_gemm_plan(p, ctx.sm_count(), forced_fp8_config(), forced_gemm_ctas());
  plan.stage_boxes = gemm_stage_copies();
  if (notes) {
    const kernels::Fp8GemmConfig& c = kernels::kFp8GemmConfigs[plan.config];
    (*notes)["kernel"] = "wgmma-m64nNk32-e4m3-tma";
    (*notes)["fp8"] = fp8_scheme_text(scheme);
    (*notes)["fp8_quantisation"] = "activations on the host (the CPU backends' codes and scales)";
    (*notes)["k_group"] = std::to_string(kFp8Group);
    (*notes)["k_order"] = p.promoted ? "K groups of 128 promoted to fp32 in ascending order"
                                     : "one wgmma chain over the whole of K (fast accumulation)";
    (*notes)["scales"] = per_group ? "per K group, at each promotion" : "once, after the sum";
    (*notes)["tile"] =
        std::to_string(c.tile_m) + "x" + std::to_string(c.tile_n) + "x128 (m x n x k)";
    (*notes)["stages"] = std::to_string(c.stages);
    (*notes)["k_groups_a_stage"] = std::to_string(c.groups_per_stage);
    (*notes)["cluster"] = std::to_string(c.cluster_m);
    (*notes)["ctas"] = std::to_string(plan.ctas);
    (*notes)["split_k"] = "1";
  }
  call.launch = [p, plan](cudaStream_t stream) {
    return kernels::fp8_gemm_launch(p, plan, stream);
  };
  return call;
}

}  // namespace nvdet::cuda
