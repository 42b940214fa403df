#pragma once
// The device-resident decode engine without a GPU (model_device_engine_test.cpp,
// traffic_replay_test.cpp): a fake DeviceDecodeOps that keeps its "device" buffers in host
// memory, runs the backend ops through a CPU backend's run() and the elementwise steps as
// host_ops.h defines them, and a CPU backend that offers it. The engine must then reproduce the
// host engine bit for bit.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/backend/device_decode_ops.h"
#include "lib/model/host_ops.h"
#include "lib/ops/moe_routing.h"

namespace nvdet::testing {

inline HostTensor tensor_at(const void* p, DType t, std::vector<int64_t> shape) {
  HostTensor out(t, std::move(shape));
  std::memcpy(out.mutable_data(), p, out.nbytes());
  return out;
}

class HostMemoryOps final : public DeviceDecodeOps {
 public:
  explicit HostMemoryOps(Backend& cpu) : cpu_(cpu) {}
  size_t free = size_t{1} << 40;
  int uploads_of_weights = 0;
  bool offer_grouped = true;  // grouped_gemm() as cuda-invariant offers it
  int grouped_launches = 0;

  Buffer allocate(size_t bytes) override {
    return Buffer(new std::byte[std::max<size_t>(bytes, 1)](),
                  [](void* p) { delete[] static_cast<std::byte*>(p); });
  }
  size_t free_bytes() override { return free; }
  const void* resident(const HostTensor& t) override {
    auto it = resident_.find(t.uid());
    if (it == resident_.end()) {
      ++uploads_of_weights;
      it =
          resident_.emplace(t.uid(), std::vector<std::byte>(t.data(), t.data() + t.nbytes())).first;
    }
    return it->second.data();
  }
  bool is_resident(const HostTensor& t) override {
    if (resident_.count(t.uid()) > 0) return true;
    for (const auto& [members, bytes] : stacks_) {
      if (std::find(members.begin(), members.end(), t.uid()) != members.end()) return true;
    }
    return false;
  }
  void keep_resident_only(std::span<const uint64_t> uids) override {
    std::map<uint64_t, std::vector<std::byte>> kept;
    for (uint64_t u : uids) {
      if (auto it = resident_.find(u); it != resident_.end()) kept.insert(*it);
    }
    resident_ = std::move(kept);
    for (auto it = stacks_.begin(); it != stacks_.end();) {
      const bool all_kept = std::all_of(it->first.begin(), it->first.end(), [&](uint64_t u) {
        return std::find(uids.begin(), uids.end(), u) != uids.end();
      });
      it = all_kept ? std::next(it) : stacks_.erase(it);
    }
  }
  const void* resident_stack(std::span<const HostTensor* const> tensors) override {
    std::vector<uint64_t> members;
    for (const HostTensor* t : tensors) members.push_back(t->uid());
    auto it = stacks_.find(members);
    if (it == stacks_.end()) {
      std::vector<std::byte> bytes;
      for (const HostTensor* t : tensors) {
        ++uploads_of_weights;
        bytes.insert(bytes.end(), t->data(), t->data() + t->nbytes());
      }
      it = stacks_.emplace(std::move(members), std::move(bytes)).first;
    }
    return it->second.data();
  }
  // An empty tensor has no storage (null data): copy nothing, as cudaMemcpy of 0 bytes does.
  void upload(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void download(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void copy_rows(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
                 size_t rows) override {
    for (size_t r = 0; r < rows; ++r) {
      std::memcpy(static_cast<std::byte*>(dst) + r * dst_pitch,
                  static_cast<const std::byte*>(src) + r * src_pitch, width);
    }
  }

  void gemm(const DeviceGemmCall& g, RunNotes* notes) override {
    const HostTensor a = tensor_at(g.a, g.dtype, {g.m, g.k});
    const HostTensor w = tensor_at(g.w, g.dtype, {g.n, g.k});
    const HostTensor bias = g.bias ? tensor_at(g.bias, g.dtype, {g.n}) : HostTensor();
    GemmArgs args;
    args.a = &a;
    args.w = &w;
    args.bias = g.bias ? &bias : nullptr;
    args.out_dtype = g.out_dtype;
    put(cpu_.run(args, notes), g.out);
  }
  // The groups' GEMMs one call each, as gemm() runs them: the decoder's grouped path gives the
  // bits of its per-group path by construction here; on the GPU the test of the grouped kernel
  // checks it.
  bool grouped_gemm(const DeviceGroupedGemmCall& g) override {
    if (!offer_grouped) return false;
    const size_t e = dtype_size(g.dtype), out_e = dtype_size(g.out_dtype);
    for (int64_t q = 0; q < g.groups; ++q) {
      const int32_t begin = g.group_rows[q], rows = g.group_rows[q + 1] - begin;
      if (rows == 0) continue;
      DeviceGemmCall call;
      call.a = static_cast<const std::byte*>(g.a) + static_cast<size_t>(begin * g.k) * e;
      call.w = static_cast<const std::byte*>(g.w) + static_cast<size_t>(q * g.n * g.k) * e;
      call.out = static_cast<std::byte*>(g.out) + static_cast<size_t>(begin * g.n) * out_e;
      call.m = rows;
      call.n = g.n;
      call.k = g.k;
      call.dtype = g.dtype;
      call.out_dtype = g.out_dtype;
      gemm(call, nullptr);
    }
    ++grouped_launches;
    return true;
  }
  void rmsnorm(const DeviceRmsNormCall& r, RunNotes* notes) override {
    const HostTensor x = tensor_at(r.x, r.dtype, {r.rows, r.d});
    const HostTensor w = tensor_at(r.weight, r.dtype, {r.d});
    RmsNormArgs args;
    args.x = &x;
    args.weight = &w;
    args.eps = r.eps;
    args.out_dtype = r.out_dtype;
    put(cpu_.run(args, notes), r.out);
  }
  template <class A>
  void attention(A args, int64_t rows, const DeviceAttentionCall& t, RunNotes* notes) {
    int32_t pages = 1;
    for (int32_t p : args.kv.page_table) pages = std::max(pages, p + 1);
    const std::vector<int64_t> kv_shape = {pages, args.kv.page_size, args.num_kv_heads,
                                           args.head_dim};
    const HostTensor q = tensor_at(t.q, t.dtype, {rows, args.num_heads, args.head_dim});
    const HostTensor k = tensor_at(t.k, t.dtype, kv_shape);
    const HostTensor v = tensor_at(t.v, t.dtype, kv_shape);
    args.q = &q;
    args.kv.k = &k;
    args.kv.v = &v;
    put(cpu_.run(args, notes), t.out);
  }
  void attention_decode(const AttentionDecodeArgs& a, const DeviceAttentionCall& t,
                        RunNotes* notes) override {
    attention(a, static_cast<int64_t>(a.kv.kv_lens.size()), t, notes);
  }
  void attention_prefill(const AttentionPrefillArgs& a, const DeviceAttentionCall& t,
                         RunNotes* notes) override {
    attention(a, a.q_start.back(), t, notes);
  }

  void gather_rows(const void* table, const int32_t* rows, int64_t count, int64_t row_bytes,
                   void* out) override {
    for (int64_t i = 0; i < count; ++i) {
      std::memcpy(static_cast<std::byte*>(out) + i * row_bytes,
                  static_cast<const std::byte*>(table) + rows[i] * row_bytes, row_bytes);
    }
  }
  void rope(DType t, void* qkv, int64_t rows, int64_t width, int32_t head_dim,
            int32_t rotated_heads, const float* cos, const float* sin) override {
    auto* base = static_cast<std::byte*>(qkv);
    const int32_t half = head_dim / 2;
    for (int64_t r = 0; r < rows; ++r) {
      for (int32_t h = 0; h < rotated_heads; ++h) {
        const int64_t head = r * width + int64_t{h} * head_dim;
        for (int32_t i = 0; i < half; ++i) {
          const float x0 = load_element(base, t, head + i),
                      x1 = load_element(base, t, head + i + half);
          const float c = cos[r * half + i], s = sin[r * half + i];
          store_element(base, t, head + i, x0 * c - x1 * s);
          store_element(base, t, head + i + half, x1 * c + x0 * s);
        }
      }
    }
  }
  void kv_write(DType t, const void* qkv, int64_t rows, int64_t width, int64_t q_dim,
                int64_t kv_dim, const int64_t* slots, void* k, void* v) override {
    const size_t e = dtype_size(t), bytes = static_cast<size_t>(kv_dim) * e;
    for (int64_t r = 0; r < rows; ++r) {
      const auto* src = static_cast<const std::byte*>(qkv) + (r * width + q_dim) * e;
      std::memcpy(static_cast<std::byte*>(k) + slots[r] * bytes, src, bytes);
      std::memcpy(static_cast<std::byte*>(v) + slots[r] * bytes, src + bytes, bytes);
    }
  }
  void residual_add(DType t, void* x, const void* y, int64_t n) override {
    put(add(tensor_at(x, t, {n}), tensor_at(y, t, {n})), x);
  }
  void swiglu(DType t, const void* gate_up, void* out, int64_t rows, int64_t inter) override {
    put(nvdet::swiglu(tensor_at(gate_up, t, {rows, 2 * inter})), out);
  }
  void moe_combine(DType t, const void* y, const int32_t* slot, const float* weight, int64_t rows,
                   int64_t k, int64_t hidden, void* out, const void* shared,
                   const float* shared_gate) override {
    int64_t y_rows = 0;
    for (int64_t i = 0; i < rows * k; ++i) y_rows = std::max<int64_t>(y_rows, slot[i] + 1);
    const size_t n = static_cast<size_t>(rows * k);
    const HostTensor s = shared ? tensor_at(shared, t, {rows, hidden}) : HostTensor();
    put(combine_rows(tensor_at(y, t, {y_rows, hidden}), {slot, n}, {weight, n}, k,
                     shared ? &s : nullptr, shared_gate),
        out);
  }
  // The host's routing and layout; a row with a non-finite logit is flagged as the device flags
  // it (the host's route_tokens would throw instead).
  void moe_route(const float* logits, int64_t rows, int32_t experts, int32_t top_k,
                 bool norm_topk_prob, const DeviceMoeRoute& out) override {
    int32_t bad = -1;
    for (int64_t i = 0; i < rows * experts && bad < 0; ++i) {
      if (!std::isfinite(logits[i])) bad = static_cast<int32_t>(i / experts);
    }
    out.offsets[experts + 1] = bad + 1;
    if (bad >= 0) return;
    const MoeRoute route = route_tokens({logits, static_cast<size_t>(rows * experts)},
                                        static_cast<int>(rows), experts, top_k, norm_topk_prob);
    const MoeExpertRows layout = group_rows_by_expert(route, experts);
    std::copy(route.expert.begin(), route.expert.end(), out.expert);
    std::copy(route.weight.begin(), route.weight.end(), out.weight);
    std::copy(layout.offsets.begin(), layout.offsets.end(), out.offsets);
    std::copy(layout.row.begin(), layout.row.end(), out.row);
    std::copy(layout.position.begin(), layout.position.end(), out.position);
  }
  void argmax_rows(const float* logits, int64_t rows, int64_t cols, int32_t* out) override {
    const HostTensor l = tensor_at(logits, DType::kFP32, {rows, cols});
    for (int64_t r = 0; r < rows; ++r) out[r] = argmax_row(l, r);
  }

 private:
  static void put(const HostTensor& t, void* dst) { std::memcpy(dst, t.data(), t.nbytes()); }
  Backend& cpu_;
  std::map<uint64_t, std::vector<std::byte>> resident_;
  std::map<std::vector<uint64_t>, std::vector<std::byte>> stacks_;
};

// A CPU backend that offers the fake device entry points.
class FakeDeviceBackend final : public Backend {
 public:
  explicit FakeDeviceBackend(const std::string& cpu) : cpu_(make_backend(cpu)), ops(*cpu_) {}
  const BackendInfo& info() const override { return cpu_->info(); }
  HostTensor run(const OpArgs& args, RunNotes* notes) override { return cpu_->run(args, notes); }
  DeviceDecodeOps* device_decode_ops() override { return &ops; }

 private:
  std::unique_ptr<Backend> cpu_;

 public:
  HostMemoryOps ops;
};

}  // namespace nvdet::testing
