// SDPA forward graphs; see cudnn_graphs.h. The tensors are described as cuDNN's SDPA wants them,
// [batch, heads, sequence, dim] by strides, over nvdet's own buffers:
//  - Q and O: nvdet's [tokens, heads, dim] rows; with equal query lengths the batch is a plain
//    [batch, heads, q_len, dim] view; with unequal ones, a ragged view whose per-sequence start
//    offsets (elements) are given in a tensor;
//  - K and V: the page pool, [pages, kv_heads, page_size, dim] in cuDNN's terms, over nvdet's
//    [pages, page_size, kv_heads, dim] storage by strides, read through the page table
//    [batch, 1, max_pages, 1] (one table serves K and V);
//  - the per-sequence lengths go in as seq_len_q / seq_len_kv with the padding mask on; prefill
//    adds the causal mask aligned bottom-right, so new token i of a sequence with q_len new tokens
//    and kv_len cached ones sees positions [0, kv_len - q_len + i].
#include "lib/cudnn/cudnn_graphs.h"

#include <cudnn_frontend.h>

#include <cstring>

#include "lib/core/error.h"

namespace nvdet::cudnn {

namespace fe = cudnn_frontend;

class SdpaGraph {
 public:
  fe::graph::Graph graph;
};

namespace {

fe::DataType_t fe_type(DType t) {
  return t == DType::kFP16 ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16;
}

std::shared_ptr<fe::graph::Tensor_attributes> int32_tensor(fe::graph::Graph& g, const char* name,
                                                           int64_t uid, std::vector<int64_t> dim,
                                                           std::vector<int64_t> stride) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim(std::move(dim))
                      .set_stride(std::move(stride))
                      .set_data_type(fe::DataType_t::INT32));
}

void describe(fe::graph::Graph& g, const SdpaGeometry& s) {
  g.set_io_data_type(fe_type(s.dtype))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const int64_t b = s.batch, h = s.heads, hk = s.kv_heads, d = s.head_dim, sq = s.max_q_len;
  const std::vector<int64_t> qo_dim = {b, h, sq, d};
  const std::vector<int64_t> qo_stride = {sq * h * d, d, h * d, 1};
  auto q_attr =
      fe::graph::Tensor_attributes().set_name("Q").set_uid(kUidQ).set_dim(qo_dim).set_stride(
          qo_stride);
  std::shared_ptr<fe::graph::Tensor_attributes> o_offset;
  if (s.ragged_q) {
    q_attr.set_ragged_offset(
        int32_tensor(g, "q_offset", kUidQOffset, {b + 1, 1, 1, 1}, {1, 1, 1, 1}));
    o_offset = int32_tensor(g, "o_offset", kUidOOffset, {b + 1, 1, 1, 1}, {1, 1, 1, 1});
  }
  auto q = g.tensor(q_attr);
  const int64_t ps = s.page_size;
  const std::vector<int64_t> kv_dim = {s.num_pages, hk, ps, d};
  const std::vector<int64_t> kv_stride = {ps * hk * d, d, hk * d,
                                          1};  // nvdet's [page, token, head, dim]
  auto k = g.tensor(
      fe::graph::Tensor_attributes().set_name("K_pages").set_uid(kUidK).set_dim(kv_dim).set_stride(
          kv_stride));
  auto v = g.tensor(
      fe::graph::Tensor_attributes().set_name("V_pages").set_uid(kUidV).set_dim(kv_dim).set_stride(
          kv_stride));
  const int64_t mp = s.max_pages_per_seq;
  auto seq_q = int32_tensor(g, "seq_len_q", kUidSeqLenQ, {b, 1, 1, 1}, {1, 1, 1, 1});
  auto seq_kv = int32_tensor(g, "seq_len_kv", kUidSeqLenKv, {b, 1, 1, 1}, {1, 1, 1, 1});
  auto table_k = int32_tensor(g, "page_table_k", kUidPageTableK, {b, 1, mp, 1}, {mp, mp, 1, 1});
  auto table_v = int32_tensor(g, "page_table_v", kUidPageTableV, {b, 1, mp, 1}, {mp, mp, 1, 1});

  auto opts = fe::graph::SDPA_attributes()
                  .set_name("sdpa")
                  .set_generate_stats(false)
                  .set_attn_scale(s.scale)
                  .set_padding_mask(true)
                  .set_seq_len_q(seq_q)
                  .set_seq_len_kv(seq_kv)
                  .set_paged_attention_k_table(table_k)
                  .set_paged_attention_v_table(table_v)
                  .set_paged_attention_max_seq_len_kv(static_cast<int>(mp * ps));
  if (s.causal) opts.set_causal_mask_bottom_right(true);
  auto [o, stats] = g.sdpa(q, k, v, opts);
  (void)stats;
  o->set_output(true).set_uid(kUidO).set_dim(qo_dim).set_stride(qo_stride);
  if (o_offset) o->set_ragged_offset(o_offset);
}

}  // namespace

