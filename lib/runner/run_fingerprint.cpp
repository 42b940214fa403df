#include "lib/runner/run_fingerprint.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include "lib/core/error.h"
#include "lib/hash/hash.h"
#include "lib/loader/op_table.h"
#include "lib/tensorio/safetensors.h"

namespace nvdet {
namespace {

namespace fs = std::filesystem;

// Values as their shortest exact text, so that 0.8 and 0.80 are one value and 1e-4 is "0.0001".
std::string text(double v) { return fmt::format("{}", v); }
std::string text(float v) { return fmt::format("{}", v); }
std::string text(int64_t v) { return std::to_string(v); }
std::string text(int32_t v) { return std::to_string(v); }
std::string text(uint64_t v) { return std::to_string(v); }
std::string text(bool v) { return v ? "true" : "false"; }
std::string chunk_text(int32_t chunk) { return chunk == 0 ? "whole" : std::to_string(chunk); }

void add_byte_count(StreamHash& h, uint64_t n) {
  std::byte bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<std::byte>(n >> (8 * i));
  h.update({bytes, 8});
}

// The checkpoint files the loader reads (config.json, the safetensors index and shards), in name
// order, each as its name, its size and its bytes. Only regular files are read (a FIFO named
// model.safetensors is the loader's to refuse, never waited on here).
std::string checkpoint_hash(const std::string& folder, bool config_only) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool wanted =
        name == "config.json" || (!config_only && (it->path().extension() == ".safetensors" ||
                                                   name.ends_with(".safetensors.index.json")));
    std::error_code kind;
    if (wanted && fs::is_regular_file(it->path(), kind)) files.push_back(it->path());
  }
  if (ec) throw_input_error("cannot list checkpoint folder '" + folder + "': " + ec.message());
  std::sort(files.begin(), files.end());
  StreamHash h;
  std::vector<char> block(size_t{1} << 20);
  for (const fs::path& f : files) {
    const std::string name = f.filename().string();
    add_byte_count(h, name.size());
    h.update(name);
    std::ifstream in(f, std::ios::binary);
    if (!in) throw_input_error("cannot read checkpoint file '" + f.string() + "'");
    uint64_t size = 0;
    while (in) {
      in.read(block.data(), static_cast<std::streamsize>(block.size()));
      const auto got = static_cast<size_t>(in.gcount());
      h.update({reinterpret_cast<const std::byte*>(block.data()), got});
      size += got;
    }
    if (in.bad()) throw_input_error("cannot read checkpoint file '" + f.string() + "'");
    add_byte_count(h, size);
  }
  return h.digest().hex();
}

std::string prompts_hash(const std::vector<std::vector<int32_t>>& prompts) {
  StreamHash h;
  for (const std::vector<int32_t>& p : prompts) {
    add_byte_count(h, p.size());
    h.update({reinterpret_cast<const std::byte*>(p.data()), p.size() * sizeof(int32_t)});
  }
  return h.digest().hex();
}

void add_model(const ModelSpec& m, RunFingerprint& f) {
  if (!m.checkpoint.empty()) {
    // The folder's path may differ between machines; its contents may not.
    f["inputs.checkpoint"] = checkpoint_hash(m.checkpoint, m.synthetic_weights);
    f["model.synthetic_weights"] = text(m.synthetic_weights);
  } else {
    f["model.hidden"] = text(m.hidden);
    f["model.layers"] = text(m.layers);
    f["model.heads"] = text(m.num_heads);
    f["model.kv_heads"] = text(m.num_kv_heads);
    f["model.head_dim"] = text(m.head_dim);
    f["model.intermediate"] = text(m.intermediate);
    f["model.vocab"] = text(m.vocab);
    f["model.rms_eps"] = text(m.rms_eps);
    f["model.rope_theta"] = text(m.rope_theta);
    f["model.weight_seed"] = text(m.weight_seed);
  }
  if (!m.prompts.empty()) {
    f["inputs.prompts"] = prompts_hash(m.prompts);
  } else {
    f["model.prompt_len"] = text(m.prompt_len);
    f["model.num_prompts"] = text(m.num_prompts);
  }
  f["model.max_new_tokens"] = text(m.max_new_tokens);
  f["model.prefill_chunk"] = chunk_text(m.prefill_chunk);
  f["model.page_size"] = text(m.page_size);
  f["model.score"] = text(m.score);
  if (m.score) {
    f["model.score_batch"] = text(m.score_batch);
    f["model.score_chunk"] = chunk_text(m.score_chunk);
    // The trainer: "" is each backend itself, tp "" the context's.
    f["model.trainer.backend"] = m.trainer_backend;
    f["model.trainer.tp"] = m.trainer_tp > 0 ? text(m.trainer_tp) : "";
  }
  // Greedy whether or not `sampling` is written (temperature 0): one value, "0".
  const bool sampled = m.sampling.enabled && m.sampling.temperature > 0.0;
  f["model.sampling.temperature"] = sampled ? text(m.sampling.temperature) : "0";
  if (sampled) {
    f["model.sampling.top_k"] = text(m.sampling.top_k);
    f["model.sampling.top_p"] = text(m.sampling.top_p);
    f["model.sampling.seed"] = text(m.sampling.seed);
    f["model.sampling.sampler"] = std::string(sampler_name(m.sampling.sampler));
  }
}

