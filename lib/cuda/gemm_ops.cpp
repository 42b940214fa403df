// GEMM for the CUDA backends: out[m, n] = a[m, k] · w[n, k]^T (+ bias[n]).
//
// Vendor flavors (cublas, cuda-vendor-policy, cublaslt-nosplit, cublaslt-ws1k) call cuBLASLt the
// way PyTorch's
// linear does: in cuBLAS's column-major terms D[n, m] = op_T(W)[n, k] · A[k, m], with W read as
// a k x n column-major matrix (the row-major [n, k] weight) and A as k x m (the row-major [m, k]
// activations); D (n x m column-major) is exactly the row-major [m, n] output. The algorithm is
// the first result of cublasLtMatmulAlgoGetHeuristic; the nosplit flavor restricts the
// preference to CUBLASLT_REDUCTION_SCHEME_NONE; the ws1k flavor leaves the heuristic alone but
// offers it a 1 KiB workspace, as PyTorch does under CUBLASLT_WORKSPACE_SIZE=1 (vLLM's
// batch-invariant mode), which rules out the split-K algorithms that reduce in a workspace. What
// was chosen goes into RunNotes, because that is what explains a divergence.
//
// The invariant flavor calls nvdet's own kernels (kernels/gemm_invariant.cuh).
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "kernels/gemm_invariant.cuh"
#include "lib/core/error.h"
#include "lib/cuda/cublaslt_handles.h"
#include "lib/cuda/cuda_ops.h"
#include "lib/cuda/elem_type.h"
#include "lib/cuda/gemm_settings.h"
#include "lib/cuda/gemm_tile_names.h"

namespace nvdet::cuda {
namespace {

constexpr size_t kLtWorkspaceBytes = size_t{32} << 20;
constexpr size_t kLtSmallWorkspaceBytes = 1024;  // CUBLASLT_WORKSPACE_SIZE=1 (KiB) in PyTorch

kernels::GemmType kernel_type(DType t) { return elem_type(t); }

// Input/output type pairs cuBLASLt writes directly with fp32 compute. Others (e.g. fp32 in,
// bf16 out) get an fp32 D and one rounding by gemm_convert_output.
bool lt_writes_directly(DType in, DType out) { return out == in || out == DType::kFP32; }

// The three input uploads, with pointers taken after all of them are resident (upload() may
// evict, so a pointer is only trusted once no further upload follows it).
struct GemmInputs {
  const void* a = nullptr;
  const void* w = nullptr;
  const void* bias = nullptr;
};

GemmInputs upload_inputs(DeviceContext& ctx, const GemmArgs& args) {
  ctx.upload(*args.a);
  ctx.upload(*args.w);
  if (args.bias) ctx.upload(*args.bias);
  GemmInputs in;
  in.a = ctx.upload(*args.a);
  in.w = ctx.upload(*args.w);
  if (args.bias) in.bias = ctx.upload(*args.bias);
  return in;
}

// ---- cuBLASLt -----------------------------------------------------------------------------------

// The heuristic's answer depends only on the problem description, so it is cached per device,
// flavor, shape and types: a sweep asks once per shape.
using HeuristicKey = std::tuple<int, int, int64_t, int64_t, int64_t, int, int, bool, bool, int>;

// The largest power of two up to 256 that divides every address: cuBLASLt's algorithms may
// assume 256-byte aligned operands unless told otherwise (its MIN_ALIGNMENT preferences default
// to 256), and a slice of a larger buffer (an expert's rows in the device decoder's grouped
// layout) can be less aligned.
int common_alignment(std::initializer_list<const void*> ptrs) {
  int align = 256;
  for (const void* p : ptrs) {
    if (!p) continue;
    const auto addr = reinterpret_cast<uintptr_t>(p);
    while (align > 1 && addr % static_cast<uintptr_t>(align) != 0) align /= 2;
  }
  return align;
}
std::mutex heuristic_mutex;
std::map<HeuristicKey, cublasLtMatmulHeuristicResult_t> heuristic_cache;

void describe_algo(const cublasLtMatmulHeuristicResult_t& h, bool tf32, bool direct,
                   RunNotes* notes) {
  if (!notes) return;
  describe_lt_algo(h, *notes);
  (*notes)["compute_type"] = tf32 ? "32F_FAST_TF32" : "32F";
  if (!direct) (*notes)["output"] = "fp32 then rounded to out_dtype";
}

// The output buffer: the caller's, or one the call owns.
void* output_of(PreparedCall& call, const GemmOperands& g) {
  call.out_dtype = g.out_dtype;
  call.out_shape = {g.m, g.n};
  if (!g.out) call.owned.emplace_back(static_cast<size_t>(g.m * g.n) * dtype_size(g.out_dtype));
  call.output = g.out ? g.out : call.owned.back().get();
  return const_cast<void*>(call.output);
}

// `host_bias`: the bias on the host, for the case where D's type differs from the input type
// (fp32 D for a 16-bit output), whose epilogue needs it converted; device-only callers have none
// and are refused that case.
PreparedCall prepare_cublaslt(DeviceContext& ctx, CudaFlavor flavor, const GemmOperands& g,
                              const HostTensor* host_bias, RunNotes* notes) {
  const DType in = g.dtype, out = g.out_dtype;
  const int64_t m = g.m, k = g.k, n = g.n;
  const bool direct = lt_writes_directly(in, out);
  const DType d_dtype = direct ? out : DType::kFP32;
  const bool tf32 = in == DType::kFP32 && g.allow_tf32;
  const bool nosplit = flavor == CudaFlavor::kCublasLtNoSplit;
  const size_t ws_bytes =
      flavor == CudaFlavor::kCublasLtSmallWorkspace ? kLtSmallWorkspaceBytes : kLtWorkspaceBytes;

  PreparedCall call;
  void* out_ptr = output_of(call, g);
  void* d_ptr = out_ptr;
  if (!direct) {
    call.owned.emplace_back(static_cast<size_t>(m * n) * sizeof(float));
    d_ptr = call.owned.back().get();
  }

  // The bias epilogue reads a vector of D's type. D's type is the input type or fp32, so the
  // conversion below is exact.
  const void* bias_ptr = nullptr;
  if (g.bias) {
    if (d_dtype == in) {
      bias_ptr = g.bias;
    } else if (host_bias) {
      HostTensor b(d_dtype, {n});
      for (int64_t i = 0; i < n; ++i) b.set(i, host_bias->get(i));
      call.owned.push_back(ctx.upload_array(b.data(), b.nbytes()));
      bias_ptr = call.owned.back().get();
    } else {
      throw_input_error(
          "gemm on device buffers: a bias with an output type other than the input "
          "type or fp32 is not supported");
    }
  }

  cublasLtMatmulDesc_t raw_desc = nullptr;
  check(cublasLtMatmulDescCreate(
            &raw_desc, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F),
        "cublasLtMatmulDescCreate");
  LtDesc desc(raw_desc, LtDeleter{});
  const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
  check(
      cublasLtMatmulDescSetAttribute(desc.get(), CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof(op_t)),
      "setting TRANSA");
  check(
      cublasLtMatmulDescSetAttribute(desc.get(), CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof(op_n)),
      "setting TRANSB");
  if (bias_ptr) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    check(cublasLtMatmulDescSetAttribute(desc.get(), CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                         sizeof(epilogue)),
          "setting the bias epilogue");
    check(cublasLtMatmulDescSetAttribute(desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr,
                                         sizeof(bias_ptr)),
          "setting the bias pointer");
  }

