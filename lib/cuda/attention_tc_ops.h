#pragma once
// cuda-invariant's attention on the tensor-core kernels (kernels/attention_tc.cuh), for decode
// and prefill alike: see attention_tc_ops.cpp.
#include <cstdint>
#include <span>

#include "lib/cuda/cuda_ops.h"

namespace nvdet::cuda {

// Whether cuda-invariant runs this shape on the tensor-core kernels on this device (and
// NVDET_ATTENTION_TC does not say 0).
bool use_attention_tc(DType dtype, int32_t num_heads, int32_t num_kv_heads, int32_t head_dim);

// One attention call over the plan: decode is q_start = 0, 1, ..., seqs (one new token each).
struct TcAttentionCall {
  AttentionOperands ops;
  const PagedKv* kv = nullptr;
  std::span<const int32_t> q_start;  // [seqs + 1]
  int32_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  float scale = 1.0f;
  int32_t split_size = 512;
  DType out_dtype = DType::kFP32;
};
PreparedCall prepare_attention_tc(DeviceContext& ctx, const TcAttentionCall& call,
                                  const IndexUpload& upload, RunNotes* notes);

}  // namespace nvdet::cuda
