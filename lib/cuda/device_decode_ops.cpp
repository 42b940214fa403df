// DeviceDecodeOps for the CUDA backends (cublas, cublaslt-*, cuda-invariant, cuda-vendor-policy):
// the backend's own op halves on device pointers (prepare_*_device in the op files, the same
// plans and kernels as run()), the decoder's elementwise kernels (kernels/decode_elementwise.cuh)
// and a process-wide store of resident weights, so that every backend and context of an audit
// decodes from one device copy of the model.
#include "lib/backend/device_decode_ops.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "kernels/decode_elementwise.cuh"
#include "kernels/gemm_invariant.cuh"
#include "kernels/moe_route_launch.cuh"
#include "lib/core/error.h"
#include "lib/cuda/cuda_ops.h"
#include "lib/cuda/elem_type.h"
#include "lib/cuda/gemm_settings.h"
#include "lib/cuda/index_arena.h"
#include "lib/cuda/kernel_paths.h"

namespace nvdet::cuda {

void add_path_notes(CudaFlavor flavor, bool gemm, RunNotes* notes) {
  if (!notes) return;
  if (!notes->count("path")) {
    (*notes)["path"] = !gemm                              ? "cuda-cores-fp32"
                       : flavor == CudaFlavor::kInvariant ? (*notes)["kernel"]
                                                          : "cublasLt";
  }
  (*notes)["kernel_image"] = kernel_image_description(NVDET_CUDA_ARCHITECTURES);
}

namespace {

// Weights resident on the device for the whole process, by uid. Each is uploaded once, with the
// copy finished before the pointer is handed out, so any backend's stream may read it.
struct ResidentStore {
  std::mutex mutex;
  std::map<uint64_t, DeviceBuffer> buffers;
  std::map<const void*, uint64_t> uid_at;  // each buffer's address -> its weight's uid
  std::map<std::vector<uint64_t>, DeviceBuffer> stacks;  // resident_stack(), by the members' uids
};
ResidentStore& resident_store() {
  static ResidentStore s;
  return s;
}

class CudaDecodeOps final : public DeviceDecodeOps {
 public:
  CudaDecodeOps(DeviceContext& ctx, CudaFlavor flavor) : ctx_(ctx), flavor_(flavor) {}
  ~CudaDecodeOps() override {
    cudaStreamSynchronize(ctx_.stream());
    for (cudaEvent_t e : chunk_done_) {
      if (e) cudaEventDestroy(e);
    }
  }

  Buffer allocate(size_t bytes) override {
    auto owned = std::make_shared<DeviceBuffer>(std::max<size_t>(bytes, 1));
    void* p = owned->get();
    // Zero-filled like the host engine's tensors: the attention kernels read whole pages of the
    // KV cache and mask the slots past a sequence's length, and a masked 0 * NaN from stale
    // memory would still reach the output.
    check(cudaMemsetAsync(p, 0, owned->bytes(), ctx_.stream()), "clearing a decoder buffer");
    return Buffer(p, [owned](void*) mutable { owned.reset(); });
  }

  Buffer allocate_host(size_t bytes) override {
    void* p = nullptr;
    check(cudaMallocHost(&p, std::max<size_t>(bytes, 1)), "allocating pinned host memory");
    return Buffer(p, [](void* q) { cudaFreeHost(q); });
  }

  size_t free_bytes() override {
    size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    return free;
  }

  const void* resident(const HostTensor& t) override {
    ResidentStore& s = resident_store();
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.buffers.find(t.uid());
    if (it != s.buffers.end() && it->second.bytes() >= t.nbytes()) return it->second.get();
    DeviceBuffer buf(std::max<size_t>(t.nbytes(), 1));
    upload_through_pinned(buf.get(), t.data(), t.nbytes());
    const void* p = buf.get();
    if (it != s.buffers.end()) s.uid_at.erase(it->second.get());
    s.buffers[t.uid()] = std::move(buf);
    s.uid_at[p] = t.uid();
    return p;
  }

  static uint64_t resident_uid(const void* p) {
    ResidentStore& s = resident_store();
    std::lock_guard<std::mutex> lock(s.mutex);
    const auto it = s.uid_at.find(p);
    return it == s.uid_at.end() ? 0 : it->second;
  }

  bool is_resident(const HostTensor& t) override {
    ResidentStore& s = resident_store();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.buffers.count(t.uid()) > 0) return true;
    for (const auto& [members, buffer] : s.stacks) {
      if (std::find(members.begin(), members.end(), t.uid()) != members.end()) return true;
    }
    return false;
  }

  const void* resident_stack(std::span<const HostTensor* const> tensors) override {
    std::vector<uint64_t> members;
    size_t bytes = 0;
    for (const HostTensor* t : tensors) {
      members.push_back(t->uid());
      bytes += t->nbytes();
    }
    ResidentStore& s = resident_store();
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.stacks.find(members);
    if (it != s.stacks.end()) return it->second.get();
    DeviceBuffer buf(std::max<size_t>(bytes, 1));
    size_t at = 0;
    for (const HostTensor* t : tensors) {
      upload_through_pinned(static_cast<std::byte*>(buf.get()) + at, t->data(), t->nbytes());
      at += t->nbytes();
    }
    return s.stacks.emplace(std::move(members), std::move(buf)).first->second.get();
  }