// The serving traffic a probed request is replayed under: every key of the block (the scheduler's
// keys are also axes; a swept one is in each context's id, its default here).
void add_traffic(const TrafficSpec& t, RunFingerprint& f) {
  f["traffic.requests"] = text(t.requests);
  f["traffic.rate"] = text(t.rate);
  f["traffic.burst_size"] = text(t.burst_size);
  f["traffic.burst_every"] = text(t.burst_every);
  f["traffic.prompt_len"] = text(t.prompt_len.min) + ".." + text(t.prompt_len.max);
  f["traffic.max_new_tokens"] = text(t.max_new_tokens.min) + ".." + text(t.max_new_tokens.max);
  if (!t.prompts.empty()) f["inputs.traffic_prompts"] = prompts_hash(t.prompts);
  std::string eos = t.eos == EosRule::kOff          ? "off"
                    : t.eos == EosRule::kCheckpoint ? "checkpoint"
                                                    : "";
  for (const int32_t id : t.eos_tokens) eos += (eos.empty() ? "" : ",") + text(id);
  f["traffic.eos"] = eos;
  f["traffic.shared_prefix"] =
      text(t.prefix_groups) + "x" + text(t.prefix_len) + "@" + text(t.prefix_fraction);
  f["traffic.probe_prefix"] = text(t.probe_prefix);
  f["traffic.probe_arrival"] = text(t.probe_arrival);
  f["traffic.max_num_batched_tokens"] = text(t.max_num_batched_tokens);
  f["traffic.max_num_seqs"] = text(t.max_num_seqs);
  f["traffic.prefix_caching"] = text(t.prefix_caching);
  f["traffic.chunked_prefill"] = text(t.chunked_prefill);
  f["traffic.traffic_seed"] = text(t.seed);
}

// A server probe (op probe): what the server was asked and the load beside it; the URL is the
// probe runner's (--url may replace the scenario's). Never a header's value.
void add_probe(const ProbeSpec& p, RunFingerprint& f) {
  f["probe.model"] = p.endpoint.model;
  f["probe.api"] = std::string(server_api_name(p.endpoint.api));
  f["probe.body"] = p.endpoint.body_json;
  f["probe.stream"] = text(p.endpoint.stream);
  StreamHash prompts;
  for (const std::string& prompt : p.probe.prompts) {
    add_byte_count(prompts, prompt.size());
    prompts.update(prompt);
  }
  f["inputs.probe_prompts"] = prompts.digest().hex();
  f["probe.max_tokens"] = text(p.probe.max_tokens);
  f["probe.temperature"] = text(p.probe.temperature);
  f["probe.seed"] = p.probe.seeded ? text(p.probe.seed) : "";
  f["probe.logprobs"] = text(p.probe.logprobs);
  f["probe.control"] = text(p.control);
  f["probe.fillers"] = fmt::format("{} x {} words, {} tokens, arrival {}", p.fillers.concurrency,
                                   p.fillers.words, p.fillers.max_tokens, p.fillers.arrival);
}

// Whether a tensor of the checkpoint's dtype changes when the scenario's dtype holds it.
bool rounds(const std::string& stored, DType to) {
  if (stored == "F32") return to != DType::kFP32;
  if (stored == "BF16") return to == DType::kFP16;
  if (stored == "F16") return to == DType::kBF16;
  return false;
}

}  // namespace

std::string checkpoint_rounding_note(const Scenario& s) {
  if (s.model.checkpoint.empty() || s.model.synthetic_weights) return "";
  std::set<std::string> rounded;
  try {
    std::error_code ec;
    for (fs::directory_iterator it(s.model.checkpoint, ec), end; !ec && it != end;
         it.increment(ec)) {
      std::error_code kind;
      if (it->path().extension() != ".safetensors" || !fs::is_regular_file(it->path(), kind))
        continue;
      const SafetensorsFile f = SafetensorsFile::open(it->path());
      for (const std::string& name : f.names()) {
        if (rounds(f.dtype(name), s.dtype)) rounded.insert(f.dtype(name));
      }
    }
  } catch (const Error&) {
    return "";  // the loader says what is wrong with the file
  }
  if (rounded.empty()) return "";
  std::string dtypes;
  for (const std::string& d : rounded) dtypes += (dtypes.empty() ? "" : " and ") + d;
  return fmt::format(
      "scenario '{}': the checkpoint's {} tensors are rounded to {} (the scenario's dtype) as "
      "they are read (dtype fp32 computes the weights as stored)",
      s.name, dtypes, dtype_name(s.dtype));
}