  const LtLayout w_layout = make_layout(cuda_data_type(in), k, n, k);  // op T -> n x k
  const LtLayout a_layout = make_layout(cuda_data_type(in), k, m, k);
  const LtLayout d_layout = make_layout(cuda_data_type(d_dtype), n, m, n);

  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  const int align = common_alignment({g.a, g.w, d_ptr, bias_ptr});
  const HeuristicKey key{device,
                         static_cast<int>(flavor),
                         m,
                         n,
                         k,
                         static_cast<int>(in),
                         static_cast<int>(d_dtype),
                         bias_ptr != nullptr,
                         tf32,
                         align};
  cublasLtMatmulHeuristicResult_t heuristic{};
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(heuristic_mutex);
    auto it = heuristic_cache.find(key);
    if (it != heuristic_cache.end()) {
      heuristic = it->second;
      cached = true;
    }
  }
  if (!cached) {
    cublasLtMatmulPreference_t raw_pref = nullptr;
    check(cublasLtMatmulPreferenceCreate(&raw_pref), "cublasLtMatmulPreferenceCreate");
    LtPref pref(raw_pref);
    const uint64_t max_ws = ws_bytes;
    check(cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &max_ws, sizeof(max_ws)),
          "setting the workspace limit");
    if (align < 256) {
      const uint32_t bytes = static_cast<uint32_t>(align);
      for (const auto attr :
           {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
        check(cublasLtMatmulPreferenceSetAttribute(pref.get(), attr, &bytes, sizeof(bytes)),
              "setting the operands' alignment");
      }
    }
    if (nosplit) {
      const uint32_t mask = CUBLASLT_REDUCTION_SCHEME_NONE;
      check(cublasLtMatmulPreferenceSetAttribute(
                pref.get(), CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof(mask)),
            "restricting the reduction scheme");
    }
    int found = 0;
    check(cublasLtMatmulAlgoGetHeuristic(ctx.cublas_lt(), desc.get(), w_layout.get(),
                                         a_layout.get(), d_layout.get(), d_layout.get(), pref.get(),
                                         1, &heuristic, &found),
          "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) {
      throw_runtime_error("cuBLASLt has no algorithm for this GEMM (m=" + std::to_string(m) +
                          ", n=" + std::to_string(n) + ", k=" + std::to_string(k) + ", " +
                          std::string(dtype_name(in)) + ")");
    }
    std::lock_guard<std::mutex> lock(heuristic_mutex);
    heuristic_cache[key] = heuristic;
  }
  describe_algo(heuristic, tf32, direct, notes);
  if (notes && align < 256) (*notes)["operand_alignment"] = std::to_string(align) + " bytes";

