#include "lib/runner/budget.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "lib/core/checked_parse.h"
#include "lib/core/error.h"
#include "lib/core/host_memory.h"
#include "lib/loader/op_table.h"
#include "lib/scenario/context.h"

namespace nvdet {
namespace {

// "inputs 16.0 GiB, KV cache 1.0 GiB, ...": the parts that are not zero.
std::string footprint_text(const Footprint& p) {
  std::vector<std::string> items;
  const auto add = [&](const char* name, double b) {
    if (b > 0) items.push_back(fmt::format("{} {}", name, byte_size_text(b)));
  };
  add("inputs", p.inputs);
  add("weights", p.weights);
  add("KV cache", p.kv);
  add("outputs", p.outputs);
  add("fp32 workspace", p.workspace);
  add("CPU backends' fp32 copies", p.cpu_copies);
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

}  // namespace

std::string byte_size_text(double bytes) { return binary_size_text(bytes); }

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

ScenarioEstimate estimate_scenario(const Scenario& s, bool cpu_backend) {
  ScenarioEstimate e;
  e.contexts = 1;
  // One Context holds its id, its group and one (name, value) pair per axis: sized from the
  // longest name and value of each axis, before any is built.
  double context_bytes = sizeof(Context) + 2.0 * (std::string_view(op_name(s.op)).size() + 2);
  for (const SweepAxis& a : s.sweep) {
    e.contexts *= static_cast<double>(a.values.size());
    e.contexts_product +=
        fmt::format("{}{} {}", e.contexts_product.empty() ? "" : " x ", a.values.size(), a.name());
    size_t longest = 0;
    for (const AxisValue& v : a.values) longest = std::max(longest, axis_value_string(v).size());
    context_bytes += sizeof(std::pair<std::string, AxisValue>) +
                     2.0 * (a.name().size() + longest + 2) +
                     2 * sizeof(std::string);  // id and group text; heap strings past SSO
  }
  Footprint p = op_spec(s.op).footprint(s);
  if (!cpu_backend) p.cpu_copies = 0;
  const double context_list = e.contexts * context_bytes;
  e.host_bytes = p.total() + p.cpu_copies + context_list;
  e.device_bytes = p.total();
  e.breakdown = footprint_text(p);
  e.token_layers = e.contexts * p.token_layers;
  e.attention_pair_layers = e.contexts * p.attention_pair_layers;
  if (p.token_layers > 0)
    e.work = fmt::format(
        "about {:.3g} token-layers and {:.3g} attention pair-layers ({:.3g} per "
        "context, {:.0f} contexts)",
        e.token_layers, e.attention_pair_layers, p.token_layers, e.contexts);
  if (context_list >= 1 << 20)
    e.breakdown = fmt::format("context list {}, {}", byte_size_text(context_list), e.breakdown);
  return e;
}

void check_budget(const Scenario& s, const ScenarioEstimate& e, const Budget& b, bool gpu,
                  std::optional<uint64_t> device_free) {
  const std::string who = "scenario '" + s.name + "'";
  if (e.contexts > static_cast<double>(b.max_contexts))
    throw_input_error(
        fmt::format("{} sweeps {:.0f} contexts ({}), more than the limit of {}; "
                    "narrow the sweep or raise --max-contexts",
                    who, e.contexts, e.contexts_product, b.max_contexts));
  if (e.contexts > kMaxIndexableContexts)
    throw_input_error(
        fmt::format("{} sweeps {:.0f} contexts ({}), more than the {:.0f} one run can "
                    "hold; narrow the sweep",
                    who, e.contexts, e.contexts_product, kMaxIndexableContexts));
  if (e.token_layers > kMaxTokenLayers || e.attention_pair_layers > kMaxAttentionPairLayers)
    throw_input_error(
        fmt::format("{} would compute {}, more than the limits of {:.0e} and {:.0e} "
                    "a run may take; shorten the prompts or narrow the sweep",
                    who, e.work, kMaxTokenLayers, kMaxAttentionPairLayers));
  if (e.host_bytes > kMaxPlausibleBytes)
    throw_input_error(
        fmt::format("{} would need about {} of memory per context ({}), more than "
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
  const std::optional<uint64_t> device_limit =
      b.max_device_bytes ? b.max_device_bytes : device_free;
  if (device_limit && e.device_bytes > static_cast<double>(*device_limit))
    throw_runtime_error(fmt::format(
        "{} needs about {} of device memory per context ({}), more than the {} {}; shrink the "
        "shapes or set --max-device-bytes",
        who, byte_size_text(e.device_bytes), e.breakdown,
        byte_size_text(static_cast<double>(*device_limit)),
        b.max_device_bytes ? "allowed by --max-device-bytes" : "free on the GPU"));
}

}  // namespace nvdet
