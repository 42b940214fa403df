#include "lib/runner/budget.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "lib/core/checked_parse.h"
#include "lib/core/error.h"
#include "lib/core/host_memory.h"
#include "lib/model/checkpoint.h"

namespace nvdet {
namespace {

double bytes_of(DType t) { return static_cast<double>(dtype_size(t)); }

// The largest integer an axis takes, or `fallback` when the scenario does not sweep it (or sweeps
// it only with words such as 'whole' or 'same').
double axis_max(const Scenario& s, std::string_view axis, double fallback) {
  for (const SweepAxis& a : s.sweep) {
    if (a.name != axis) continue;
    double best = -1;
    for (const AxisValue& v : a.values)
      if (const auto* i = std::get_if<int64_t>(&v)) best = std::max(best, static_cast<double>(*i));
    return best < 0 ? fallback : std::max(best, fallback);
  }
  return fallback;
}

// Without a batch axis the batch is exactly the probed requests.
double batch_max(const Scenario& s) {
  const double probed = static_cast<double>(std::max<size_t>(s.requests.size(), 1));
  for (const SweepAxis& a : s.sweep)
    if (a.name == "batch") return axis_max(s, "batch", probed);
  return probed;
}

struct Parts {
  double inputs = 0, weights = 0, kv = 0, outputs = 0, workspace = 0;
  double total() const { return inputs + weights + kv + outputs + workspace; }
  std::string text() const {
    std::vector<std::string> items;
    const auto add = [&](const char* name, double b) {
      if (b > 0) items.push_back(fmt::format("{} {}", name, byte_size_text(b)));
    };
    add("inputs", inputs);
    add("weights", weights);
    add("KV cache", kv);
    add("outputs", outputs);
    add("fp32 workspace", workspace);
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
    return out;
  }
};

Parts row_op_parts(const Scenario& s) {
  Parts p;
  const double rows = batch_max(s) * axis_max(s, "tokens", s.tokens);
  const double in = bytes_of(s.dtype), out = bytes_of(s.out_dtype);
  switch (s.op) {
    case ScenarioOp::kGemm:
      p.inputs = rows * static_cast<double>(s.k) * in;
      p.weights = static_cast<double>(s.n) * static_cast<double>(s.k) * in +
                  (s.bias ? static_cast<double>(s.n) * in : 0);
      p.outputs = rows * static_cast<double>(s.n) * out;
      p.workspace = rows * static_cast<double>(s.n) * 4;  // fp32 accumulators / split-K partials
      break;
    case ScenarioOp::kRmsNorm:
      p.inputs = rows * static_cast<double>(s.d) * in;
      p.weights = static_cast<double>(s.d) * in;
      p.outputs = rows * static_cast<double>(s.d) * out;
      p.workspace = rows * 4;
      break;
    default:  // log_softmax
      p.inputs = rows * static_cast<double>(s.v) * in;
      p.outputs = rows * static_cast<double>(s.v) * out;
      p.workspace = rows * static_cast<double>(s.v) * 4;
      break;
  }
  return p;
}

Parts attention_parts(const Scenario& s) {
  Parts p;
  const AttentionShape& a = s.attention;
  const double batch = batch_max(s), in = bytes_of(s.dtype), out = bytes_of(s.out_dtype);
  const double q_row = static_cast<double>(a.num_heads) * a.head_dim;
  const double kv_row = 2.0 * a.num_kv_heads * a.head_dim;  // K and V
  if (s.op == ScenarioOp::kAttentionDecode) {
    const double kv_len = axis_max(s, "kv_len", a.kv_len);
    const double filler = axis_max(s, "filler_kv_len", a.filler_kv_len < 0 ? kv_len : a.filler_kv_len);
    const double tokens = std::max(kv_len, filler) * batch;
    p.kv = tokens * kv_row * in;
    p.inputs = batch * q_row * in;
    p.outputs = batch * q_row * out;
    const double splits = std::max(axis_max(s, "num_splits", 0), 64.0);
    p.workspace = batch * splits * (q_row + a.num_heads) * 4;  // split partials and their maxima
  } else {
    const double prompt = axis_max(s, "prompt_len", s.prefill.prompt_len);
    p.kv = batch * prompt * kv_row * in;
    p.inputs = batch * prompt * q_row * in;
    p.outputs = batch * prompt * q_row * out;
    p.workspace = batch * prompt * a.num_heads * 4 * 2;  // running maxima and sums
  }
  return p;
}

Parts model_parts(const Scenario& s) {
  const ModelSpec& m = s.model;
  double hidden = m.hidden, layers = m.layers, heads = m.num_heads, kv_heads = m.num_kv_heads,
         inter = m.intermediate, vocab = m.vocab;
  double head_dim = m.head_dim ? m.head_dim : (m.num_heads ? m.hidden / m.num_heads : 0);
  if (!m.checkpoint.empty()) {
    const ModelConfig c = read_hf_config(m.checkpoint);
    hidden = c.hidden, layers = c.layers, heads = c.num_heads, kv_heads = c.num_kv_heads,
    inter = c.intermediate, vocab = c.vocab, head_dim = c.head_dim;
  }
  double prompt = m.prompt_len;
  for (const auto& pr : m.prompts) prompt = std::max(prompt, static_cast<double>(pr.size()));
  prompt = axis_max(s, "prompt_len", prompt);
  const double new_tokens = axis_max(s, "max_new_tokens", m.max_new_tokens);
  const double batch = batch_max(s), in = bytes_of(s.dtype);
  const double q = heads * head_dim, kv = kv_heads * head_dim;
  Parts p;
  const double per_layer = hidden * (q + 2 * kv) + q * hidden + 3 * inter * hidden + 2 * hidden;
  p.weights = (2 * vocab * hidden + layers * per_layer + hidden) * in;  // embed + LM head
  p.kv = batch * (prompt + new_tokens) * layers * 2 * kv * in;
  p.inputs = batch * prompt * hidden * in;
  p.outputs = batch * new_tokens * vocab * 4;  // the probed requests' logits rows
  // Activations of one prefill pass in fp32: residual, q/k/v, MLP (gate and up), logits row.
  p.workspace = batch * prompt * (2 * hidden + q + 2 * kv + 2 * inter) * 4 + batch * vocab * 4;
  return p;
}

}  // namespace

std::string byte_size_text(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) bytes /= 1024, ++u;
  if (u == 0) return fmt::format("{:.0f} B", bytes);
  return bytes >= 1e6 ? fmt::format("{:.3g} {}", bytes, units[u])
                      : fmt::format("{:.1f} {}", bytes, units[u]);
}

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  uint64_t scale = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K': scale = uint64_t{1} << 10; break;
      case 'M': scale = uint64_t{1} << 20; break;
      case 'G': scale = uint64_t{1} << 30; break;
      case 'T': scale = uint64_t{1} << 40; break;
      default: break;
    }
    if (scale != 1) text.remove_suffix(1);
  }
  const auto n = parse_integer<uint64_t>(text);
  if (!n || *n > UINT64_MAX / scale) return std::nullopt;
  return *n * scale;
}