  void* workspace = ctx.workspace(ws_bytes);
  cublasLtHandle_t handle = ctx.cublas_lt();
  const void* a_ptr = g.a;
  const void* w_ptr = g.w;
  const int mi = static_cast<int>(m), ni = static_cast<int>(n);
  call.launch = [=](cudaStream_t stream) -> cudaError_t {
    const float alpha = 1.0f, beta = 0.0f;
    const cudaError_t st = lt_launch_status(cublasLtMatmul(
        handle, desc.get(), &alpha, w_ptr, w_layout.get(), a_ptr, a_layout.get(), &beta, d_ptr,
        d_layout.get(), d_ptr, d_layout.get(), &heuristic.algo, workspace, ws_bytes, stream));
    if (st != cudaSuccess || direct) return st;
    return nvdet::kernels::gemm_convert_output(static_cast<const float*>(d_ptr), nullptr,
                                               nvdet::kernels::GemmType::kFP32, out_ptr,
                                               kernel_type(out), mi, ni, stream);
  };
  return call;
}

// ---- nvdet's invariant kernels ------------------------------------------------------------------

// DeviceContext::derived's purpose for the invariant GEMM's staged weights.
constexpr int kStagedWeightPurpose = 1;

PreparedCall prepare_invariant(DeviceContext& ctx, const GemmOperands& g, RunNotes* notes) {
  const DType in = g.dtype, out = g.out_dtype;
  const int64_t m = g.m, k = g.k, n = g.n;

  PreparedCall call;
  void* out_ptr = output_of(call, g);

  nvdet::kernels::GemmProblem prob;
  prob.a = g.a;
  prob.w = g.w;
  prob.bias = g.bias;
  prob.out = out_ptr;
  prob.m = static_cast<int>(m);
  prob.n = static_cast<int>(n);
  prob.k = static_cast<int>(k);
  prob.lda = k;
  prob.ldw = k;
  prob.ldo = n;
  prob.in_type = kernel_type(in);
  prob.out_type = kernel_type(out);

  const nvdet::kernels::GemmDevice device = gemm_device(ctx);
  nvdet::kernels::GemmPlan plan = nvdet::kernels::gemm_invariant_plan(
      prob, device, nvdet::kernels::GemmSchedule::kAuto, nvdet::kernels::GemmPath::kAuto,
      forced_wgmma_config(), forced_gemm_ctas());
  plan.stage_boxes = gemm_stage_copies();
  // W that TMA cannot address is staged into 16-byte rows. For a weight known by its uid, the
  // staged copy is made once and kept beside the uploads (DeviceContext::derived), so a decode
  // step pays for staging A only (at m = 1 not even that: the row is read in place); it is the
  // same copy of W's values either way.
  const bool keep_staged_w = plan.staged_k > 0 && g.w_uid != 0;
  if (keep_staged_w) {
    prob.w_staged =
        ctx.derived(g.w_uid, kStagedWeightPurpose,
                    nvdet::kernels::gemm_invariant_staged_weight_bytes(prob, plan),
                    [&](void* dst, cudaStream_t stream) {
                      return nvdet::kernels::gemm_invariant_stage_weight(prob, plan, dst, stream);
                    });
  }
  void* workspace = plan.workspace_bytes ? ctx.workspace(plan.workspace_bytes) : nullptr;

  if (notes) {
    (*notes)["kernel"] = nvdet::kernels::gemm_path_name(plan.path);
    (*notes)["chunk_k"] = std::to_string(plan.chunk_k);
    (*notes)["chunks"] = std::to_string(plan.chunks);
    (*notes)["schedule"] = nvdet::kernels::gemm_schedule_name(plan.schedule);
    (*notes)["tile"] = std::to_string(plan.tile_m) + "x" + std::to_string(plan.tile_n) + "x" +
                       std::to_string(plan.tile_k) + " (m x n x k)";
    (*notes)["stages"] = std::to_string(plan.stages);
    if (plan.path == nvdet::kernels::GemmPath::kWgmma) {
      (*notes)["ctas"] = std::to_string(plan.ctas);
      (*notes)["k_order"] = "one wgmma chain over the whole of K";
      if (nvdet::kernels::kGemmWgmmaConfigs[plan.config].swapped) {
        (*notes)["form"] = "swapped: W on wgmma's 64-row side, the tile's rows of A as its N";
      }
      if (plan.staged_k > 0) {
        (*notes)["operands"] = "copied to rows of " + std::to_string(plan.staged_k) +
                               " elements (K or stride not TMA-addressable)" +
                               (keep_staged_w ? "; the weight's copy made once and reused" : "") +
                               (nvdet::kernels::gemm_invariant_reads_a_in_place(prob, plan)
                                    ? "; A's single row read in place"
                                    : "");
      }
    }
    if (in == DType::kFP32 && g.allow_tf32) (*notes)["tf32"] = "ignored (exact fp32 FFMA)";
  }

  call.launch = [prob, plan, workspace](cudaStream_t stream) {
    return nvdet::kernels::gemm_invariant_launch(prob, plan, workspace, plan.workspace_bytes,
                                                 stream);
  };
  return call;
}

