#include "lib/manifest/manifest.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>
#include <tuple>
#include <utility>

#include "lib/compare/any_compare.h"
#include "lib/core/atomic_file.h"
#include "lib/core/bounded_file.h"
#include "lib/core/checked_parse.h"
#include "lib/core/error.h"
#include "lib/core/json_input.h"
#include "lib/core/text_excerpt.h"
#include "lib/report/json_report.h"
#include "lib/report/system_info_json.h"
#include "lib/runner/nvdet_dump.h"
#include "lib/runner/run_fingerprint.h"
#include "lib/tensorio/safetensors.h"

namespace nvdet {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// ---- writing --------------------------------------------------------------------------------

ojson system_json(const SystemInfo& s) { return system_info_json<ojson>(s); }

ojson entry_json(const ManifestEntry& e) {
  ojson tokens = ojson::array();
  for (const Hash128& h : e.token_hashes) tokens.push_back(h.hex());
  ojson j = {{"hash", e.hash.hex()}, {"token_hashes", tokens}};
  if (!e.completion.empty()) j["completion"] = e.completion;
  return j;
}

// ---- reading: every access checked, so a corrupt file is one sentence, not an exception -----

class Reader {
 public:
  explicit Reader(std::string what) : what_(std::move(what)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& why) const {
    // `where` holds keys from the file: escaped and bounded like any excerpt.
    throw_input_error(what_ + " is corrupt: " + excerpt(where, 128) + " " + why);
  }
  const json& field(const json& obj, const std::string& key, const std::string& where) const {
    if (!obj.is_object()) fail(where, "is not an object");
    auto it = obj.find(key);
    if (it == obj.end()) fail(where, "has no \"" + key + "\"");
    return *it;
  }
  const json& object(const json& obj, const std::string& key, const std::string& where) const {
    const json& v = field(obj, key, where);
    if (!v.is_object()) fail(where + "." + key, "is not an object");
    return v;
  }
  std::string str(const json& obj, const std::string& key, const std::string& where) const {
    const json& v = field(obj, key, where);
    if (!v.is_string()) fail(where + "." + key, "is not a string");
    return v.get<std::string>();
  }
  std::string str_or(const json& obj, const std::string& key, const std::string& fallback) const {
    auto it = obj.find(key);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : fallback;
  }
  // The informational system fields: a value of another type, or out of range, reads as the
  // fallback (as str_or does), never as an exception from the JSON library.
  bool bool_or(const json& obj, const std::string& key, bool fallback) const {
    auto it = obj.find(key);
    return it != obj.end() && it->is_boolean() ? it->get<bool>() : fallback;
  }
  template <class T>
  T int_or(const json& obj, const std::string& key, T fallback) const {
    auto it = obj.find(key);
    return it == obj.end() ? fallback : json_integer<T>(*it).value_or(fallback);
  }
  int64_t integer(const json& v, const std::string& where) const {
    if (!v.is_number_integer()) fail(where, "is not an integer");
    return v.get<int64_t>();
  }
  int64_t integer(const json& obj, const std::string& key, const std::string& where) const {
    return integer(field(obj, key, where), where + "." + key);
  }
  int64_t key_integer(const std::string& key, const std::string& where) const {
    if (const auto v = parse_integer<int64_t>(key)) return *v;
    fail(where, "has the key '" + excerpt(key) + "', which is not an integer");
  }
  Hash128 hash(const json& v, const std::string& where) const {
    Hash128 h;
    if (!v.is_string() || !Hash128::from_hex(v.get<std::string>(), h)) {
      fail(where, "is not a hash (32 hex digits)");
    }
    return h;
  }

