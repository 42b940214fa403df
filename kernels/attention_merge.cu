// Merge of split-KV partial states into the attention output.
//
// Invariance argument: for output row r and head h, the row's items b..e-1 (in item order, as the
// op's plan listed them) are folded in that order:
//   M = max_i m_i (exact), L = sum_i l_i * exp(m_i - M), O_d = sum_i o_i,d * exp(m_i - M)
// with each sum sequential in i (fma for O), and out = O_d / L rounded once to the output type.
// The fold depends only on the row's own partial states, never on other rows or the grid.
#include <type_traits>

#include "kernels/dtype_dispatch.cuh"
#include "kernels/fixed_order_reduce.cuh"
#include "kernels/split_kv_attention.cuh"
#include "kernels/vec_io.cuh"

namespace nvdet::kernels {
namespace {

constexpr int kMergeThreads = 128;

template <class TO>
__global__ void __launch_bounds__(kMergeThreads)
    merge_kernel(const SplitKvAttentionParams a) {
  const int row = blockIdx.x, h = blockIdx.y;
  const int H = a.num_heads, hd = a.head_dim;
  const int b = a.row_item_begin[row], e = a.row_item_begin[row + 1];
  const float* part_o = a.workspace;
  const float* part_ml = a.workspace + static_cast<int64_t>(a.num_items) * H * hd;
  float m = -INFINITY;
  for (int i = b; i < e; ++i) m = fmaxf(m, part_ml[2 * (static_cast<int64_t>(i) * H + h)]);
  float l = 0.0f;
  for (int i = b; i < e; ++i) {
    const int64_t j = static_cast<int64_t>(i) * H + h;
    l = __fadd_rn(l, __fmul_rn(part_ml[2 * j + 1], exp_diff(part_ml[2 * j], m)));
  }
  TO* out = static_cast<TO*>(a.out) + (static_cast<int64_t>(row) * H + h) * hd;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float o = 0.0f;
    for (int i = b; i < e; ++i) {
      const int64_t j = static_cast<int64_t>(i) * H + h;
      o = fmaf(part_o[j * hd + d], exp_diff(part_ml[2 * j], m), o);
    }
    out[d] = from_float<TO>(l > 0.0f ? o / l : 0.0f);
  }
}

}  // namespace

size_t split_kv_attention_workspace_bytes(int64_t num_items, int num_heads, int head_dim) {
  return static_cast<size_t>(num_items) * num_heads * (head_dim + 2) * sizeof(float);
}

bool split_kv_attention_supported(ElemType dtype, int head_dim, int group) {
  return (dtype == ElemType::kBF16 || dtype == ElemType::kFP16) &&
         (head_dim == 64 || head_dim == 128 || head_dim == 256) && group >= 1 && group <= 8;
}

cudaError_t launch_attention_merge(const SplitKvAttentionParams& p, cudaStream_t stream) {
  if (p.num_rows <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(p.num_rows), static_cast<unsigned>(p.num_heads));
  return with_elem_type(p.out_dtype, [&](auto tag) {
    using TO = typename decltype(tag)::type;
    merge_kernel<TO><<<grid, kMergeThreads, 0, stream>>>(p);
    return cudaGetLastError();
  });
}

}  // namespace nvdet::kernels