template <class T>
T algo_attr(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T value{};
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof(value), &written) !=
      CUBLAS_STATUS_SUCCESS) {
    return T{};
  }
  return value;
}

std::string reduction_scheme_name(uint32_t scheme) {
  switch (scheme) {
    case CUBLASLT_REDUCTION_SCHEME_NONE: return "none";
    case CUBLASLT_REDUCTION_SCHEME_INPLACE: return "inplace";
    case CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: return "compute_type";
    case CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE: return "output_type";
    default: return std::to_string(scheme);
  }
}

}  // namespace

void describe_lt_algo(const cublasLtMatmulHeuristicResult_t& h, RunNotes& notes) {
  const cublasLtMatmulAlgo_t& algo = h.algo;
  notes["kernel"] = "cublasLt";
  notes["algo_id"] = std::to_string(algo_attr<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID));
  // cuBLASLt's tile is rows x columns of its column-major D, i.e. n x m of nvdet's output.
  notes["tile"] =
      cublaslt_tile_name(algo_attr<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID)) + " (n x m)";
  notes["stages"] = cublaslt_stages_name(algo_attr<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID));
  notes["split_k"] = std::to_string(algo_attr<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM));
  notes["reduction_scheme"] =
      reduction_scheme_name(algo_attr<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME));
  notes["cta_swizzling"] =
      std::to_string(algo_attr<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING));
  notes["workspace_bytes"] = std::to_string(h.workspaceSize);
}

namespace {

PreparedCall prepare_gemm_operands(DeviceContext& ctx, CudaFlavor flavor, const GemmOperands& g,
                                   const HostTensor* host_bias, RunNotes* notes) {
  if (g.m > INT32_MAX || g.n > INT32_MAX || g.k > INT32_MAX) {
    throw_input_error("gemm: dimensions beyond 2^31 - 1 are not supported on the GPU");
  }
  switch (flavor) {
    case CudaFlavor::kInvariant: return prepare_invariant(ctx, g, notes);
    case CudaFlavor::kCublas:
    case CudaFlavor::kVendorPolicy:
    case CudaFlavor::kCublasLtNoSplit:
    case CudaFlavor::kCublasLtSmallWorkspace: break;
  }
  return prepare_cublaslt(ctx, flavor, g, host_bias, notes);
}

}  // namespace

PreparedCall prepare_gemm(DeviceContext& ctx, CudaFlavor flavor, const GemmArgs& args,
                          RunNotes* notes) {
  if (args.is_fp8()) return prepare_fp8_gemm(ctx, flavor, args, notes);
  const GemmInputs dev = upload_inputs(ctx, args);
  GemmOperands g;
  g.a = dev.a;
  g.w = dev.w;
  g.bias = dev.bias;
  g.m = args.a->dim(0);
  g.k = args.a->dim(1);
  g.n = args.w->dim(0);
  g.dtype = args.a->dtype();
  g.out_dtype = args.out_dtype;
  g.allow_tf32 = args.allow_tf32;
  g.w_uid = args.w->uid();
  return prepare_gemm_operands(ctx, flavor, g, args.bias, notes);
}

PreparedCall prepare_gemm_device(DeviceContext& ctx, CudaFlavor flavor, const GemmOperands& g,
                                 RunNotes* notes) {
  return prepare_gemm_operands(ctx, flavor, g, nullptr, notes);
}

}  // namespace nvdet::cuda