ScenarioEstimate estimate_scenario(const Scenario& s) {
  ScenarioEstimate e;
  e.contexts = 1;
  for (const SweepAxis& a : s.sweep) {
    e.contexts *= static_cast<double>(a.values.size());
    e.contexts_product += fmt::format("{}{} {}", e.contexts_product.empty() ? "" : " x ",
                                      a.values.size(), a.name);
  }
  Parts p;
  switch (s.op) {
    case ScenarioOp::kGemm:
    case ScenarioOp::kRmsNorm:
    case ScenarioOp::kLogSoftmax: p = row_op_parts(s); break;
    case ScenarioOp::kAttentionDecode:
    case ScenarioOp::kAttentionPrefill: p = attention_parts(s); break;
    case ScenarioOp::kModel: p = model_parts(s); break;
  }
  e.host_bytes = p.total();
  e.device_bytes = p.total();
  e.breakdown = p.text();
  return e;
}

void check_budget(const Scenario& s, const ScenarioEstimate& e, const Budget& b, bool gpu,
                  std::optional<uint64_t> device_free) {
  const std::string who = "scenario '" + s.name + "'";
  if (e.contexts > static_cast<double>(b.max_contexts))
    throw_input_error(fmt::format("{} sweeps {:.0f} contexts ({}), more than the limit of {}; "
                                  "narrow the sweep or raise --max-contexts",
                                  who, e.contexts, e.contexts_product, b.max_contexts));
  if (e.host_bytes > kMaxPlausibleBytes)
    throw_input_error(fmt::format("{} would need about {} of memory per context ({}), more than "
                                  "any machine has",
                                  who, byte_size_text(e.host_bytes), e.breakdown));
  // By default three quarters of what is available: the estimate leaves out the allocator's
  // slack, reports and whatever else runs on the machine.
  const double host_limit = b.max_host_bytes ? static_cast<double>(*b.max_host_bytes)
                                             : 0.75 * static_cast<double>(available_host_bytes());
  if (e.host_bytes > host_limit)
    throw_runtime_error(fmt::format(
        "{} needs about {} of host memory per context ({}), more than the {} {}; shrink the "
        "shapes or set --max-host-bytes",
        who, byte_size_text(e.host_bytes), e.breakdown, byte_size_text(host_limit),
        b.max_host_bytes ? "allowed by --max-host-bytes"
                         : "allowed on this machine (3/4 of its available memory)"));
  if (!gpu) return;
  const std::optional<uint64_t> device_limit = b.max_device_bytes ? b.max_device_bytes : device_free;
  if (device_limit && e.device_bytes > static_cast<double>(*device_limit))
    throw_runtime_error(fmt::format(
        "{} needs about {} of device memory per context ({}), more than the {} {}; shrink the "
        "shapes or set --max-device-bytes",
        who, byte_size_text(e.device_bytes), e.breakdown,
        byte_size_text(static_cast<double>(*device_limit)),
        b.max_device_bytes ? "allowed by --max-device-bytes" : "free on the GPU"));
}

}  // namespace nvdet
