// The `cudnn` backend: each attention call becomes one cuDNN SDPA forward graph (cudnn_graphs.h)
// run over nvdet's paged KV cache, uploaded as is (cuDNN reads nvdet's page layout through
// strides; cuDNN 9.19 on the H200 took it, and a cuDNN that does not is refused with its reason).
// What cuDNN decides (its version, the engine and knobs its heuristic picked, how K/V were
// described) goes into the run notes, so that a divergence between contexts can be traced to a
// change of engine or split.
#include "lib/cudnn/cudnn_backend.h"

#include <algorithm>
#include <map>
#include <memory>

#include "lib/core/error.h"
#include "lib/cuda/cuda_ops.h"
#include "lib/cudnn/cudnn_graphs.h"
#include "lib/cudnn/cudnn_library.h"

namespace nvdet::cudnn {
namespace {

using cuda::DeviceBuffer;
using cuda::DeviceContext;
using cuda::PreparedCall;

// What one call asks of cuDNN, independent of decode or prefill.
struct SdpaCall {
  const char* op;
  const HostTensor* q;
  const PagedKv* kv;
  std::vector<int32_t> q_lens;   // [batch]
  std::vector<int32_t> q_start;  // [batch + 1], rows of q
  int32_t heads, kv_heads, head_dim;
  float scale;
  bool causal;
  DType out_dtype;
  AttentionSplits splits;
};

// cuDNN's paged kernels read the page table a whole KV tile at a time: a sequence whose last
// page ends mid-tile has the entries past its row read too, and for the batch's last row that is
// past the table (compute-sanitizer's memcheck caught the sm80 flash kernel reading one entry
// past a 3 x 35 table at page size 32). Each row is padded to a multiple of kPageTableTileTokens
// tokens (more than any cuDNN KV tile) with copies of the row's last page: a valid page index
// whose tokens the padding mask hides, so the result is unchanged.
constexpr int64_t kPageTableTileTokens = 256;

struct PaddedPageTable {
  int32_t pages_per_seq = 0;
  std::vector<int32_t> entries;  // [num_seqs * pages_per_seq]
};

PaddedPageTable pad_page_table(const PagedKv& kv) {
  const int64_t ps = std::max<int32_t>(kv.page_size, 1);
  const int64_t mp = kv.max_pages_per_seq;
  const int64_t tokens =
      (mp * ps + kPageTableTileTokens - 1) / kPageTableTileTokens * kPageTableTileTokens;
  PaddedPageTable t;
  t.pages_per_seq = static_cast<int32_t>(std::max<int64_t>((tokens + ps - 1) / ps, 1));
  const size_t seqs = mp > 0 ? kv.page_table.size() / static_cast<size_t>(mp) : 0;
  t.entries.reserve(seqs * static_cast<size_t>(t.pages_per_seq));
  for (size_t s = 0; s < seqs; ++s) {
    const auto row = kv.page_table.begin() + static_cast<std::ptrdiff_t>(s * mp);
    t.entries.insert(t.entries.end(), row, row + mp);
    t.entries.insert(t.entries.end(), static_cast<size_t>(t.pages_per_seq - mp), row[mp - 1]);
  }
  return t;
}

// Settings that would change what is computed and that cuDNN cannot honour are refused.
void check_request(const SdpaCall& c) {
  const DType dt = c.q->dtype();
  if (dt != DType::kBF16 && dt != DType::kFP16) {
    throw_input_error(std::string(c.op) + " on backend 'cudnn' takes bf16 or fp16 inputs, got " +
                      std::string(dtype_name(dt)));
  }
  if (c.out_dtype != dt) {
    throw_input_error(std::string(c.op) +
                      " on backend 'cudnn': cuDNN's SDPA writes its output in "
                      "the input dtype (" +
                      std::string(dtype_name(dt)) + "); out_dtype " +
                      std::string(dtype_name(c.out_dtype)) + " is not available");
  }
  if (c.splits.num_splits != 0) {
    throw_input_error("backend 'cudnn' does not take num_splits: cuDNN chooses its own KV split");
  }
  if (c.splits.split_size != 0) {
    throw_input_error("backend 'cudnn' does not take split_size: cuDNN chooses its own KV split");
  }
  const double q_elems = static_cast<double>(c.q->numel());
  if (q_elems >= 2147483647.0) {
    throw_input_error(std::string(c.op) +
                      " on backend 'cudnn': the query tensor has more than "
                      "2^31 elements, beyond cuDNN's 32-bit ragged offsets");
  }
}

class CudnnBackend final : public Backend {
 public:
  explicit CudnnBackend(BackendInfo info) : info_(std::move(info)) {
    load_cudnn_library();
    ctx_ = std::make_unique<DeviceContext>();
    version_ = cudnn_runtime_version();
    handle_ = create_cudnn_handle();
  }
  ~CudnnBackend() override {
    graphs_.clear();
    destroy_cudnn_handle(handle_);
  }