RunFingerprint run_fingerprint(const Scenario& s) {
  RunFingerprint f;
  const OpSpec& op = op_spec(s.op);
  f["op"] = std::string(op.name());
  f["dtype"] = std::string(dtype_name(s.dtype));
  f["out_dtype"] = std::string(dtype_name(s.out_dtype));
  f["seed"] = text(s.seed);
  for (const ShapeKey& k : op.shape) f[std::string("shape.") + k.name] = text(s.*k.field);
  if (op.accepts_key("tokens")) f["tokens"] = text(s.tokens);
  if (op.accepts_key("bias")) f["bias"] = text(s.bias);
  if (op.accepts_key("tf32")) f["tf32"] = text(s.tf32);
  if (op.accepts_key("eps")) f["eps"] = text(s.eps);
  if (op.accepts_key("norm_topk_prob")) f["norm_topk_prob"] = text(s.norm_topk_prob);
  if (op.accepts_key("tp_split")) f["tp_split"] = s.tp_split_row ? "row" : "column";
  if (op.accepts_key("nccl")) {
    f["nccl.algo"] = s.nccl.algo;
    f["nccl.proto"] = s.nccl.proto;
    f["nccl.min_channels"] = text(int64_t{s.nccl.min_channels});
    f["nccl.max_channels"] = text(int64_t{s.nccl.max_channels});
  }
  if (op.accepts_key("attention")) {
    const AttentionShape& a = s.attention;
    f["attention.heads"] = text(a.num_heads);
    f["attention.kv_heads"] = text(a.num_kv_heads);
    f["attention.head_dim"] = text(a.head_dim);
    f["attention.page_size"] = text(a.page_size);
    f["attention.kv_len"] = text(a.kv_len);
    f["attention.filler_kv_len"] = a.filler_kv_len < 0 ? "same" : text(a.filler_kv_len);
    f["attention.scale"] = a.scale ? text(*a.scale) : "default";
  }
  if (op.accepts_key("prefill")) {
    f["prefill.prompt_len"] = text(s.prefill.prompt_len);
    f["prefill.chunk"] = chunk_text(s.prefill.chunk);
    f["prefill.prefix_len"] = text(s.prefill.prefix_len);
  }
  if (op.accepts_key("model")) add_model(s.model, f);
  if (s.traffic.enabled) add_traffic(s.traffic, f);
  if (s.op == OpKind::kProbe) add_probe(s.probe, f);
  if (s.fp8.enabled) {
    // The scheme's defaults; a swept field is in each context's id.
    f["fp8.format"] = std::string(fp8_format_name(s.fp8.scheme.format));
    f["fp8.act_scale"] = std::string(fp8_act_scale_name(s.fp8.scheme.act_scale));
    f["fp8.weight_scale"] = std::string(fp8_weight_scale_name(s.fp8.scheme.weight_scale));
    f["fp8.accumulation"] = std::string(fp8_accumulation_name(s.fp8.scheme.accumulation));
    f["fp8.static_scale"] = text(s.fp8.scheme.static_scale);
  }
  return f;
}

RunFingerprint build_fingerprint(const SystemInfo& system) {
  return {{"build.nvdet_version", system.nvdet_version},
          {"build.cuda_built", text(system.cuda_built)},
          {"build.compiled_architectures", system.compiled_architectures},
          {"build.cuda_fp_flags", system.cuda_fp_flags},
          {"build.cxx_fp_flags", system.cxx_fp_flags}};
}

bool is_build_field(const std::string& field) { return field.starts_with("build."); }

std::string fingerprint_difference(const RunFingerprint& a, const RunFingerprint& b,
                                   const std::string& a_name, const std::string& b_name) {
  const auto value = [](const RunFingerprint& f, const std::string& key) {
    const auto it = f.find(key);
    return it == f.end() ? std::string("none") : "'" + it->second + "'";
  };
  const auto describe = [&](const std::string& key) {
    const std::string what = key == "inputs.checkpoint" ? "the checkpoint's contents"
                             : key == "inputs.prompts"  ? "the prompts' token ids"
                                                        : key;
    return fmt::format("{} ({} {}, {} {})", what, value(a, key), a_name, value(b, key), b_name);
  };
  for (const auto& [key, v] : a) {
    const auto it = b.find(key);
    if (it == b.end() || it->second != v) return describe(key);
  }
  for (const auto& [key, v] : b) {
    if (!a.count(key)) return describe(key);
  }
  return "";
}

}  // namespace nvdet