 private:
  std::string what_;
};

SystemInfo system_from_json(const json& j, const Reader& r) {
  SystemInfo s;
  if (!j.is_object()) r.fail("system", "is not an object");
  s.nvdet_version = r.str_or(j, "nvdet_version", "");
  s.host = r.str_or(j, "host", "");
  s.cuda_built = r.bool_or(j, "cuda_built", false);
  s.compiled_architectures = r.str_or(j, "compiled_architectures", "");
  s.cuda_fp_flags = r.str_or(j, "cuda_fp_flags", "");
  s.cxx_fp_flags = r.str_or(j, "cxx_fp_flags", "");
  s.driver_version = r.str_or(j, "driver_version", "");
  s.cuda_runtime_version = r.str_or(j, "cuda_runtime_version", "");
  s.cublas_version = r.str_or(j, "cublas_version", "");
  s.device_error = r.str_or(j, "device_error", "");
  if (auto it = j.find("gpus"); it != j.end() && it->is_array()) {
    for (const json& g : *it) {
      if (!g.is_object()) r.fail("system.gpus", "holds something that is not an object");
      GpuInfo gi;
      gi.index = r.int_or(g, "index", 0);
      gi.name = r.str_or(g, "name", "");
      gi.sm_count = r.int_or(g, "sm_count", 0);
      gi.compute_capability = r.str_or(g, "compute_capability", "");
      gi.memory_bytes = r.int_or(g, "memory_bytes", decltype(gi.memory_bytes){0});
      gi.l2_bytes = r.int_or(g, "l2_bytes", decltype(gi.l2_bytes){0});
      s.gpus.push_back(gi);
    }
  }
  return s;
}

std::string first_gpu(const SystemInfo& s) { return s.gpus.empty() ? "none" : s.gpus[0].name; }

std::string or_none(const std::string& s) { return s.empty() ? "none" : s; }

std::filesystem::path resolve_dump_dir(const std::string& recorded,
                                       const std::string& manifest_path) {
  const std::filesystem::path p(recorded);
  if (p.is_absolute()) return p;
  return std::filesystem::path(manifest_path).parent_path() / p;
}

// The request's tensor from a dump file, or nullopt with the reason in `note`.
std::optional<AnyTensor> load_dumped(const std::filesystem::path& file, int64_t request,
                                     std::string& note) {
  if (!std::filesystem::exists(file)) {
    note = "no dump at " + file.string();
    return std::nullopt;
  }
  try {
    const SafetensorsFile f = SafetensorsFile::open(file);
    return f.read_any(dump_tensor_name(request));
  } catch (const Error& e) {
    note = e.what();
    return std::nullopt;
  }
}

}  // namespace

// ---- Manifest ---------------------------------------------------------------------------------

void Manifest::add(const AuditResult& r) {
  if (scenarios.empty()) system = r.system;
  ManifestScenario s;
  s.name = r.scenario.name;
  s.path = r.scenario.path;
  s.op = r.scenario.op;
  s.dtype = r.scenario.dtype;
  s.out_dtype = r.scenario.out_dtype;
  s.seed = r.scenario.seed;
  s.requests = r.scenario.requests;
  s.repeat = r.scenario.repeat;
  for (const BackendOutcome& b : r.backends) s.backends[b.name] = expectation_name(b.expect);
  for (const auto& [field, value] : r.fingerprint) {
    if (!is_build_field(field)) s.inputs[field] = value;
  }
  for (const CaseRecord& c : r.cases) {
    const std::string& id = context_of(r, c).id;
    s.contexts[id] = c.context_index;
    ManifestContext& mc = s.entries[c.backend][id];
    mc.index = c.context_index;
    for (const RequestRecord& rr : c.requests) {
      mc.repeats[c.repeat][rr.request] = {rr.hash, rr.token_hashes, rr.completion};
    }
  }
  scenarios[s.name] = std::move(s);
}