  const BackendInfo& info() const override { return info_; }

  HostTensor run(const OpArgs& args, RunNotes* notes) override {
    validate_op_args(args);
    PreparedCall call = prepare(args, notes);
    return cuda::run_prepared(*ctx_, call);
  }

  std::optional<Timing> time(const OpArgs& args, const TimingOptions& opts) override {
    validate_op_args(args);
    PreparedCall call = prepare(args, nullptr);
    return cuda::time_prepared(*ctx_, call, opts);
  }

  std::optional<double> copy_bandwidth_gbps(const TimingOptions& opts) override {
    return cuda::measure_copy_bandwidth_gbps(*ctx_, opts);
  }

 private:
  PreparedCall prepare(const OpArgs& args, RunNotes* notes) {
    if (const auto* d = std::get_if<AttentionDecodeArgs>(&args)) {
      SdpaCall c{"attention_decode", d->q,        &d->kv,   {},    {},           d->num_heads,
                 d->num_kv_heads,    d->head_dim, d->scale, false, d->out_dtype, d->splits};
      const int32_t batch = static_cast<int32_t>(d->kv.kv_lens.size());
      c.q_lens.assign(batch, 1);
      for (int32_t i = 0; i <= batch; ++i) c.q_start.push_back(i);
      return prepare_sdpa(c, notes);
    }
    if (const auto* p = std::get_if<AttentionPrefillArgs>(&args)) {
      SdpaCall c{"attention_prefill", p->q,        &p->kv,   {},   p->q_start,   p->num_heads,
                 p->num_kv_heads,     p->head_dim, p->scale, true, p->out_dtype, p->splits};
      for (size_t i = 0; i + 1 < p->q_start.size(); ++i) {
        c.q_lens.push_back(p->q_start[i + 1] - p->q_start[i]);
      }
      return prepare_sdpa(c, notes);
    }
    throw_input_error("backend 'cudnn' computes attention_decode and attention_prefill only, not " +
                      std::string(op_name(op_kind(args))));
  }

  // The graph for `g`, built on first use. What cuDNN does not support is refused (exit 2) with
  // cuDNN's reason, then and on every later call with the same geometry.
  const BuiltGraph& graph_for(const SdpaGeometry& g, const char* op) {
    const std::string key = g.key();
    auto it = graphs_.find(key);
    if (it == graphs_.end()) {
      if (graphs_.size() > 256) {  // a sweep's geometries; bounded all the same
        graphs_.clear();
        refusals_.clear();
      }
      std::string why;
      BuiltGraph built = build_sdpa_graph(handle_, g, why);
      if (!built.graph) refusals_[key] = why;
      it = graphs_.emplace(key, std::move(built)).first;
    }
    if (it->second.graph) return it->second;
    throw_input_error(std::string(op) + " with " + std::to_string(g.heads) + "/" +
                      std::to_string(g.kv_heads) + " heads x " + std::to_string(g.head_dim) +
                      ", page_size " + std::to_string(g.page_size) + (g.causal ? ", causal" : "") +
                      (g.ragged_q ? ", ragged queries" : "") + " is not supported by cuDNN " +
                      cudnn_version_text(version_) + "'s SDPA: " + refusals_[key]);
  }

