#pragma once
// What a GPU backend offers a decoder that keeps its tensors on the device (lib/model/
// device_decoder.h): device buffers, weights uploaded once and shared by every backend of the
// process, and the backend's own op kernels (the ones run() uses) on device pointers, plus the
// decoder's elementwise steps. Every call is enqueued in order on the backend's stream; only
// download() waits for it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "lib/backend/backend.h"

namespace nvdet {

// The op arguments below use the tensors' device addresses; shapes are given explicitly. An
// attention call takes everything but its tensors from the op's arguments (whose q / kv.k /
// kv.v are not read).
struct DeviceGemmCall {
  const void* a = nullptr;     // [m, k]
  const void* w = nullptr;     // [n, k]
  const void* bias = nullptr;  // [n] in the input dtype, or null
  void* out = nullptr;         // [m, n] of out_dtype
  int64_t m = 0, n = 0, k = 0;
  DType dtype = DType::kBF16, out_dtype = DType::kFP32;
  // The uid of the HostTensor `w` holds when it is a weight that does not change between calls
  // (a backend may then keep a copy derived from it, e.g. a staged layout); 0 when unknown.
  uint64_t w_uid = 0;
};

// Every group's GEMM in one launch (an MoE layer's experts): group g's rows [group_rows[g],
// group_rows[g + 1]) of a times W_g^T, W_g rows [g * n, (g + 1) * n) of a stacked w
// (resident_stack), into the same rows of out. group_rows lives on the device.
struct DeviceGroupedGemmCall {
  const void* a = nullptr;              // [max_rows, k]
  const void* w = nullptr;              // [groups * n, k]
  void* out = nullptr;                  // [max_rows, n] of out_dtype
  const int32_t* group_rows = nullptr;  // [groups + 1], non-decreasing, the last <= max_rows
  int64_t groups = 0, max_rows = 0, n = 0, k = 0;
  DType dtype = DType::kBF16, out_dtype = DType::kBF16;
};

struct DeviceRmsNormCall {
  const void* x = nullptr;       // [rows, d]
  const void* weight = nullptr;  // [d]
  void* out = nullptr;           // [rows, d]
  int64_t rows = 0, d = 0;
  DType dtype = DType::kBF16, out_dtype = DType::kBF16;
  float eps = 1e-6f;
};

struct DeviceAttentionCall {
  const void* q = nullptr;  // [rows, num_heads, head_dim]
  const void* k = nullptr;  // [pages, page_size, num_kv_heads, head_dim]
  const void* v = nullptr;
  void* out = nullptr;  // [rows, num_heads, head_dim]
  DType dtype = DType::kBF16;
};

// An MoE layer's routing on the device (DeviceDecodeOps::moe_route): device buffers for
// lib/ops/moe_routing.h's route and sorted layout.
struct DeviceMoeRoute {
  int32_t* expert = nullptr;    // [rows * top_k]: row r's rank-j expert at r * top_k + j
  float* weight = nullptr;      // [rows * top_k]: its combine weight
  int32_t* offsets = nullptr;   // [experts + 2]: expert e's entries are [offsets[e], offsets[e+1]);
                                // offsets[experts + 1]: 0, or 1 + the first row whose router
                                // logits are not all finite (then nothing else is valid)
  int32_t* row = nullptr;       // [rows * top_k]: the layout's token rows (ascending per expert)
  int32_t* position = nullptr;  // [rows * top_k]: where row r's rank-j entry sits in `row`
  int32_t* counts = nullptr;    // [experts]: scratch
};

class DeviceDecodeOps {
 public:
  using Buffer = std::shared_ptr<void>;  // freed when the last holder lets go
  virtual ~DeviceDecodeOps() = default;