ojson manifest_to_json(const Manifest& m) {
  ojson j = {{"nvdet_manifest", m.version}, {"system", system_json(m.system)}};
  if (!m.dump_dir.empty()) j["dump_dir"] = m.dump_dir;
  ojson scenarios = ojson::object();
  for (const auto& [name, s] : m.scenarios) {
    ojson backends = ojson::object();
    for (const auto& [b, e] : s.backends) backends[b] = e;
    // Contexts in sweep order (the baseline first), which is how people read them.
    std::vector<std::pair<int, std::string>> order;
    for (const auto& [id, index] : s.contexts) order.emplace_back(index, id);
    std::sort(order.begin(), order.end());
    ojson contexts = ojson::object();
    for (const auto& [index, id] : order) contexts[id] = index;
    ojson entries = ojson::object();
    for (const auto& [backend, by_context] : s.entries) {
      ojson bj = ojson::object();
      for (const auto& [index, id] : order) {
        auto it = by_context.find(id);
        if (it == by_context.end()) continue;
        ojson cj = ojson::object();
        for (const auto& [repeat, by_request] : it->second.repeats) {
          ojson rj = ojson::object();
          for (const auto& [request, e] : by_request) rj[std::to_string(request)] = entry_json(e);
          cj[std::to_string(repeat)] = rj;
        }
        bj[id] = cj;
      }
      entries[backend] = bj;
    }
    scenarios[name] = {{"path", s.path},           {"op", s.op},           {"dtype", s.dtype},
                       {"out_dtype", s.out_dtype}, {"seed", s.seed},       {"requests", s.requests},
                       {"repeat", s.repeat},       {"backends", backends}, {"contexts", contexts},
                       {"entries", entries}};
    if (!s.inputs.empty()) {
      ojson inputs = ojson::object();
      for (const auto& [field, value] : s.inputs) inputs[field] = value;
      scenarios[name]["inputs"] = inputs;
    }
  }
  j["scenarios"] = scenarios;
  return j;
}

Manifest manifest_from_json(const json& j, const std::string& what) {
  if (!j.is_object() || !j.contains("nvdet_manifest")) {
    throw_input_error(what + " is not an nvdet manifest (it has no \"nvdet_manifest\" key)");
  }
  const json& version = j["nvdet_manifest"];
  if (!version.is_number_integer() || version.get<int64_t>() != kManifestVersion) {
    throw_input_error(what + " is an nvdet manifest of version " + version.dump() +
                      "; this nvdet reads version " + std::to_string(kManifestVersion));
  }
  const Reader r(what);
  Manifest m;
  m.system = system_from_json(r.field(j, "system", "the manifest"), r);
  m.dump_dir = r.str_or(j, "dump_dir", "");
  for (const auto& [name, sj] : r.object(j, "scenarios", "the manifest").items()) {
    const std::string where = "scenario '" + excerpt(name) + "'";
    ManifestScenario s;
    s.name = name;
    s.path = r.str_or(sj, "path", "");
    s.op = r.str(sj, "op", where);
    s.dtype = r.str(sj, "dtype", where);
    s.out_dtype = r.str_or(sj, "out_dtype", s.dtype);
    const json& seed = r.field(sj, "seed", where);
    if (!seed.is_number_unsigned() && !seed.is_number_integer())
      r.fail(where + ".seed", "is not an integer");
    s.seed = seed.get<uint64_t>();
    if (auto it = sj.find("repeat"); it != sj.end())
      s.repeat = static_cast<int32_t>(r.integer(*it, where + ".repeat"));
    if (auto it = sj.find("requests"); it != sj.end() && it->is_array()) {
      for (const json& q : *it) s.requests.push_back(r.integer(q, where + ".requests"));
    }
    if (auto it = sj.find("inputs"); it != sj.end()) {
      for (const auto& [field, value] : r.object(sj, "inputs", where).items()) {
        if (!value.is_string()) r.fail(where + ".inputs." + field, "is not a string");
        s.inputs[field] = value.get<std::string>();
      }
    }
    for (const auto& [b, e] : r.object(sj, "backends", where).items()) {
      if (!e.is_string()) r.fail(where + ".backends." + b, "is not a string");
      s.backends[b] = e.get<std::string>();
    }
    for (const auto& [id, index] : r.object(sj, "contexts", where).items()) {
      s.contexts[id] = static_cast<int>(r.integer(index, where + ".contexts." + id));
    }
    for (const auto& [backend, bj] : r.object(sj, "entries", where).items()) {
      const std::string bwhere = where + ".entries." + backend;
      if (!bj.is_object()) r.fail(bwhere, "is not an object");
      for (const auto& [ctx, cj] : bj.items()) {
        const std::string cwhere = bwhere + "." + ctx;
        if (!cj.is_object()) r.fail(cwhere, "is not an object");
        auto idx = s.contexts.find(ctx);
        if (idx == s.contexts.end()) r.fail(cwhere, "names a context missing from \"contexts\"");
        ManifestContext& mc = s.entries[backend][ctx];
        mc.index = idx->second;
        for (const auto& [rep, rj] : cj.items()) {
          const int repeat = static_cast<int>(r.key_integer(rep, cwhere));
          if (!rj.is_object()) r.fail(cwhere + "." + rep, "is not an object");
          for (const auto& [req, ej] : rj.items()) {
            const std::string ewhere = cwhere + "." + rep + "." + req;
            ManifestEntry e;
            e.hash = r.hash(r.field(ej, "hash", ewhere), ewhere + ".hash");
            const json& tokens = r.field(ej, "token_hashes", ewhere);
            if (!tokens.is_array()) r.fail(ewhere + ".token_hashes", "is not a list");
            for (const json& t : tokens)
              e.token_hashes.push_back(r.hash(t, ewhere + ".token_hashes"));
            if (auto it = ej.find("completion"); it != ej.end() && it->is_array()) {
              for (const json& t : *it)
                e.completion.push_back(static_cast<int32_t>(r.integer(t, ewhere + ".completion")));
            }
            mc.repeats[repeat][r.key_integer(req, cwhere + "." + rep)] = std::move(e);
          }
        }
      }
    }
    m.scenarios[name] = std::move(s);
  }
  return m;
}

