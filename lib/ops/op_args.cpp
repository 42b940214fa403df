// Op names, kinds and the argument checks every backend relies on. A backend may assume that
// validate_op_args passed: shapes agree, dtypes agree, the page table covers every cached token.
// Each failure is one sentence naming the op and the numbers that disagree.
#include "lib/ops/op_args.h"

#include <cmath>
#include <string>

#include "lib/core/error.h"

namespace nvdet {
namespace {

[[noreturn]] void fail(std::string_view op, const std::string& what) {
  throw_input_error(std::string(op) + ": " + what);
}

std::string str(int64_t v) { return std::to_string(v); }

void require_tensor(std::string_view op, const HostTensor* t, const char* name, size_t rank) {
  if (t == nullptr) fail(op, std::string(name) + " is missing");
  if (t->rank() != rank) {
    fail(op, std::string(name) + " must have rank " + str(static_cast<int64_t>(rank)) +
                 " but has shape " + t->shape_string());
  }
}

void require_same_dtype(std::string_view op, const HostTensor& a, const char* a_name,
                        const HostTensor& b, const char* b_name) {
  if (a.dtype() != b.dtype()) {
    fail(op, std::string(b_name) + " is " + std::string(dtype_name(b.dtype())) + " but " + a_name +
                 " is " + std::string(dtype_name(a.dtype())));
  }
}

// The two matrices an op multiplies (its input and a weight): both rank 2, of one dtype.
void require_matrix_pair(std::string_view op, const HostTensor* a, const char* a_name,
                         const HostTensor* b, const char* b_name) {
  require_tensor(op, a, a_name, 2);
  require_tensor(op, b, b_name, 2);
  require_same_dtype(op, *a, a_name, *b, b_name);
}

// An FP8 call's scheme against its quantised weight, and the activation scheme's own numbers.
void validate_fp8(std::string_view op, const Fp8Scheme& s, const Fp8Weight& w, const char* name) {
  if (s.format != w.format || s.weight_scale != w.scale_kind) {
    fail(op, std::string(name) + " is " + std::string(fp8_format_name(w.format)) + " with " +
                 std::string(fp8_weight_scale_name(w.scale_kind)) + " scales but the scheme says " +
                 fp8_scheme_text(s));
  }
  if (static_cast<int64_t>(w.codes.size()) != w.rows * w.cols ||
      static_cast<int64_t>(w.scale_row.size()) != w.rows || w.scales.empty()) {
    fail(op, std::string(name) + " is not a complete FP8 weight of [" + str(w.rows) + ", " +
                 str(w.cols) + "]");
  }
  if (s.act_scale == Fp8ActScale::kStatic &&
      (!std::isfinite(s.static_scale) || s.static_scale <= 0.0f)) {
    fail(op, "the static activation scale must be a positive finite number");
  }
}

void validate(const GemmArgs& g) {
  constexpr std::string_view op = "gemm";
  if (g.is_fp8()) {
    require_tensor(op, g.a, "a", 2);
    if (g.w != nullptr) fail(op, "an FP8 GEMM takes its weight as fp8_w, with w null");
    validate_fp8(op, g.fp8, *g.fp8_w, "fp8_w");
  } else {
    require_matrix_pair(op, g.a, "a", g.w, "w");
  }
  const int64_t m = g.a->dim(0), k = g.a->dim(1);
  const int64_t n = g.is_fp8() ? g.fp8_w->rows : g.w->dim(0);
  const int64_t w_k = g.is_fp8() ? g.fp8_w->cols : g.w->dim(1);
  if (w_k != k) {
    fail(op, "a.k (" + str(k) + ") != w.k (" + str(w_k) + "): a is " + g.a->shape_string() +
                 ", w is [" + str(n) + ", " + str(w_k) + "] ([n, k])");
  }
  if (m <= 0 || n <= 0 || k <= 0) {
    fail(op, "m, n and k must be positive (m=" + str(m) + ", n=" + str(n) + ", k=" + str(k) + ")");
  }
  if (g.bias != nullptr) {
    require_tensor(op, g.bias, "bias", 1);
    require_same_dtype(op, *g.a, "a", *g.bias, "bias");
    if (g.bias->dim(0) != n) {
      fail(op, "bias has " + str(g.bias->dim(0)) + " elements but n is " + str(n));
    }
  }
}

void validate(const RmsNormArgs& r) {
  constexpr std::string_view op = "rmsnorm";
  require_tensor(op, r.x, "x", 2);
  require_tensor(op, r.weight, "weight", 1);
  require_same_dtype(op, *r.x, "x", *r.weight, "weight");
  if (r.x->dim(0) <= 0 || r.x->dim(1) <= 0) {
    fail(op, "x must have at least one row and one column, but has shape " + r.x->shape_string());
  }
  if (r.weight->dim(0) != r.x->dim(1)) {
    fail(op, "weight has " + str(r.weight->dim(0)) + " elements but rows have " + str(r.x->dim(1)));
  }
  if (!std::isfinite(r.eps) || r.eps < 0.0f) fail(op, "eps must be a finite number >= 0");
}

void validate(const LogSoftmaxArgs& l) {
  constexpr std::string_view op = "log_softmax";
  require_tensor(op, l.x, "x", 2);
  if (l.x->dim(0) <= 0 || l.x->dim(1) <= 0) {
    fail(op, "x must have at least one row and one column, but has shape " + l.x->shape_string());
  }
}

// The parts shared by decode and prefill: heads, the paged cache and the page table.
void validate_attention(std::string_view op, const HostTensor* q, const PagedKv& kv,
                        int64_t num_seqs, int32_t num_heads, int32_t num_kv_heads, int32_t head_dim,
                        float scale, const AttentionSplits& splits) {
  if (num_heads <= 0 || num_kv_heads <= 0 || head_dim <= 0) {
    fail(op, "num_heads (" + str(num_heads) + "), num_kv_heads (" + str(num_kv_heads) +
                 ") and head_dim (" + str(head_dim) + ") must be positive");
  }
  if (num_heads % num_kv_heads != 0) {
    fail(op, "num_heads (" + str(num_heads) + ") is not a multiple of num_kv_heads (" +
                 str(num_kv_heads) + ")");
  }
  require_tensor(op, q, "q", 3);
  if (q->dim(1) != num_heads || q->dim(2) != head_dim) {
    fail(op, "q has shape " + q->shape_string() + " but num_heads is " + str(num_heads) +
                 " and head_dim is " + str(head_dim));
  }
  require_tensor(op, kv.k, "the K cache", 4);
  require_tensor(op, kv.v, "the V cache", 4);
  if (kv.k->shape() != kv.v->shape()) {
    fail(op, "the K cache " + kv.k->shape_string() + " and the V cache " + kv.v->shape_string() +
                 " differ in shape");
  }
  require_same_dtype(op, *q, "q", *kv.k, "the K cache");
  require_same_dtype(op, *q, "q", *kv.v, "the V cache");
  if (kv.page_size <= 0) fail(op, "page_size must be positive, got " + str(kv.page_size));
  const int64_t num_pages = kv.k->dim(0);
  if (kv.k->dim(1) != kv.page_size || kv.k->dim(2) != num_kv_heads || kv.k->dim(3) != head_dim) {
    fail(op, "the K cache has shape " + kv.k->shape_string() +
                 " but [num_pages, page_size, num_kv_heads, head_dim] = [*, " + str(kv.page_size) +
                 ", " + str(num_kv_heads) + ", " + str(head_dim) + "] was expected");
  }
  if (!std::isfinite(scale) || scale <= 0.0f) {
    fail(op, "scale must be a positive finite number (usually 1/sqrt(head_dim))");
  }
  if (splits.split_size < 0 || splits.num_splits < 0) {
    fail(op, "split_size and num_splits must be >= 0 (0 = the backend's choice)");
  }
  if (num_seqs <= 0) fail(op, "there must be at least one sequence");
  if (static_cast<int64_t>(kv.kv_lens.size()) != num_seqs) {
    fail(op, "kv_lens has " + str(static_cast<int64_t>(kv.kv_lens.size())) +
                 " entries but there are " + str(num_seqs) + " sequences");
  }
  if (kv.max_pages_per_seq <= 0) {
    fail(op, "max_pages_per_seq must be positive, got " + str(kv.max_pages_per_seq));
  }
  const int64_t table_needed = num_seqs * kv.max_pages_per_seq;
  if (static_cast<int64_t>(kv.page_table.size()) < table_needed) {
    fail(op, "the page table has " + str(static_cast<int64_t>(kv.page_table.size())) +
                 " entries but " + str(num_seqs) + " sequences x " + str(kv.max_pages_per_seq) +
                 " pages need " + str(table_needed));
  }
  for (int64_t s = 0; s < num_seqs; ++s) {
    const int64_t len = kv.kv_lens[s];
    if (len <= 0) fail(op, "sequence " + str(s) + " has kv_len " + str(len) + " (must be > 0)");
    const int64_t pages = (len + kv.page_size - 1) / kv.page_size;
    if (pages > kv.max_pages_per_seq) {
      fail(op, "sequence " + str(s) + " has kv_len " + str(len) + ", which needs " + str(pages) +
                   " pages of " + str(kv.page_size) + " but max_pages_per_seq is " +
                   str(kv.max_pages_per_seq));
    }
    for (int64_t p = 0; p < pages; ++p) {
      const int64_t page = kv.page_table[s * kv.max_pages_per_seq + p];
      if (page < 0 || page >= num_pages) {
        fail(op, "sequence " + str(s) + " page " + str(p) + " maps to page " + str(page) +
                     ", outside the cache's " + str(num_pages) + " pages");
      }
    }
  }
}

void validate(const AttentionDecodeArgs& d) {
  constexpr std::string_view op = "attention_decode";
  if (d.q == nullptr) fail(op, "q is missing");
  validate_attention(op, d.q, d.kv, d.q->rank() == 3 ? d.q->dim(0) : 0, d.num_heads, d.num_kv_heads,
                     d.head_dim, d.scale, d.splits);
}

void validate(const AttentionPrefillArgs& p) {
  constexpr std::string_view op = "attention_prefill";
  if (p.q == nullptr) fail(op, "q is missing");
  if (p.q_start.size() < 2) fail(op, "q_start must have num_seqs + 1 >= 2 entries");
  const int64_t num_seqs = static_cast<int64_t>(p.q_start.size()) - 1;
  validate_attention(op, p.q, p.kv, num_seqs, p.num_heads, p.num_kv_heads, p.head_dim, p.scale,
                     p.splits);
  if (p.q_start.front() != 0) fail(op, "q_start[0] must be 0, got " + str(p.q_start.front()));
  if (p.q_start.back() != p.q->dim(0)) {
    fail(op,
         "q_start ends at " + str(p.q_start.back()) + " but q has " + str(p.q->dim(0)) + " tokens");
  }
  if (!p.prefix_len.empty() && static_cast<int64_t>(p.prefix_len.size()) != num_seqs) {
    fail(op, "prefix_len has " + str(static_cast<int64_t>(p.prefix_len.size())) +
                 " entries but there are " + str(num_seqs) + " sequences");
  }
  for (int64_t s = 0; s < num_seqs; ++s) {
    const int64_t q_len = int64_t{p.q_start[s + 1]} - p.q_start[s];
    if (q_len < 0) fail(op, "q_start decreases at sequence " + str(s));
    const int64_t kv_len = p.kv.kv_lens[s];
    if (q_len > kv_len) {
      fail(op, "sequence " + str(s) + " has " + str(q_len) + " new tokens but only " + str(kv_len) +
                   " cached tokens (the new tokens must already be in the cache)");
    }
    if (!p.prefix_len.empty()) {
      const int64_t prefix = p.prefix_len[s], chunk_start = kv_len - q_len;
      if (prefix < 0 || prefix > chunk_start) {
        fail(op, "sequence " + str(s) + " has prefix_len " + str(prefix) + ", outside [0, " +
                     str(chunk_start) + "] (the tokens before this chunk)");
      }
    }
  }
}

void validate(const MoeArgs& m) {
  constexpr std::string_view op = "moe";
  require_matrix_pair(op, m.x, "x", m.router, "router");
  const int64_t rows = m.x->dim(0), hidden = m.x->dim(1), experts = m.router->dim(0);
  if (rows <= 0 || hidden <= 0) {
    fail(op, "x must have rows and columns, but has shape " + m.x->shape_string());
  }
  if (m.router->dim(1) != hidden) {
    fail(op, "router is " + m.router->shape_string() + " but x has " + str(hidden) + " columns");
  }
  const bool fp8 = m.is_fp8();
  const size_t gate_ups = fp8 ? m.fp8_gate_up.size() : m.gate_up.size();
  const size_t downs = fp8 ? m.fp8_down.size() : m.down.size();
  if (static_cast<int64_t>(gate_ups) != experts || static_cast<int64_t>(downs) != experts ||
      (fp8 && (!m.gate_up.empty() || !m.down.empty()))) {
    fail(op, "the router has " + str(experts) + " experts but there are " +
                 str(static_cast<int64_t>(gate_ups)) + " gate_up and " +
                 str(static_cast<int64_t>(downs)) + " down weights" +
                 (fp8 ? " (FP8 experts take fp8_gate_up and fp8_down only)" : ""));
  }
  if (m.top_k < 1 || m.top_k > experts) {
    fail(op, "top_k (" + str(m.top_k) + ") must be 1 .. experts (" + str(experts) + ")");
  }
  // Each expert's [rows, cols] of gate_up and down.
  const auto dims = [&](int64_t e, bool down) -> std::pair<int64_t, int64_t> {
    if (fp8) {
      const Fp8Weight* w = down ? m.fp8_down[e] : m.fp8_gate_up[e];
      if (w == nullptr) fail(op, "expert " + str(e) + " has no FP8 weight");
      validate_fp8(op, m.fp8, *w, down ? "down" : "gate_up");
      return {w->rows, w->cols};
    }
    const HostTensor* w = down ? m.down[e] : m.gate_up[e];
    require_tensor(op, w, down ? "down" : "gate_up", 2);
    require_same_dtype(op, *m.x, "x", *w, down ? "down" : "gate_up");
    return {w->dim(0), w->dim(1)};
  };
  int64_t inter = 0;
  for (int64_t e = 0; e < experts; ++e) {
    const auto [gu_rows, gu_cols] = dims(e, false);
    const auto [d_rows, d_cols] = dims(e, true);
    if (e == 0) inter = gu_rows / 2;
    if (gu_rows != 2 * inter || inter <= 0 || gu_cols != hidden || d_rows != hidden ||
        d_cols != inter) {
      fail(op, "expert " + str(e) + " has gate_up [" + str(gu_rows) + ", " + str(gu_cols) +
                   "] and down [" + str(d_rows) + ", " + str(d_cols) + "] but [2 x " + str(inter) +
                   ", " + str(hidden) + "] and [" + str(hidden) + ", " + str(inter) +
                   "] were expected");
    }
  }
  for (int64_t r : m.noted_rows) {
    if (r < 0 || r >= rows) {
      fail(op, "noted row " + str(r) + " is outside x's " + str(rows) + " rows");
    }
  }
}

}  // namespace

std::string_view op_name(OpKind op) {
  switch (op) {
    case OpKind::kGemm: return "gemm";
    case OpKind::kRmsNorm: return "rmsnorm";
    case OpKind::kLogSoftmax: return "log_softmax";
    case OpKind::kAttentionDecode: return "attention_decode";
    case OpKind::kAttentionPrefill: return "attention_prefill";
    case OpKind::kMoe: return "moe";
    case OpKind::kModel: return "model";
    case OpKind::kProbe: return "probe";
  }
  return "?";
}

OpKind op_kind(const OpArgs& args) {
  struct Kind {
    OpKind operator()(const GemmArgs&) const { return OpKind::kGemm; }
    OpKind operator()(const RmsNormArgs&) const { return OpKind::kRmsNorm; }
    OpKind operator()(const LogSoftmaxArgs&) const { return OpKind::kLogSoftmax; }
    OpKind operator()(const AttentionDecodeArgs&) const { return OpKind::kAttentionDecode; }
    OpKind operator()(const AttentionPrefillArgs&) const { return OpKind::kAttentionPrefill; }
    OpKind operator()(const MoeArgs&) const { return OpKind::kMoe; }
  };
  return std::visit(Kind{}, args);
}

DType input_dtype(const OpArgs& args) {
  struct Input {
    const HostTensor* operator()(const GemmArgs& g) const { return g.a; }
    const HostTensor* operator()(const RmsNormArgs& r) const { return r.x; }
    const HostTensor* operator()(const LogSoftmaxArgs& l) const { return l.x; }
    const HostTensor* operator()(const AttentionDecodeArgs& d) const { return d.q; }
    const HostTensor* operator()(const AttentionPrefillArgs& p) const { return p.q; }
    const HostTensor* operator()(const MoeArgs& m) const { return m.x; }
  };
  const HostTensor* t = std::visit(Input{}, args);
  if (t == nullptr) {
    throw_input_error(std::string(op_name(op_kind(args))) + ": the input tensor is missing");
  }
  return t->dtype();
}

bool is_fp8(const OpArgs& args) {
  if (const auto* g = std::get_if<GemmArgs>(&args)) return g->is_fp8();
  if (const auto* m = std::get_if<MoeArgs>(&args)) return m->is_fp8();
  return false;
}

void validate_op_args(const OpArgs& args, bool computes_fp8) {
  if (!computes_fp8 && is_fp8(args)) {
    throw_input_error(std::string(op_name(op_kind(args))) +
                      ": this backend does not compute FP8 (the key 'fp8'); README.md \"FP8\" "
                      "lists the backends that do");
  }
  std::visit([](const auto& a) { validate(a); }, args);
}

}  // namespace nvdet