std::string SdpaGeometry::key() const {
  uint32_t scale_bits = 0;
  std::memcpy(&scale_bits, &scale, sizeof(scale_bits));
  return std::to_string(static_cast<int>(dtype)) + "/" + std::to_string(batch) + "/" +
         std::to_string(heads) + "/" + std::to_string(kv_heads) + "/" + std::to_string(head_dim) +
         "/" + std::to_string(max_q_len) + "/" + std::to_string(ragged_q) + "/" +
         std::to_string(causal) + "/" + std::to_string(num_pages) + "/" +
         std::to_string(page_size) + "/" + std::to_string(max_pages_per_seq) + "/" +
         std::to_string(scale_bits);
}

BuiltGraph build_sdpa_graph(cudnnContext* handle, const SdpaGeometry& geometry, std::string& why) {
  auto owned = std::make_shared<SdpaGraph>();
  fe::graph::Graph& g = owned->graph;
  BuiltGraph out;
  try {
    describe(g, geometry);
  } catch (const std::exception& e) {
    why = e.what();
    return out;
  }
  // validate / operation graph / heuristics / support: a failure here means cuDNN does not take
  // this configuration (the caller refuses it, exit 2). A failure to build the chosen plan or
  // to size its workspace is a runtime failure.
  fe::error_t st = g.validate();
  if (st.is_good()) st = g.build_operation_graph(handle);
  if (st.is_good()) st = g.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK});
  if (st.is_good()) st = g.check_support(handle);
  if (!st.is_good()) {
    why = st.get_message();
    return out;
  }
  st = g.build_plans(handle, fe::BuildPlanPolicy_t::HEURISTICS_CHOICE);
  if (!st.is_good())
    throw_runtime_error("cuDNN could not build its SDPA plan: " + st.get_message());
  int64_t ws = 0;
  st = g.get_workspace_size(ws);
  if (!st.is_good()) throw_runtime_error("cuDNN SDPA workspace query failed: " + st.get_message());
  std::string name;
  if (!g.get_plan_name(name).is_good()) name = "(unnamed)";
  out.graph = owned;
  out.workspace_bytes = ws;
  out.plan_name = name;
  return out;
}

cudnnContext* create_cudnn_handle() {
  cudnnHandle_t handle = nullptr;
  const cudnnStatus_t st = fe::detail::create_handle(&handle);
  if (st != CUDNN_STATUS_SUCCESS) {
    throw_runtime_error(std::string("cudnnCreate failed: ") + fe::detail::get_error_string(st));
  }
  return handle;
}

void destroy_cudnn_handle(cudnnContext* handle) {
  if (handle) fe::detail::destroy_handle(handle);
}

std::string cudnn_frontend_version_text() {
  return std::to_string(CUDNN_FRONTEND_MAJOR_VERSION) + "." +
         std::to_string(CUDNN_FRONTEND_MINOR_VERSION) + "." +
         std::to_string(CUDNN_FRONTEND_PATCH_VERSION);
}

void execute_sdpa_graph(cudnnContext* handle, cudaStream_t stream, const SdpaGraph& graph,
                        std::unordered_map<int64_t, void*>& pointers, void* workspace) {
  const cudnnStatus_t ss = fe::detail::set_stream(handle, stream);
  if (ss != CUDNN_STATUS_SUCCESS) {
    throw_runtime_error(std::string("cudnnSetStream failed: ") + fe::detail::get_error_string(ss));
  }
  fe::error_t st = graph.graph.execute(handle, pointers, workspace);
  if (!st.is_good()) throw_runtime_error("cuDNN SDPA execution failed: " + st.get_message());
}

}  // namespace nvdet::cudnn