void write_manifest(const std::filesystem::path& path, Manifest m, const std::string& dump_dir) {
  if (!dump_dir.empty()) {
    // Relative to the manifest, so that a CI job that keeps both as artifacts can move them.
    std::error_code ec;
    const auto base = std::filesystem::absolute(path, ec).parent_path();
    const auto dump = std::filesystem::absolute(dump_dir, ec);
    const auto rel = std::filesystem::relative(dump, base, ec);
    m.dump_dir = ec || rel.empty() ? dump.string() : rel.string();
  }
  write_file_atomic(path, manifest_to_json(m).dump(1) + "\n", "manifest");
}

Manifest read_manifest(const std::filesystem::path& path) {
  const std::string text = read_bounded_file(path, kMaxJsonFileBytes, "manifest");
  const json j = parse_json_input(text, "manifest '" + path.string() + "'");
  return manifest_from_json(j, "manifest '" + path.string() + "'");
}

// ---- verification -----------------------------------------------------------------------------

std::vector<std::string> environment_changes(const SystemInfo& a, const SystemInfo& b) {
  std::vector<std::string> out;
  auto diff = [&](const std::string& label, const std::string& x, const std::string& y) {
    // The recorded side comes from the manifest file: quoted as an excerpt like all input.
    if (x != y)
      out.push_back(label + " " + excerpt(or_none(x), 80) + " → " + excerpt(or_none(y), 80));
  };
  diff("GPU", first_gpu(a), first_gpu(b));
  if (!a.gpus.empty() && !b.gpus.empty()) {
    diff("SM count", std::to_string(a.gpus[0].sm_count), std::to_string(b.gpus[0].sm_count));
    diff("compute capability", a.gpus[0].compute_capability, b.gpus[0].compute_capability);
  }
  diff("driver", a.driver_version, b.driver_version);
  diff("CUDA runtime", a.cuda_runtime_version, b.cuda_runtime_version);
  diff("cuBLAS", a.cublas_version, b.cublas_version);
  diff("nvdet", a.nvdet_version, b.nvdet_version);
  diff("compiled architectures", a.compiled_architectures, b.compiled_architectures);
  diff("CUDA fp flags", a.cuda_fp_flags, b.cuda_fp_flags);
  diff("host fp flags", a.cxx_fp_flags, b.cxx_fp_flags);
  diff("host", a.host, b.host);
  return out;
}