  // ---- memory ----
  // Zero-filled; throws Error(kRuntime) when out of memory.
  virtual Buffer allocate(size_t bytes) = 0;
  // Host memory the device copies to and from fastest (pinned, for the CUDA backends): where
  // the decoder lands what it downloads every step. This default is plain heap memory.
  virtual Buffer allocate_host(size_t bytes) {
    return Buffer(new std::byte[bytes > 0 ? bytes : 1],
                  [](void* p) { delete[] static_cast<std::byte*>(p); });
  }
  // Bytes the device has free now.
  virtual size_t free_bytes() = 0;
  // The device copy of a weight, uploaded on first use and shared by every backend of the
  // process (keyed by the tensor's uid) until keep_resident_only() drops it.
  virtual const void* resident(const HostTensor& t) = 0;
  virtual bool is_resident(const HostTensor& t) = 0;
  // Drops every resident copy whose uid is not listed (the weights of another model), and every
  // stack with a member not listed.
  virtual void keep_resident_only(std::span<const uint64_t> uids) = 0;
  // One device copy of several weights' rows, stacked in order ([sum of rows, cols], each
  // tensor's bytes after the previous one's): an MoE layer's experts, for grouped_gemm. Uploaded
  // once and shared like resident(); its members count as resident.
  virtual const void* resident_stack(std::span<const HostTensor* const> tensors) = 0;
  // Host -> device (the host bytes may be reused once it returns); device -> host (waits for
  // everything enqueued before it); device -> device, `rows` rows of `width` bytes each.
  virtual void upload(void* dst, const void* src, size_t bytes) = 0;
  virtual void download(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_rows(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                         size_t width, size_t rows) = 0;

  // ---- the backend's ops, with the notes run() would give ----
  virtual void gemm(const DeviceGemmCall& g, RunNotes* notes) = 0;
  virtual void rmsnorm(const DeviceRmsNormCall& r, RunNotes* notes) = 0;
  // The groups' GEMMs in one launch, each row with the bits gemm() gives it in a call over its
  // group's rows. Returns false, having enqueued nothing, where the backend has no such launch
  // (the caller then calls gemm() per group).
  virtual bool grouped_gemm(const DeviceGroupedGemmCall& g) {
    (void)g;
    return false;
  }
  virtual void attention_decode(const AttentionDecodeArgs& args, const DeviceAttentionCall& t,
                                RunNotes* notes) = 0;
  virtual void attention_prefill(const AttentionPrefillArgs& args, const DeviceAttentionCall& t,
                                 RunNotes* notes) = 0;

  // ---- the decoder's elementwise steps (kernels/decode_elementwise.cuh) ----
  virtual void gather_rows(const void* table, const int32_t* rows, int64_t count, int64_t row_bytes,
                           void* out) = 0;
  virtual void rope(DType t, void* qkv, int64_t rows, int64_t width, int32_t head_dim,
                    int32_t rotated_heads, const float* cos, const float* sin) = 0;
  virtual void kv_write(DType t, const void* qkv, int64_t rows, int64_t width, int64_t q_dim,
                        int64_t kv_dim, const int64_t* slots, void* k, void* v) = 0;
  virtual void residual_add(DType t, void* x, const void* y, int64_t n) = 0;
  virtual void swiglu(DType t, const void* gate_up, void* out, int64_t rows, int64_t inter) = 0;
  // An MoE layer's combine (lib/model/moe_combine.h's arithmetic): out [rows, hidden] row r =
  // the sum over j < k, ascending, of weight[r * k + j] times row slot[r * k + j] of y (the
  // experts' outputs), in fp32 from 0, then (Qwen2-MoE, when `shared` is set) sigmoid(
  // shared_gate[r]) times row r of shared, rounded once to t.
  virtual void moe_combine(DType t, const void* y, const int32_t* slot, const float* weight,
                           int64_t rows, int64_t k, int64_t hidden, void* out, const void* shared,
                           const float* shared_gate) = 0;
  // An MoE layer's routing of router logits [rows, experts] (fp32): route_tokens's route and
  // group_rows_by_expert's layout, bit for bit (kernels/moe_route.cuh is the row function of
  // both), written into `out`.
  virtual void moe_route(const float* logits, int64_t rows, int32_t experts, int32_t top_k,
                         bool norm_topk_prob, const DeviceMoeRoute& out) = 0;
  virtual void argmax_rows(const float* logits, int64_t rows, int64_t cols, int32_t* out) = 0;
};

}  // namespace nvdet