  void keep_resident_only(std::span<const uint64_t> uids) override {
    const std::set<uint64_t> keep(uids.begin(), uids.end());
    ResidentStore& s = resident_store();
    std::lock_guard<std::mutex> lock(s.mutex);
    // No backend has work in flight between decodes (each ends by waiting for its tokens), and
    // cudaFree waits for the device anyway.
    for (auto it = s.buffers.begin(); it != s.buffers.end();) {
      if (keep.count(it->first)) {
        ++it;
        continue;
      }
      s.uid_at.erase(it->second.get());
      it = s.buffers.erase(it);
    }
    for (auto it = s.stacks.begin(); it != s.stacks.end();) {
      const bool all_kept = std::all_of(it->first.begin(), it->first.end(),
                                        [&](uint64_t u) { return keep.count(u) > 0; });
      it = all_kept ? std::next(it) : s.stacks.erase(it);
    }
  }

  void upload(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, ctx_.stream()),
          "copying decoder inputs to the device");
  }

  void download(void* dst, const void* src, size_t bytes) override {
    if (bytes) {
      check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, ctx_.stream()),
            "copying decoder results to the host");
    }
    check(cudaStreamSynchronize(ctx_.stream()), "the decoder's kernels");
    in_flight_.clear();  // every call enqueued so far has finished
    indices_.reset();
  }

  void copy_rows(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
                 size_t rows) override {
    if (rows == 0 || width == 0) return;
    check(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, rows, cudaMemcpyDeviceToDevice,
                            ctx_.stream()),
          "copying rows on the device");
  }

  void gemm(const DeviceGemmCall& g, RunNotes* notes) override {
    GemmOperands o;
    static_cast<DeviceGemmCall&>(o) = g;
    // A resident weight is known by its uid, as run()'s GEMM knows it (the same notes and the
    // same kept staged copy on both paths).
    if (o.w_uid == 0) o.w_uid = resident_uid(g.w);
    launch(prepare_gemm_device(ctx_, flavor_, o, notes), true, notes);
  }

  // cuda-invariant: the invariant GEMM's grouped launch (the same chain per element as its
  // per-group calls); the vendor flavors have none (cuBLASLt needs each group's rows on the host).
  bool grouped_gemm(const DeviceGroupedGemmCall& g) override {
    if (flavor_ != CudaFlavor::kInvariant) return false;
    if (g.groups > INT32_MAX || g.max_rows > INT32_MAX || g.n > INT32_MAX || g.k > INT32_MAX) {
      return false;
    }
    kernels::GemmGroupedProblem p;
    p.a = g.a;
    p.w = g.w;
    p.out = g.out;
    p.group_rows = g.group_rows;
    p.groups = static_cast<int>(g.groups);
    p.max_rows = static_cast<int>(g.max_rows);
    p.n = static_cast<int>(g.n);
    p.k = static_cast<int>(g.k);
    p.in_type = elem_type(g.dtype);
    p.out_type = elem_type(g.out_dtype);
    const kernels::GemmDevice device = gemm_device(ctx_);
    if (!kernels::gemm_invariant_grouped_supported(p, device)) return false;
    check(kernels::gemm_invariant_grouped_launch(p, device, forced_wgmma_config(),
                                                 forced_gemm_ctas(), ctx_.stream()),
          "the grouped invariant GEMM");
    return true;
  }

  void rmsnorm(const DeviceRmsNormCall& r, RunNotes* notes) override {
    launch(prepare_rmsnorm_device(ctx_, flavor_, r, notes), false, notes);
  }

  void attention_decode(const AttentionDecodeArgs& args, const DeviceAttentionCall& t,
                        RunNotes* notes) override {
    launch(prepare_attention_decode_device(ctx_, flavor_, args, t, notes, stage_indices_), false,
           notes);
  }

  void attention_prefill(const AttentionPrefillArgs& args, const DeviceAttentionCall& t,
                         RunNotes* notes) override {
    launch(prepare_attention_prefill_device(ctx_, flavor_, args, t, notes, stage_indices_), false,
           notes);
  }

  void gather_rows(const void* table, const int32_t* rows, int64_t count, int64_t row_bytes,
                   void* out) override {
    check(kernels::launch_gather_rows(table, rows, count, row_bytes, out, ctx_.stream()),
          "gathering rows");
  }

  void rope(DType t, void* qkv, int64_t rows, int64_t width, int32_t head_dim,
            int32_t rotated_heads, const float* cos, const float* sin) override {
    check(kernels::launch_rope(elem_type(t), qkv, rows, width, head_dim, rotated_heads, cos, sin,
                               ctx_.stream()),
          "RoPE");
  }

  void kv_write(DType t, const void* qkv, int64_t rows, int64_t width, int64_t q_dim,
                int64_t kv_dim, const int64_t* slots, void* k, void* v) override {
    check(kernels::launch_kv_write(qkv, rows, width, q_dim, kv_dim,
                                   static_cast<int64_t>(dtype_size(t)), slots, k, v, ctx_.stream()),
          "writing the KV cache");
  }

  void residual_add(DType t, void* x, const void* y, int64_t n) override {
    check(kernels::launch_residual_add(elem_type(t), x, y, n, ctx_.stream()), "a residual add");
  }

  void swiglu(DType t, const void* gate_up, void* out, int64_t rows, int64_t inter) override {
    check(kernels::launch_swiglu(elem_type(t), gate_up, out, rows, inter, ctx_.stream()), "SwiGLU");
  }

  void moe_combine(DType t, const void* y, const int32_t* slot, const float* weight, int64_t rows,
                   int64_t k, int64_t hidden, void* out, const void* shared,
                   const float* shared_gate) override {
    check(kernels::launch_moe_combine(elem_type(t), y, slot, weight, rows, k, hidden, out,
                                      ctx_.stream(), shared, shared_gate),
          "MoE combine");
  }

  void moe_route(const float* logits, int64_t rows, int32_t experts, int32_t top_k,
                 bool norm_topk_prob, const DeviceMoeRoute& out) override {
    if (rows * top_k >= INT32_MAX) {
      throw_input_error("MoE routing on the device: rows x top_k beyond 2^31 - 1");
    }
    kernels::MoeRouteOutputs o;
    o.expert = out.expert;
    o.weight = out.weight;
    o.offsets = out.offsets;
    o.row = out.row;
    o.position = out.position;
    o.counts = out.counts;
    check(kernels::launch_moe_route(logits, static_cast<int>(rows), experts, top_k, norm_topk_prob,
                                    o, ctx_.stream()),
          "MoE routing");
  }

  void argmax_rows(const float* logits, int64_t rows, int64_t cols, int32_t* out) override {
    check(kernels::launch_argmax_rows(logits, rows, cols, out, ctx_.stream()), "greedy argmax");
  }

 private:
  // Host -> device through two pinned chunks, the copy of one overlapping the memcpy into the
  // other: several times the rate of a copy from pageable memory, which matters for the 16 GB of
  // an 8B model. Returns once the whole copy has landed.
  void upload_through_pinned(void* dst, const void* src, size_t bytes) {
    constexpr size_t kChunk = size_t{64} << 20;
    if (bytes <= kChunk) {  // small weights: not worth the staging
      check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, ctx_.stream()),
            "uploading a weight");
      check(cudaStreamSynchronize(ctx_.stream()), "uploading a weight");
      return;
    }
    if (!pinned_[0]) {
      for (int i = 0; i < 2; ++i) {
        pinned_[i] = allocate_host(kChunk);
        check(cudaEventCreateWithFlags(&chunk_done_[i], cudaEventDisableTiming),
              "creating an upload event");
      }
    }
    for (size_t off = 0, i = 0; off < bytes; off += kChunk, i ^= 1) {
      const size_t n = std::min(kChunk, bytes - off);
      check(cudaEventSynchronize(chunk_done_[i]), "uploading a weight");  // its last copy is done
      std::memcpy(pinned_[i].get(), static_cast<const std::byte*>(src) + off, n);
      check(cudaMemcpyAsync(static_cast<std::byte*>(dst) + off, pinned_[i].get(), n,
                            cudaMemcpyHostToDevice, ctx_.stream()),
            "uploading a weight");
      check(cudaEventRecord(chunk_done_[i], ctx_.stream()), "uploading a weight");
    }
    check(cudaStreamSynchronize(ctx_.stream()), "uploading a weight");
  }

  // Enqueues the call; its small buffers (plans, page tables) stay alive until the next
  // download() has waited for it.
  void launch(PreparedCall call, bool gemm, RunNotes* notes) {
    add_path_notes(flavor_, gemm, notes);
    check(call.launch(ctx_.stream()), "launching an op of the decoder");
    check(cudaGetLastError(), "launching an op of the decoder");
    in_flight_.push_back(std::move(call));
  }

  DeviceContext& ctx_;
  CudaFlavor flavor_;
  std::vector<PreparedCall> in_flight_;
  // The attention calls' page tables and plans, staged without a synchronisation per call (a
  // wait per layer would leave the device idle while the host enqueues the next one); reset by
  // download(), which has waited for everything that reads them.
  IndexArena indices_;
  // upload_through_pinned()'s two chunks and the events that say their copies have finished.
  Buffer pinned_[2];
  cudaEvent_t chunk_done_[2] = {nullptr, nullptr};
  const IndexUpload stage_indices_ = [this](const void* data, size_t bytes) {
    return indices_.put(data, bytes, ctx_.stream());
  };
};

}  // namespace

std::unique_ptr<DeviceDecodeOps> make_cuda_decode_ops(DeviceContext& ctx, CudaFlavor flavor) {
  return std::make_unique<CudaDecodeOps>(ctx, flavor);
}

}  // namespace nvdet::cuda