const ManifestScenario& manifest_scenario(const Manifest& m, const std::string& manifest_path,
                                          const std::string& name) {
  auto found = m.scenarios.find(name);
  if (found == m.scenarios.end()) {
    std::string held;
    for (const auto& [n, s] : m.scenarios) {
      if (held.size() > 200) {
        held += ", ...";
        break;
      }
      held += (held.empty() ? "'" : ", '") + excerpt(n) + "'";
    }
    throw_input_error("manifest '" + manifest_path + "' has no scenario '" + excerpt(name) +
                      "' (it holds " + (held.empty() ? std::string("none") : held) + ")");
  }
  return found->second;
}

void check_manifest_inputs(const Manifest& m, const std::string& manifest_path,
                           const std::string& name, const RunFingerprint& fingerprint) {
  const ManifestScenario& rec = manifest_scenario(m, manifest_path, name);
  if (rec.inputs.empty() || fingerprint.empty()) return;  // recorded (or run) before inputs were
  RunFingerprint now;
  for (const auto& [field, value] : fingerprint) {
    if (!is_build_field(field)) now[field] = value;
  }
  const std::string d = fingerprint_difference(rec.inputs, now, "in the manifest", "now");
  if (d.empty()) return;
  throw_input_error(fmt::format(
      "manifest '{}' recorded scenario '{}' from other inputs than this run's: {}; its hashes say "
      "nothing about the kernels here (record the manifest again from these inputs)",
      manifest_path, excerpt(name), d));
}