  PreparedCall prepare_sdpa(const SdpaCall& c, RunNotes* notes) {
    check_request(c);
    const PagedKv& kv = *c.kv;
    SdpaGeometry g;
    g.dtype = c.q->dtype();
    g.batch = static_cast<int64_t>(c.q_lens.size());
    g.heads = c.heads;
    g.kv_heads = c.kv_heads;
    g.head_dim = c.head_dim;
    g.max_q_len = 1;
    bool equal = true;
    for (int32_t len : c.q_lens) {
      g.max_q_len = std::max<int64_t>(g.max_q_len, len);
      equal = equal && len == c.q_lens.front();
    }
    g.ragged_q = !equal;
    g.causal = c.causal;
    g.num_pages = kv.k->shape()[0];
    g.page_size = kv.page_size;
    const PaddedPageTable table = pad_page_table(kv);
    g.max_pages_per_seq = table.pages_per_seq;
    g.scale = c.scale;
    const BuiltGraph& built = graph_for(g, c.op);

    PreparedCall call;
    const int64_t rows = c.q->shape()[0];
    call.out_dtype = c.q->dtype();
    call.out_shape = {rows, c.heads, c.head_dim};
    call.owned.emplace_back(static_cast<size_t>(rows) * c.heads * c.head_dim *
                            dtype_size(call.out_dtype));
    call.output = call.owned.back().get();
    std::unordered_map<int64_t, void*> ptrs;
    ptrs[kUidO] = call.owned.back().get();
    ptrs[kUidQ] = const_cast<void*>(ctx_->upload(*c.q));
    ptrs[kUidK] = const_cast<void*>(ctx_->upload(*kv.k));
    ptrs[kUidV] = const_cast<void*>(ctx_->upload(*kv.v));
    auto add_array = [&](int64_t uid, const std::vector<int32_t>& values) {
      call.owned.push_back(ctx_->upload_array(values.data(), values.size() * sizeof(int32_t)));
      ptrs[uid] = call.owned.back().get();
    };
    add_array(kUidSeqLenQ, c.q_lens);
    add_array(kUidSeqLenKv, kv.kv_lens);
    add_array(kUidPageTableK, table.entries);
    ptrs[kUidPageTableV] = ptrs[kUidPageTableK];
    if (g.ragged_q) {
      std::vector<int32_t> offsets;
      for (int32_t s : c.q_start) offsets.push_back(s * c.heads * c.head_dim);
      add_array(kUidQOffset, offsets);
      ptrs[kUidOOffset] = ptrs[kUidQOffset];
    }
    void* workspace = built.workspace_bytes > 0
                          ? ctx_->workspace(static_cast<size_t>(built.workspace_bytes))
                          : nullptr;
    std::shared_ptr<SdpaGraph> graph = built.graph;
    cudnnContext* handle = handle_;
    call.launch = [graph, handle, ptrs, workspace](cudaStream_t s) mutable {
      execute_sdpa_graph(handle, s, *graph, ptrs, workspace);
      return cudaGetLastError();
    };
    if (notes) {
      (*notes)["kernel"] = "cudnn_sdpa_fprop";
      (*notes)["cudnn_version"] = cudnn_version_text(version_);
      (*notes)["cudnn_frontend"] = cudnn_frontend_version_text();
      (*notes)["engine"] = built.plan_name;
      (*notes)["workspace_bytes"] = std::to_string(built.workspace_bytes);
      (*notes)["kv_layout"] = "paged, nvdet's [page, token, kv_head, dim] by strides";
      (*notes)["page_table"] = std::to_string(table.pages_per_seq) + " entries a sequence (" +
                               std::to_string(kv.max_pages_per_seq) +
                               " used, the rest the last page again: cuDNN reads whole tiles)";
      (*notes)["q_layout"] = g.ragged_q ? "ragged" : "padded";
      if (c.causal) (*notes)["mask"] = "padding + causal (bottom-right)";
      else (*notes)["mask"] = "padding";
    }
    return call;
  }

  BackendInfo info_;
  std::unique_ptr<DeviceContext> ctx_;
  size_t version_ = 0;
  cudnnContext* handle_ = nullptr;
  std::map<std::string, BuiltGraph> graphs_;     // by SdpaGeometry::key(); empty graph: refused
  std::map<std::string, std::string> refusals_;  // cuDNN's reason, by key
};

}  // namespace

std::string cudnn_unavailable_reason() { return ""; }

std::unique_ptr<Backend> make_cudnn_backend(const BackendInfo& info) {
  return std::make_unique<CudnnBackend>(info);
}

}  // namespace nvdet::cudnn