VerifyResult verify_manifest(const Manifest& m, const std::string& manifest_path,
                             const AuditResult& result, const VerifyOptions& options) {
  const ScenarioSummary& now = result.scenario;
  const ManifestScenario& rec = manifest_scenario(m, manifest_path, now.name);
  check_manifest_inputs(m, manifest_path, now.name, result.fingerprint);
  if (rec.op != now.op || rec.dtype != now.dtype || rec.out_dtype != now.out_dtype ||
      rec.seed != now.seed) {
    throw_input_error(fmt::format(
        "manifest '{}' recorded another scenario named '{}' (op {}, dtype {}, output {}, seed {}; "
        "this one: op {}, dtype {}, output {}, seed {})",
        manifest_path, now.name, rec.op, rec.dtype, rec.out_dtype, rec.seed, now.op, now.dtype,
        now.out_dtype, now.seed));
  }

  VerifyResult v;
  v.manifest = manifest_path;
  v.scenario = now.name;
  v.recorded_as = options.recorded_as;
  for (const auto& [run, recorded] : options.recorded_as) {
    if (!rec.entries.count(recorded)) {
      throw_input_error(
          fmt::format("--verify-as {}={}: manifest '{}' holds no hashes of backend '{}' "
                      "for scenario '{}'",
                      run, recorded, manifest_path, recorded, now.name));
    }
    const std::string& run_name = run;  // a structured binding cannot be captured before C++20
    const bool runs = std::any_of(result.backends.begin(), result.backends.end(),
                                  [&](const BackendOutcome& b) { return b.name == run_name; });
    if (!runs) {
      throw_input_error(
          fmt::format("--verify-as {}={}: this audit of '{}' does not run backend '{}'", run,
                      recorded, now.name, run));
    }
  }
  // The manifest backend whose hashes this run's `backend` must reproduce.
  auto recorded_name = [&](const std::string& backend) {
    const auto it = options.recorded_as.find(backend);
    return it == options.recorded_as.end() ? backend : it->second;
  };
  v.environment = environment_changes(m.system, result.system);
  std::map<std::string, std::string> expect;
  for (const BackendOutcome& b : result.backends) expect[b.name] = expectation_name(b.expect);
  const bool dumps = !options.dump_dir.empty() && !m.dump_dir.empty();

  // What this run produced, to find recorded entries that it did not.
  std::map<std::tuple<std::string, std::string, int, int64_t>, bool> seen;
  for (const CaseRecord& c : result.cases) {
    const std::string& context_id = context_of(result, c).id;
    for (const RequestRecord& rr : c.requests) {
      const std::string recorded = recorded_name(c.backend);
      seen[{recorded, context_id, c.repeat, rr.request}] = true;
      const ManifestEntry* e = nullptr;
      if (auto b = rec.entries.find(recorded); b != rec.entries.end()) {
        if (auto cx = b->second.find(context_id); cx != b->second.end()) {
          if (auto rp = cx->second.repeats.find(c.repeat); rp != cx->second.repeats.end()) {
            if (auto q = rp->second.find(rr.request); q != rp->second.end()) e = &q->second;
          }
        }
      }
      if (!e) {
        v.added.push_back({c.backend, context_id, c.repeat, rr.request});
        continue;
      }
      ++v.compared;
      if (e->hash == rr.hash) continue;
      ManifestChange ch;
      ch.backend = c.backend;
      ch.expectation = expect[c.backend];
      ch.context = context_id;
      ch.context_index = c.context_index;
      ch.repeat = c.repeat;
      ch.request = rr.request;
      ch.recorded = e->hash;
      ch.now = rr.hash;
      ch.tokens_recorded = static_cast<int64_t>(e->token_hashes.size());
      ch.tokens_now = static_cast<int64_t>(rr.token_hashes.size());
      const size_t common = std::min(e->token_hashes.size(), rr.token_hashes.size());
      for (size_t t = 0; t < common; ++t) {
        if (e->token_hashes[t] == rr.token_hashes[t]) continue;
        if (ch.first_token < 0) ch.first_token = static_cast<int64_t>(t);
        ++ch.changed_tokens;
      }
      if (ch.first_token < 0 && ch.tokens_recorded != ch.tokens_now)
        ch.first_token = static_cast<int64_t>(common);
      ch.fails = change_fails(ch, options.strict, options.recorded_as);
      if (dumps) {
        // The recorded side's dumps are the recorded backend's: under --verify-as RUN=RECORDED,
        // RECORDED's folder, not RUN's.
        const auto old_file = dump_file_path(resolve_dump_dir(m.dump_dir, manifest_path), now.name,
                                             recorded, c.context_index, context_id, c.repeat);
        const auto new_file = dump_file_path(options.dump_dir, now.name, c.backend, c.context_index,
                                             context_id, c.repeat);
        std::string note;
        const auto a = load_dumped(old_file, rr.request, note);
        const auto b = a ? load_dumped(new_file, rr.request, note) : std::nullopt;
        if (a && b) {
          try {
            ch.elementwise = compare_any(*a, *b, old_file.string(), new_file.string());
          } catch (const Error& err) {
            note = err.what();
          }
        }
        ch.dump_note = note;
      }
      v.changes.push_back(std::move(ch));
    }
  }
  for (const auto& [backend, by_context] : rec.entries) {
    for (const auto& [ctx, mc] : by_context) {
      for (const auto& [repeat, by_request] : mc.repeats) {
        for (const auto& [request, e] : by_request) {
          if (!seen.count({backend, ctx, repeat, request}))
            v.missing.push_back({backend, ctx, repeat, request});
        }
      }
    }
  }

  v.strict = options.strict;
  decide_verify_verdict(v);
  return v;
}

std::pair<std::string, std::string> parse_verify_as(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size() ||
      text.find('=', eq + 1) != std::string::npos) {
    throw_input_error("--verify-as takes RUN=RECORDED (e.g. cuda-portable=cpu-portable), not '" +
                      text + "'");
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

}  // namespace nvdet
