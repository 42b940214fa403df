// Reads a scenario file into nvdet::Scenario and validates it completely, so that the runner can
// trust every field. This is the only file in nvdet that includes yaml-cpp: everything YAML stays
// here, and every problem leaves as one sentence `file:line:column: ...` (Error, kBadInput, exit
// 2). No yaml-cpp, std::stoi or other library exception ever escapes.
//
// The schema (scenarios/README.md has the same with examples):
//
//   name: gemm-batch-sweep        required; letters, digits, '.', '_', '-' (used in report names)
//   description: "..."            optional string
//   op: gemm                      required: a name from the op table (lib/loader/op_table.h):
//                                 gemm | rmsnorm | log_softmax | attention_decode |
//                                 attention_prefill | moe | model
//   dtype: bf16                   required: bf16 | fp16 | fp32
//   out_dtype: fp32               optional, default = dtype
//   shape: {n: 4096, k: 4096}     the op's OpSpec::shape keys: gemm {n, k}, rmsnorm {d},
//                                 log_softmax {v}, moe {hidden, intermediate, top_k, experts};
//                                 required for those ops, all keys required;
//                                 each 1 .. 2^24
//   tokens: 1                     gemm/rmsnorm/log_softmax: rows per request (default 1)
//   bias: false                   gemm only
//   tf32: false                   gemm only, and only with dtype fp32
//   eps: 1.0e-6                   rmsnorm only, > 0
//   norm_topk_prob: true          moe only (default true): renormalise the top-k weights
//   attention: {heads, kv_heads, head_dim, page_size, kv_len, filler_kv_len, scale}
//                                 attention ops, all optional (defaults of AttentionShape);
//                                 heads % kv_heads == 0; head_dim a multiple of 8, <= 256;
//                                 filler_kv_len: integer or 'same'; scale > 0 (default
//                                 1/sqrt(head_dim)); kv_len / filler_kv_len: attention_decode only
//   prefill: {prompt_len, chunk, prefix_len}
//                                 attention_prefill only; chunk: integer >= 1 or 'whole' (stored
//                                 as 0); 0 <= prefix_len < prompt_len
//   model: {checkpoint, synthetic_weights, hidden, layers, heads, kv_heads, head_dim,
//           intermediate, vocab, rms_eps, rope_theta, weight_seed, prompts, prompts_file,
//           prompt_len, num_prompts, max_new_tokens, prefill_chunk, page_size,
//           score_batch, score_chunk, sampling: {temperature, top_k, top_p, seed, sampler},
//           trainer: {backend, tp}}
//                                 op model only; checkpoint / prompts_file are resolved against
//                                 the scenario's folder; prompts_file is read here into prompts;
//                                 prompts and prompts_file exclude each other and prompt_len /
//                                 num_prompts; a checkpoint excludes the architecture keys;
//                                 synthetic_weights (bool) needs a checkpoint folder holding
//                                 config.json, and writes seeded weights beside it
//                                 (model_runner.h); score_batch / score_chunk (or those axes) turn
//                                 on the scoring pass, which `trainer` (another backend or tp for
//                                 it) and a backend's `parity: bitwise | report | {mismatch_kl_max,
//                                 logprob_abs_diff_max}` need; temperature 0 (any spelling) is
//                                 greedy and takes no other sampling key
//   fp8: {format, act_scale, weight_scale, accumulation, static_scale}
//                                 gemm, moe, model: FP8 quantisation (README "FP8"); all optional;
//                                 model: act_scale, accumulation only (the checkpoint gives the
//                                 rest); static needs static_scale and is for gemm only
//   seed: 1234                    required, unsigned 64-bit integer
//   requests: [0, 1, 7]           probed request ids: distinct, >= 0; or a count N = [0 .. N-1];
//                                 default [0]; for op model each must be < the number of prompts
//   repeat: 2                     runs per context, 1 .. 1000, default 1
//   sweep:                        optional map axis -> values, in file order; axes from
//     batch: [1, 2, 4]            axis_table() valid for the op; values: a non-empty list, a
//     position: [first, last]     single scalar, or {from, to} / {from, to, step} / {from, to, mul}
//                                 (inclusive); no duplicates
//   endpoint: {name, expect, url, model, api, api_key_env, headers_env, body, stream, timeout,
//              inactivity_timeout, retries, max_response_bytes}
//   probe: {prompts, prompts_file, max_tokens, temperature, seed, logprobs}
//   fillers: {concurrency, words, max_tokens, arrival}
//   control: 3                    op probe only (lib/scenario/probe_spec.h): the server, the probed
//                                 prompts, the load's defaults and the runs alone; op probe takes
//                                 no dtype and no backends (its server is the endpoint, with its
//                                 expectation); url is http(s)://host[:port][/prefix] without
//                                 user name, query or fragment; body is a map of server hints
//                                 merged into every request; temperature above 0 needs seed
//   backends:                     required, non-empty map name -> invariant | variant | report,
//     cpu-invariant: invariant    or name -> {expect: ...}. Names are not checked against the
//     cpu-variant: {expect: variant}  registry here (the runner does that).
//
// Keys that only some ops take (shape, tokens, bias, tf32, eps, attention, prefill, model) are
// refused for the others, as the op table's OpSpec::keys say; so are sweep axes (the axis table's
// AxisSpec::ops).
//
// Cross-field checks: every batch must hold all probed requests (with no batch axis the batch is
// exactly the probed requests); an integer position p needs p + requests <= the smallest batch;
// prefix_len < prompt_len across both axes; tf32 only with fp32.
#include "lib/loader/scenario_loader.h"

#include <absl/strings/match.h>
#include <absl/strings/str_join.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "lib/core/bounded_file.h"
#include "lib/core/checked_parse.h"
#include "lib/core/text_excerpt.h"
#include "lib/loader/op_table.h"
#include "lib/loader/prompts_file.h"
#include "lib/loader/yaml_guard.h"
#include "lib/scenario/typo_hint.h"

namespace nvdet {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 24;         // per-dimension sanity limit
constexpr int64_t kMaxAxisValues = int64_t{1} << 16;  // values one range may expand to
constexpr int64_t kMaxRepeat = 1000;

// ---- small text helpers ---------------------------------------------------------------------

std::string join(const std::vector<std::string>& words, absl::string_view sep = ", ") {
  return absl::StrJoin(words, sep);
}

std::string quoted_list(const std::vector<std::string>& words) {
  std::vector<std::string> q;
  for (const auto& w : words) q.push_back("'" + w + "'");
  return join(q);
}

std::string ordinal(size_t i) {
  const size_t n = i + 1;
  const char* suffix = (n % 100 >= 11 && n % 100 <= 13) ? "th"
                       : n % 10 == 1                    ? "st"
                       : n % 10 == 2                    ? "nd"
                       : n % 10 == 3                    ? "rd"
                                                        : "th";
  return std::to_string(n) + suffix;
}

// ---- the parser -------------------------------------------------------------------------------

// One `key: value` pair of a YAML map, with both nodes for locations.
struct Field {
  std::string name;
  YAML::Node key;
  YAML::Node value;
};

// Where a value came from, kept for the cross-field checks that run after parsing.
struct AxisSource {
  std::vector<SourceLocation> value_where;  // one per value
};

class ScenarioParser {
 public:
  ScenarioParser(std::string path, std::vector<AxisOverride> overrides)
      : path_(std::move(path)), overrides_(std::move(overrides)) {}

  Scenario parse(const std::string& text);

 private:
  // -- locations and failure
  SourceLocation at(const YAML::Node& n) const {
    const YAML::Mark m = n.Mark();
    if (m.is_null()) return SourceLocation{path_, 0, 0};
    return SourceLocation{path_, m.line + 1, m.column + 1};
  }
  // An empty value (`key:`) has its mark on the next token; point at the key instead.
  SourceLocation at(const Field& f) const { return f.value.IsNull() ? at(f.key) : at(f.value); }
  [[noreturn]] void fail(const SourceLocation& where, const std::string& message) const {
    throw_input_error(where, message);
  }
  [[noreturn]] void fail(const YAML::Node& n, const std::string& message) const {
    fail(at(n), message);
  }
  [[noreturn]] void fail(const Field& f, const std::string& message) const { fail(at(f), message); }

  // -- maps
  std::vector<Field> fields_of(const YAML::Node& map, const SourceLocation& where,
                               const std::string& what, const std::vector<std::string>& known,
                               const std::string& known_hint = "");
  static const Field* find(const std::vector<Field>& fields, std::string_view name) {
    for (const auto& f : fields)
      if (f.name == name) return &f;
    return nullptr;
  }

  // -- scalars
  static std::string describe(const YAML::Node& n);
  std::string text_of(const Field& f) const;
  bool is_integer_text(const YAML::Node& n) const;
  int64_t integer(const YAML::Node& n, const SourceLocation& where, const std::string& what) const;
  int64_t integer_in(const YAML::Node& n, const SourceLocation& where, const std::string& what,
                     int64_t lo, int64_t hi) const;
  int64_t integer_in(const Field& f, int64_t lo, int64_t hi) const {
    return integer_in(f.value, at(f), "'" + f.name + "'", lo, hi);
  }
  uint64_t unsigned64(const Field& f) const;
  double real(const Field& f) const;
  double positive_real(const Field& f) const;
  bool boolean(const Field& f) const;
  void parse_sampling(const Field& f, SamplingSpec& out);
  void parse_trainer(const Field& f, ModelSpec& m);
  std::string string(const Field& f) const;
  DType dtype(const Field& f) const;

  // -- sections
  void parse_op_and_types(const Field& op, const Field* dtype, const Field* out_dtype,
                          const YAML::Node& root, Scenario& s);
  void check_op_scoped_keys(const std::vector<Field>& top, const OpSpec& op);
  void parse_shape(const Field& f, Scenario& s);
  void parse_attention(const Field& f, Scenario& s);
  void parse_prefill(const Field& f, Scenario& s);
  void parse_nccl(const Field& f, Scenario& s);
  void parse_fp8(const Field& f, Scenario& s);
  void check_fp8(const Scenario& s) const;
  void parse_model(const Field& f, Scenario& s);
  std::vector<std::vector<int32_t>> read_prompts_file(const Field& f, const ModelSpec& m,
                                                      std::string& path);
  void parse_traffic(const Field& f, Scenario& s);
  UniformRange uniform_range(const Field& f, int64_t lo, int64_t hi);
  bool on_off(const Field& f) const;
  double fraction(const Field& f) const;
  void check_traffic(const Scenario& s) const;
  void parse_requests(const Field* f, Scenario& s);
  void parse_sweep(const Field& f, Scenario& s);
  void parse_axis(const Field& axis, const std::vector<std::string>& valid, Scenario& s);
  void apply_axis_overrides(Scenario& s);
  void add_range(const AxisSpec& axis, const YAML::Node& range, SweepAxis& out, AxisSource& source);
  int64_t check_axis_integer(const AxisSpec& axis, int64_t v, const SourceLocation& where) const;
  AxisValue axis_value(const AxisSpec& axis, const YAML::Node& n) const;
  void parse_backends(const Field& f, Scenario& s);
  void parse_parity_tolerance(const Field& f, BackendSpec& spec);
  // op probe (lib/scenario/probe_spec.h)
  void parse_endpoint(const Field& f, Scenario& s);
  void parse_probe_prompts(const Field& f, Scenario& s);
  void parse_fillers(const Field& f, Scenario& s);
  std::string endpoint_url(const Field& f) const;
  double seconds(const Field& f) const;
  nlohmann::json json_of(const YAML::Node& n, int depth) const;
  void cross_check_probe(const Scenario& s);
  void cross_check(const Scenario& s);
  std::string resolve(const std::string& relative) const;

  std::string path_;
  std::vector<AxisOverride> overrides_;  // --axis, applied after the file's sweep
  // Locations of values that the cross-field checks point at.
  std::vector<AxisSource> axis_sources_;  // parallel to Scenario::sweep
  SourceLocation tf32_where_, prompt_len_where_, prefix_len_where_, parity_where_;
  // The traffic block and its keys, for the checks across keys (check_traffic).
  SourceLocation traffic_where_;
  std::map<std::string, SourceLocation> traffic_keys_;
  std::map<std::string, SourceLocation> model_keys_;
  // The fp8 block's act_scale and static_scale (check_fp8).
  SourceLocation fp8_act_scale_where_, fp8_static_scale_where_;
  SourceLocation sampling_greedy_where_;  // model.sampling with temperature 0
  SourceLocation probe_prompts_where_;
};

std::vector<Field> ScenarioParser::fields_of(const YAML::Node& map, const SourceLocation& where,
                                             const std::string& what,
                                             const std::vector<std::string>& known,
                                             const std::string& known_hint) {
  if (!map.IsMap())
    fail(where, what + " must be a map of keys (" + join(known) + "), got " + describe(map));
  std::vector<Field> fields;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const YAML::Node key = it->first;
    if (!key.IsScalar())
      fail(key, "keys of " + what + " must be plain words, got " + describe(key));
    Field f{key.Scalar(), key, it->second};
    if (std::find(known.begin(), known.end(), f.name) == known.end()) {
      std::string hint = typo_hint(f.name, known);
      if (hint.empty())
        hint = known_hint.empty() ? " (known keys: " + join(known) + ")" : known_hint;
      fail(key, "unknown key '" + excerpt(f.name) + "' in " + what + hint);
    }
    if (const Field* first = find(fields, f.name))
      fail(key, "duplicate key '" + f.name + "' in " + what + " (first given at line " +
                    std::to_string(at(first->key).line) + ")");
    fields.push_back(std::move(f));
  }
  return fields;
}

std::string ScenarioParser::describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Scalar: return "'" + excerpt(n.Scalar()) + "'";
    default: return "an undefined value";
  }
}

// A YAML integer is a plain (unquoted) scalar of an optional sign and decimal digits. Quoted
// numbers are strings in YAML and are rejected, so that "4096" never silently means 4096.
bool ScenarioParser::is_integer_text(const YAML::Node& n) const {
  if (!n.IsScalar() || n.Tag() == "!") return false;
  std::string_view t = n.Scalar();
  if (!t.empty() && (t[0] == '+' || t[0] == '-')) t.remove_prefix(1);
  return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int64_t ScenarioParser::integer(const YAML::Node& n, const SourceLocation& where,
                                const std::string& what) const {
  if (!is_integer_text(n)) fail(where, what + " must be an integer, got " + describe(n));
  std::string_view t = n.Scalar();
  if (t[0] == '+') t.remove_prefix(1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size())
    fail(where, what + " is out of the 64-bit integer range, got " + describe(n));
  return v;
}

int64_t ScenarioParser::integer_in(const YAML::Node& n, const SourceLocation& where,
                                   const std::string& what, int64_t lo, int64_t hi) const {
  const int64_t v = integer(n, where, what);
  if (v < lo) {
    const std::string need = lo == 0   ? "must not be negative"
                             : lo == 1 ? "must be at least 1"
                                       : "must be at least " + std::to_string(lo);
    fail(where, what + " " + need + ", got " + std::to_string(v));
  }
  if (v > hi)
    fail(where, what + " is " + std::to_string(v) + ", more than the limit " + std::to_string(hi));
  return v;
}

uint64_t ScenarioParser::unsigned64(const Field& f) const {
  const std::string what = "'" + f.name + "'";
  if (!is_integer_text(f.value) || f.value.Scalar()[0] == '-')
    fail(f, what + " must be an unsigned integer, got " + describe(f.value));
  std::string_view t = f.value.Scalar();
  if (t[0] == '+') t.remove_prefix(1);
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size())
    fail(f, what + " does not fit in 64 bits, got " + describe(f.value));
  return v;
}

// A YAML number is a plain (unquoted) scalar in decimal notation ("0.8", "1e-4", "0.00", "0e0"),
// read by the one number parser (lib/core/checked_parse.h) and compared by value, never by
// spelling: hex, "inf", "nan" and quoted numbers are refused.
double ScenarioParser::real(const Field& f) const {
  const std::string what = "'" + f.name + "'";
  const YAML::Node& n = f.value;
  const std::optional<double> v =
      n.IsScalar() && n.Tag() != "!" ? parse_real(n.Scalar()) : std::nullopt;
  if (!v) fail(f, what + " must be a number, got " + describe(n));
  if (std::abs(*v) > std::numeric_limits<float>::max())
    fail(f, what + " is too large for a float, got " + n.Scalar());
  return *v;
}

double ScenarioParser::positive_real(const Field& f) const {
  const double v = real(f);
  if (!(v > 0)) fail(f, "'" + f.name + "' must be greater than 0, got " + f.value.Scalar());
  return v;
}

bool ScenarioParser::boolean(const Field& f) const {
  const YAML::Node& n = f.value;
  if (n.IsScalar() && n.Tag() != "!") {
    if (n.Scalar() == "true" || n.Scalar() == "True" || n.Scalar() == "TRUE") return true;
    if (n.Scalar() == "false" || n.Scalar() == "False" || n.Scalar() == "FALSE") return false;
  }
  fail(f, "'" + f.name + "' must be true or false, got " + describe(n));
}

std::string ScenarioParser::string(const Field& f) const {
  if (!f.value.IsScalar()) fail(f, "'" + f.name + "' must be a string, got " + describe(f.value));
  return f.value.Scalar();
}

std::string ScenarioParser::text_of(const Field& f) const {
  return f.value.IsScalar() ? f.value.Scalar() : "";
}

DType ScenarioParser::dtype(const Field& f) const {
  const std::string word = string(f);
  if (const auto t = parse_dtype(word)) return *t;
  fail(f, "unknown " + f.name + " '" + excerpt(word) + "'" +
              typo_hint(word, {"bf16", "fp16", "fp32"}) + "; expected bf16, fp16 or fp32");
}

// ---- top level ------------------------------------------------------------------------------

const std::vector<std::string>& top_level_keys() {
  static const std::vector<std::string> keys = {
      "name",     "description", "op",       "dtype",     "out_dtype",      "shape",    "tokens",
      "bias",     "tf32",        "eps",      "attention", "prefill",        "model",    "seed",
      "requests", "repeat",      "sweep",    "backends",  "norm_topk_prob", "tp_split", "nccl",
      "traffic",  "fp8",         "endpoint", "probe",     "fillers",        "control"};
  return keys;
}

Scenario ScenarioParser::parse(const std::string& text) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(text);
  } catch (const YAML::ParserException& e) {
    const SourceLocation where = e.mark.is_null()
                                     ? SourceLocation{path_, 0, 0}
                                     : SourceLocation{path_, e.mark.line + 1, e.mark.column + 1};
    fail(where, "YAML syntax error: " + excerpt(e.msg, 96));
  }
  if (docs.empty() || docs[0].IsNull())
    fail(SourceLocation{path_, 1, 1},
         "the scenario is empty; it needs at least name, op, dtype, seed and backends");
  if (docs.size() > 1)
    fail(at(docs[1]), "the file holds " + std::to_string(docs.size()) +
                          " YAML documents; a scenario is exactly one");
  const YAML::Node root = docs[0];
  if (!root.IsMap())
    fail(at(root),
         "a scenario must be a map of keys (name, op, dtype, ...), got " + describe(root));

  const std::vector<Field> top = fields_of(root, at(root), "the scenario", top_level_keys());
  const auto require = [&](std::string_view key) -> const Field& {
    if (const Field* f = find(top, key)) return *f;
    fail(root, "missing required key '" + std::string(key) + "'");
  };

  Scenario s;
  s.path = path_;

  const Field& name = require("name");
  s.name = string(name);
  if (s.name.empty() || !std::all_of(s.name.begin(), s.name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
      }))
    fail(name, "'name' must be a non-empty word of letters, digits, '.', '_' or '-', got " +
                   describe(name.value));
  if (const Field* f = find(top, "description")) s.description = string(*f);

  parse_op_and_types(require("op"), find(top, "dtype"), find(top, "out_dtype"), root, s);
  const OpSpec& spec = op_spec(s.op);
  check_op_scoped_keys(top, spec);
  if (spec.server) {
    // The server computes in its own dtype and is the probe's only "backend".
    for (const char* key : {"dtype", "out_dtype", "backends"})
      if (const Field* f = find(top, key))
        fail(f->key, std::string("key '") + key + "' does not apply to op '" +
                         std::string(spec.name()) +
                         "' (the server chooses its dtype; the endpoint is what is audited, with "
                         "its 'expect')");
    parse_endpoint(require("endpoint"), s);
    parse_probe_prompts(require("probe"), s);
    if (const Field* f = find(top, "fillers")) parse_fillers(*f, s);
    if (const Field* f = find(top, "control"))
      s.probe.control = static_cast<int32_t>(integer_in(*f, 1, kMaxRepeat));
  }

  if (!spec.shape.empty()) {
    parse_shape(require("shape"), s);
    if (const Field* f = find(top, "tokens"))
      s.tokens = static_cast<int32_t>(integer_in(*f, 1, kMaxDim));
  }
  if (const Field* f = find(top, "bias")) s.bias = boolean(*f);
  if (const Field* f = find(top, "tf32")) {
    s.tf32 = boolean(*f);
    tf32_where_ = at(*f);
  }
  if (const Field* f = find(top, "eps")) s.eps = static_cast<float>(positive_real(*f));
  if (const Field* f = find(top, "norm_topk_prob")) s.norm_topk_prob = boolean(*f);
  if (const Field* f = find(top, "attention")) parse_attention(*f, s);
  if (const Field* f = find(top, "prefill")) parse_prefill(*f, s);
  if (const Field* f = find(top, "tp_split")) {
    const std::string word = string(*f);
    if (word != "row" && word != "column")
      fail(*f, "'tp_split' must be 'row' or 'column', got " + describe(f->value) +
                   typo_hint(word, {"row", "column"}));
    s.tp_split_row = word == "row";
  }
  if (const Field* f = find(top, "nccl")) parse_nccl(*f, s);
  if (const Field* f = find(top, "fp8")) parse_fp8(*f, s);
  if (spec.accepts_key("model")) {
    s.model.where = at(root);
    if (const Field* f = find(top, "model")) parse_model(*f, s);
  }
  if (const Field* f = find(top, "traffic")) parse_traffic(*f, s);

  s.seed = unsigned64(require("seed"));
  parse_requests(find(top, "requests"), s);
  if (const Field* f = find(top, "repeat"))
    s.repeat = static_cast<int32_t>(integer_in(*f, 1, kMaxRepeat));
  if (const Field* f = find(top, "sweep")) parse_sweep(*f, s);
  apply_axis_overrides(s);
  if (!spec.server) parse_backends(require("backends"), s);
  for (const SweepAxis& a : s.sweep) {
    if (a.axis == Axis::kScoreBatch || a.axis == Axis::kScoreChunk) s.model.score = true;
    if (a.axis == Axis::kSampler && !s.model.sampling.enabled)
      fail(a.where,
           "sweep axis 'sampler' chooses how 'model.sampling' draws tokens; give "
           "'model.sampling' (temperature, top_k, top_p, seed) or leave the axis out");
    if (a.axis == Axis::kSampler && s.model.sampling.temperature == 0.0)
      fail(a.where,
           "sweep axis 'sampler' compares nothing at temperature 0 (greedy decoding draws no "
           "token, see 'model.sampling' at line " +
               std::to_string(sampling_greedy_where_.line) +
               "); give a temperature above 0 or leave the axis out");
  }
  if (s.model.trainer_where.line && !s.model.score)
    fail(s.model.trainer_where,
         "'model.trainer' runs the scoring pass, which needs 'model.score_batch' or "
         "'model.score_chunk' (or either as a sweep axis)");
  if (parity_where_.line && !s.model.score)
    fail(parity_where_,
         "'parity' compares the decode with the scoring pass, which needs "
         "'model.score_batch' or 'model.score_chunk' (or either as a sweep axis)");

  cross_check(s);
  check_traffic(s);
  check_fp8(s);
  return s;
}

void ScenarioParser::parse_op_and_types(const Field& op, const Field* dt, const Field* out_dtype,
                                        const YAML::Node& root, Scenario& s) {
  const std::string word = string(op);
  std::vector<std::string> names;
  for (const OpSpec& spec : op_table()) names.emplace_back(spec.name());
  const OpSpec* spec = find_op(word);
  if (spec) s.op = spec->kind;
  if (!spec)
    fail(op, "unknown op '" + excerpt(word) + "'" + typo_hint(word, names) + "; expected " +
                 join(names, " | "));
  if (spec->server) return;  // no dtype: the server's own (refused by the caller when given)
  if (!dt) fail(root, "missing required key 'dtype'");
  s.dtype = dtype(*dt);
  s.out_dtype = out_dtype ? dtype(*out_dtype) : s.dtype;
}

// Keys that only make sense for some ops are refused elsewhere, so that a scenario never carries
// settings that silently do nothing. Which op takes which key is the op table's OpSpec::keys.
void ScenarioParser::check_op_scoped_keys(const std::vector<Field>& top, const OpSpec& op) {
  for (const Field& f : top) {
    if (op.accepts_key(f.name)) continue;
    const std::string for_ops = ops_accepting_key(f.name);
    if (for_ops.empty()) continue;  // a key every scenario takes
    fail(f.key, "key '" + f.name + "' does not apply to op '" + std::string(op.name()) +
                    "' (it is for " + for_ops + ")");
  }
}

// ---- sections -------------------------------------------------------------------------------

void ScenarioParser::parse_shape(const Field& f, Scenario& s) {
  const OpSpec& spec = op_spec(s.op);
  std::vector<std::string> keys;
  for (const ShapeKey& key : spec.shape) keys.emplace_back(key.name);
  const std::string what = "'shape' for op '" + std::string(spec.name()) + "'";
  const std::string hint =
      spec.shape_hint.empty() ? " (expected " + join(keys) + ")" : spec.shape_hint;
  const auto fields = fields_of(f.value, at(f), what, keys, hint);
  for (const ShapeKey& key : spec.shape) {
    const Field* x = find(fields, key.name);
    if (!x) fail(f, what + " is missing '" + key.name + "'");
    s.*key.field = integer_in(*x, 1, kMaxDim);
  }
}

void ScenarioParser::parse_attention(const Field& f, Scenario& s) {
  const auto fields =
      fields_of(f.value, at(f), "'attention'",
                {"heads", "kv_heads", "head_dim", "page_size", "kv_len", "filler_kv_len", "scale"});
  AttentionShape& a = s.attention;
  for (const auto& x : fields) {
    // The decode KV lengths: for the ops that sweep them (attention_decode).
    if ((x.name == "kv_len" || x.name == "filler_kv_len") && !op_spec(s.op).accepts_axis(x.name))
      fail(x.key, "'attention." + x.name +
                      "' applies to attention_decode only; attention_prefill takes its KV length "
                      "from 'prefill' (prompt_len)");
    if (x.name == "heads") a.num_heads = static_cast<int32_t>(integer_in(x, 1, 1024));
    if (x.name == "kv_heads") a.num_kv_heads = static_cast<int32_t>(integer_in(x, 1, 1024));
    if (x.name == "head_dim") {
      a.head_dim = static_cast<int32_t>(integer_in(x, 8, 256));
      if (a.head_dim % 8 != 0) fail(x, "'head_dim' must be a multiple of 8, got " + text_of(x));
    }
    if (x.name == "page_size") a.page_size = static_cast<int32_t>(integer_in(x, 1, 1 << 16));
    if (x.name == "kv_len") a.kv_len = static_cast<int32_t>(integer_in(x, 1, kMaxDim));
    if (x.name == "filler_kv_len") {
      if (x.value.IsScalar() && x.value.Scalar() == "same") a.filler_kv_len = -1;
      else if (is_integer_text(x.value))
        a.filler_kv_len = static_cast<int32_t>(integer_in(x, 1, kMaxDim));
      else fail(x, "'filler_kv_len' must be an integer or 'same', got " + describe(x.value));
    }
    if (x.name == "scale") a.scale = static_cast<float>(positive_real(x));
  }
  if (a.num_heads % a.num_kv_heads != 0) {
    const Field* where = find(fields, "kv_heads");
    if (!where) where = find(fields, "heads");
    fail(where ? at(*where) : at(f), "'heads' (" + std::to_string(a.num_heads) +
                                         ") must be a multiple of 'kv_heads' (" +
                                         std::to_string(a.num_kv_heads) + ")");
  }
}

// nccl: {algo: ring, proto: simple, min_channels: 4, max_channels: 4}: NCCL's own words for
// NCCL_ALGO / NCCL_PROTO (case as NCCL spells them), channel counts 1 .. 64.
void ScenarioParser::parse_nccl(const Field& f, Scenario& s) {
  const auto fields =
      fields_of(f.value, at(f), "'nccl'", {"algo", "proto", "min_channels", "max_channels"});
  const auto word_of = [&](const Field& x, const std::vector<std::string>& words) {
    const std::string w = string(x);
    for (const std::string& known : words) {
      std::string lower = known;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (w == known || w == lower) return known;
    }
    fail(x, "'" + x.name + "' must be one of " + quoted_list(words) + ", got " + describe(x.value) +
                typo_hint(w, words));
  };
  for (const auto& x : fields) {
    if (x.name == "algo") s.nccl.algo = word_of(x, {"Ring", "Tree"});
    if (x.name == "proto") s.nccl.proto = word_of(x, {"LL", "LL128", "Simple"});
    if (x.name == "min_channels")
      s.nccl.min_channels = static_cast<int>(integer_in(x, 1, kMaxAllReduceChannels));
    if (x.name == "max_channels")
      s.nccl.max_channels = static_cast<int>(integer_in(x, 1, kMaxAllReduceChannels));
  }
  if (s.nccl.min_channels > 0 && s.nccl.max_channels > 0 &&
      s.nccl.min_channels > s.nccl.max_channels)
    fail(f, "'nccl' min_channels must not be more than max_channels");
}

void ScenarioParser::parse_prefill(const Field& f, Scenario& s) {
  const auto fields = fields_of(f.value, at(f), "'prefill'", {"prompt_len", "chunk", "prefix_len"});
  PrefillShape& p = s.prefill;
  prompt_len_where_ = prefix_len_where_ = at(f);
  for (const auto& x : fields) {
    if (x.name == "prompt_len") {
      p.prompt_len = static_cast<int32_t>(integer_in(x, 1, kMaxDim));
      prompt_len_where_ = at(x);
    }
    if (x.name == "chunk") {
      if (x.value.IsScalar() && x.value.Scalar() == "whole") p.chunk = 0;
      else if (is_integer_text(x.value)) p.chunk = static_cast<int32_t>(integer_in(x, 1, kMaxDim));
      else fail(x, "'chunk' must be an integer or 'whole', got " + describe(x.value));
    }
    if (x.name == "prefix_len") {
      p.prefix_len = static_cast<int32_t>(integer_in(x, 0, kMaxDim));
      prefix_len_where_ = at(x);
    }
  }
}

std::string ScenarioParser::resolve(const std::string& relative) const {
  namespace fs = std::filesystem;
  const fs::path p(relative);
  if (p.is_absolute()) return relative;
  return (fs::path(path_).parent_path() / p).lexically_normal().string();
}

// model.sampling: {temperature, top_k, top_p, seed, sampler}; every key optional.
void ScenarioParser::parse_sampling(const Field& f, SamplingSpec& out) {
  const auto fields = fields_of(f.value, at(f), "'model.sampling'",
                                {"temperature", "top_k", "top_p", "seed", "sampler"});
  out.enabled = true;
  for (const auto& x : fields) {
    if (x.name == "temperature") {
      out.temperature = real(x);  // 0 (whatever its spelling: 0.00, 0e0): greedy
      if (!(out.temperature >= 0.0 && out.temperature <= 1000.0))
        fail(x, "'temperature' must be from 0 (greedy) to 1000, got " + describe(x.value));
    }
    if (x.name == "top_k") out.top_k = static_cast<int32_t>(integer_in(x, 0, kMaxDim));
    if (x.name == "top_p") {
      out.top_p = positive_real(x);
      if (!(out.top_p > 0.0 && out.top_p <= 1.0))
        fail(x, "'top_p' must be in (0, 1], got " + describe(x.value));
    }
    if (x.name == "seed") out.seed = unsigned64(x);
    if (x.name == "sampler") {
      const std::string w = string(x);
      if (w == "per_request") out.sampler = SamplerKind::kPerRequest;
      else if (w == "batch_stream") out.sampler = SamplerKind::kBatchStream;
      else
        fail(x, "unknown sampler '" + excerpt(w) + "'" +
                    typo_hint(w, {"per_request", "batch_stream"}) +
                    "; expected per_request or batch_stream");
    }
  }
  // Temperature 0 is greedy: the argmax draws nothing, so a key that shapes the draw would
  // change nothing the scenario computes.
  if (out.temperature == 0.0) {
    for (const auto& x : fields) {
      if (x.name != "temperature")
        fail(x.key, "'model.sampling." + x.name +
                        "' changes nothing at temperature 0 (greedy decoding draws no token); "
                        "give a temperature above 0 or leave it out");
    }
    sampling_greedy_where_ = at(f);
  }
}

// model.trainer: {backend, tp}; at least one. The backend's name is checked against the registry
// when the audit starts, as the backends' are.
void ScenarioParser::parse_trainer(const Field& f, ModelSpec& m) {
  const auto fields = fields_of(f.value, at(f), "'model.trainer'", {"backend", "tp"});
  if (fields.empty())
    fail(f, "'model.trainer' needs 'backend' (the backend that scores) or 'tp' (its degree)");
  for (const auto& x : fields) {
    if (x.name == "backend") {
      m.trainer_backend = string(x);
      if (m.trainer_backend.empty()) fail(x, "'backend' must name a backend, got an empty string");
    }
    if (x.name == "tp") m.trainer_tp = static_cast<int32_t>(integer_in(x, 1, kMaxTp));
  }
  m.trainer_where = at(f);
}

void ScenarioParser::parse_model(const Field& f, Scenario& s) {
  static const std::vector<std::string> architecture = {
      "hidden",       "layers", "heads",   "kv_heads",   "head_dim",
      "intermediate", "vocab",  "rms_eps", "rope_theta", "weight_seed"};
  std::vector<std::string> keys = {
      "checkpoint",  "synthetic_weights", "prompts",       "prompts_file", "prompt_len",
      "num_prompts", "max_new_tokens",    "prefill_chunk", "page_size",    "score_batch",
      "score_chunk", "sampling",          "trainer"};
  keys.insert(keys.end(), architecture.begin(), architecture.end());
  const auto fields = fields_of(f.value, at(f), "'model'", keys);
  ModelSpec& m = s.model;
  m.where = at(f);

  const Field* checkpoint = find(fields, "checkpoint");
  for (const auto& x : fields) model_keys_[x.name] = at(x.key);
  for (const auto& x : fields) {
    const bool arch =
        std::find(architecture.begin(), architecture.end(), x.name) != architecture.end();
    if (checkpoint && arch)
      fail(x.key, "'model." + x.name +
                      "' cannot be combined with 'checkpoint': the checkpoint's config.json "
                      "defines the architecture and its weights");
    if (x.name == "checkpoint") {
      const std::string dir = string(x);
      if (dir.empty()) fail(x, "'checkpoint' must name a folder, got an empty string");
      m.checkpoint = resolve(dir);
    }
    if (x.name == "synthetic_weights") {
      m.synthetic_weights = boolean(x);
      if (!checkpoint)
        fail(x.key, "'model.synthetic_weights' needs 'checkpoint' (a folder holding config.json)");
    }
    if (x.name == "hidden") m.hidden = static_cast<int32_t>(integer_in(x, 1, 1 << 16));
    if (x.name == "layers") m.layers = static_cast<int32_t>(integer_in(x, 1, 1024));
    if (x.name == "heads") m.num_heads = static_cast<int32_t>(integer_in(x, 1, 1024));
    if (x.name == "kv_heads") m.num_kv_heads = static_cast<int32_t>(integer_in(x, 1, 1024));
    if (x.name == "head_dim") m.head_dim = static_cast<int32_t>(integer_in(x, 0, 256));
    if (x.name == "intermediate") m.intermediate = static_cast<int32_t>(integer_in(x, 1, 1 << 18));
    if (x.name == "vocab") m.vocab = static_cast<int32_t>(integer_in(x, 2, kMaxDim));
    if (x.name == "rms_eps") m.rms_eps = static_cast<float>(positive_real(x));
    if (x.name == "rope_theta") m.rope_theta = static_cast<float>(positive_real(x));
    if (x.name == "weight_seed") m.weight_seed = unsigned64(x);
    if (x.name == "prompt_len") m.prompt_len = static_cast<int32_t>(integer_in(x, 1, 1 << 20));
    if (x.name == "num_prompts") m.num_prompts = static_cast<int32_t>(integer_in(x, 1, 1 << 16));
    if (x.name == "max_new_tokens")
      m.max_new_tokens = static_cast<int32_t>(integer_in(x, 1, 1 << 16));
    if (x.name == "page_size") m.page_size = static_cast<int32_t>(integer_in(x, 1, 1 << 16));
    if (x.name == "score_batch") {
      m.score = true;
      m.score_batch = static_cast<int32_t>(integer_in(x, 1, 1 << 12));
    }
    if (x.name == "score_chunk") {
      m.score = true;
      if (x.value.IsScalar() && x.value.Scalar() == "whole") m.score_chunk = 0;
      else if (is_integer_text(x.value))
        m.score_chunk = static_cast<int32_t>(integer_in(x, 1, 1 << 20));
      else fail(x, "'score_chunk' must be an integer or 'whole', got " + describe(x.value));
    }
    if (x.name == "sampling") parse_sampling(x, m.sampling);
    if (x.name == "trainer") parse_trainer(x, m);
    if (x.name == "prefill_chunk") {
      if (x.value.IsScalar() && x.value.Scalar() == "whole") m.prefill_chunk = 0;
      else if (is_integer_text(x.value))
        m.prefill_chunk = static_cast<int32_t>(integer_in(x, 1, 1 << 20));
      else fail(x, "'prefill_chunk' must be an integer or 'whole', got " + describe(x.value));
    }
  }

  // Architecture consistency (synthetic models; a checkpoint is checked when it is read).
  if (!checkpoint) {
    const auto where_of = [&](const char* key) {
      const Field* x = find(fields, key);
      return x ? at(*x) : at(f);
    };
    if (m.head_dim == 0 && m.hidden % m.num_heads != 0)
      fail(where_of("heads"), "'hidden' (" + std::to_string(m.hidden) +
                                  ") must be a multiple of 'heads' (" +
                                  std::to_string(m.num_heads) + ") when 'head_dim' is not given");
    const int32_t head_dim = m.head_dim ? m.head_dim : m.hidden / m.num_heads;
    if (head_dim % 8 != 0 || head_dim > 256)
      fail(where_of(m.head_dim ? "head_dim" : "heads"),
           "the model's head dimension is " + std::to_string(head_dim) +
               "; the attention kernels need a multiple of 8 up to 256");
    if (m.num_heads % m.num_kv_heads != 0)
      fail(where_of("kv_heads"), "'heads' (" + std::to_string(m.num_heads) +
                                     ") must be a multiple of 'kv_heads' (" +
                                     std::to_string(m.num_kv_heads) + ")");
  }

  // Prompts: given inline, read from a file, or synthetic (prompt_len x num_prompts).
  const Field* prompts = find(fields, "prompts");
  const Field* prompts_file = find(fields, "prompts_file");
  if (prompts && prompts_file)
    fail(prompts_file->key, "give either 'prompts' or 'prompts_file', not both");
  if (prompts || prompts_file)
    for (const char* synthetic : {"prompt_len", "num_prompts"})
      if (const Field* x = find(fields, synthetic))
        fail(x->key, std::string("'") + synthetic +
                         "' sets synthetic prompts and cannot be combined with '" +
                         (prompts ? "prompts" : "prompts_file") + "'");
  if (prompts) {
    if (!prompts->value.IsSequence() || prompts->value.size() == 0)
      fail(*prompts,
           "'prompts' must be a non-empty list of token-id lists, got " + describe(prompts->value));
    for (const auto& prompt : prompts->value) {
      if (!prompt.IsSequence() || prompt.size() == 0)
        fail(prompt, "each prompt must be a non-empty list of token ids, got " + describe(prompt));
      std::vector<int32_t> ids;
      for (const auto& id : prompt) {
        const int64_t v = integer(id, at(id), "a token id");
        const int64_t hi = checkpoint ? kMaxDim : m.vocab - 1;
        if (v < 0 || v > hi)
          fail(id, "token id " + std::to_string(v) + " is outside the vocabulary (0.." +
                       std::to_string(hi) + ")");
        ids.push_back(static_cast<int32_t>(v));
      }
      m.prompts.push_back(std::move(ids));
    }
  }
  if (prompts_file) m.prompts = read_prompts_file(*prompts_file, m, m.prompts_file);
}

// The prompts file is read here, so that a missing file is reported at the key that names it.
// A prompts file named by `f` (model.prompts_file, traffic.prompts_file): its resolved path and
// prompts, token ids within the model's vocabulary (a checkpoint's is checked when it is read).
std::vector<std::vector<int32_t>> ScenarioParser::read_prompts_file(const Field& f,
                                                                    const ModelSpec& m,
                                                                    std::string& path) {
  const std::string name = string(f);
  if (name.empty()) fail(f, "'prompts_file' must name a file, got an empty string");
  path = resolve(name);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) || std::filesystem::is_directory(path, ec))
    fail(f, "cannot read prompts file '" + path +
                "': " + std::strerror(std::filesystem::is_directory(path, ec) ? EISDIR : ENOENT));
  return nvdet::read_prompts_file(path, m.checkpoint.empty() ? m.vocab - 1 : kMaxDim);
}

// ---- traffic (README "Serving traffic") --------------------------------------------------------

// `16` (fixed) or `{min: 8, max: 48}` (uniform), each in [lo, hi].
UniformRange ScenarioParser::uniform_range(const Field& f, int64_t lo, int64_t hi) {
  if (!f.value.IsMap()) {
    const int32_t v = static_cast<int32_t>(integer_in(f, lo, hi));
    return {v, v};
  }
  const auto fields = fields_of(f.value, at(f), "'traffic." + f.name + "'", {"min", "max"});
  const Field* min = find(fields, "min");
  const Field* max = find(fields, "max");
  if (!min || !max) fail(f, "'traffic." + f.name + "' needs both 'min' and 'max'");
  const UniformRange r{static_cast<int32_t>(integer_in(*min, lo, hi)),
                       static_cast<int32_t>(integer_in(*max, lo, hi))};
  if (r.max < r.min)
    fail(*max, "'max' (" + std::to_string(r.max) + ") must not be less than 'min' (" +
                   std::to_string(r.min) + ")");
  return r;
}

bool ScenarioParser::on_off(const Field& f) const {
  const std::string w = f.value.IsScalar() ? f.value.Scalar() : "";
  if (w == "on") return true;
  if (w == "off") return false;
  fail(f, "'" + f.name + "' must be on or off, got " + describe(f.value) +
              typo_hint(w, {"on", "off"}));
}

// A number in [0, 1].
double ScenarioParser::fraction(const Field& f) const {
  if (f.value.IsScalar() && (f.value.Scalar() == "0" || f.value.Scalar() == "0.0")) return 0.0;
  const double v = positive_real(f);
  if (v > 1.0) fail(f, "'" + f.name + "' must be from 0 to 1, got " + describe(f.value));
  return v;
}

void ScenarioParser::parse_traffic(const Field& f, Scenario& s) {
  TrafficSpec& t = s.traffic;
  t.enabled = true;
  traffic_where_ = at(f.key);
  const auto fields =
      fields_of(f.value, at(f), "'traffic'",
                {"requests", "arrival", "prompt_len", "max_new_tokens", "prompts_file", "eos",
                 "shared_prefix", "probe_prefix", "probe_arrival", "max_num_batched_tokens",
                 "max_num_seqs", "prefix_caching", "chunked_prefill", "traffic_seed"});
  for (const auto& x : fields) {
    traffic_keys_[x.name] = at(x.key);
    if (x.name == "requests") t.requests = static_cast<int32_t>(integer_in(x, 0, 1 << 16));
    if (x.name == "arrival") {
      const auto a = fields_of(x.value, at(x), "'traffic.arrival'", {"rate", "burst", "every"});
      const Field* rate = find(a, "rate");
      const Field* burst = find(a, "burst");
      const Field* every = find(a, "every");
      if (rate && (burst || every))
        fail(rate->key, "'traffic.arrival' takes 'rate' or 'burst' with 'every', not both");
      if (!rate && !(burst && every))
        fail(x, "'traffic.arrival' needs 'rate' (requests a step) or 'burst' and 'every'");
      if (rate) {
        t.rate = positive_real(*rate);
        if (t.rate > 1e6) fail(*rate, "'rate' must be at most 1000000 requests a step");
      } else {
        t.burst_size = static_cast<int32_t>(integer_in(*burst, 1, 1 << 16));
        t.burst_every = static_cast<int32_t>(integer_in(*every, 1, 1 << 20));
      }
    }
    if (x.name == "prompt_len") t.prompt_len = uniform_range(x, 1, 1 << 20);
    if (x.name == "max_new_tokens") t.max_new_tokens = uniform_range(x, 1, 1 << 16);
    if (x.name == "prompts_file") t.prompts = read_prompts_file(x, s.model, t.prompts_file);
    if (x.name == "eos") {
      const std::string w = x.value.IsScalar() ? x.value.Scalar() : "";
      if (w == "off") {
        t.eos = EosRule::kOff;
      } else if (w == "on") {
        if (s.model.checkpoint.empty())
          fail(x,
               "'eos: on' takes the checkpoint's eos_token_id; a synthetic model has none: "
               "give the token id (eos: 2) or off");
        t.eos = EosRule::kCheckpoint;
      } else if (is_integer_text(x.value)) {
        t.eos = EosRule::kTokens;
        t.eos_tokens = {static_cast<int32_t>(integer_in(x, 0, kMaxDim))};
      } else {
        fail(x, "'eos' must be on, off or a token id, got " + describe(x.value));
      }
    }
    if (x.name == "shared_prefix") {
      const auto p =
          fields_of(x.value, at(x), "'traffic.shared_prefix'", {"groups", "length", "fraction"});
      for (const auto& y : p) {
        if (y.name == "groups") t.prefix_groups = static_cast<int32_t>(integer_in(y, 1, 64));
        if (y.name == "length") t.prefix_len = static_cast<int32_t>(integer_in(y, 1, 1 << 20));
        if (y.name == "fraction") t.prefix_fraction = fraction(y);
      }
      for (const char* key : {"groups", "length"})
        if (!find(p, key))
          fail(x, std::string("'traffic.shared_prefix' needs '") + key + "' (and 'fraction')");
    }
    if (x.name == "probe_prefix") t.probe_prefix = static_cast<int32_t>(integer_in(x, 0, 63));
    if (x.name == "probe_arrival")
      t.probe_arrival = static_cast<int32_t>(integer_in(x, 0, 1 << 20));
    if (x.name == "max_num_batched_tokens")
      t.max_num_batched_tokens =
          check_axis_integer(axis_spec(Axis::kMaxNumBatchedTokens),
                             integer(x.value, at(x), "'" + x.name + "'"), at(x));
    if (x.name == "max_num_seqs")
      t.max_num_seqs = check_axis_integer(axis_spec(Axis::kMaxNumSeqs),
                                          integer(x.value, at(x), "'" + x.name + "'"), at(x));
    if (x.name == "prefix_caching") t.prefix_caching = on_off(x);
    if (x.name == "chunked_prefill") t.chunked_prefill = on_off(x);
    if (x.name == "traffic_seed")
      t.seed = check_axis_integer(axis_spec(Axis::kTrafficSeed),
                                  integer(x.value, at(x), "'" + x.name + "'"), at(x));
  }
  if (find(fields, "prompts_file") && find(fields, "prompt_len"))
    fail(find(fields, "prompt_len")->key,
         "'traffic.prompt_len' sets seeded prompts and cannot be combined with 'prompts_file'");
  if (t.probe_prefix >= t.prefix_groups)
    fail(find(fields, "probe_prefix")->key,
         "'traffic.probe_prefix' names shared prefix " + std::to_string(t.probe_prefix) +
             " but 'traffic.shared_prefix' has " + std::to_string(t.prefix_groups) + " groups");
}

// What a traffic scenario computes is a replay of the probed requests among the co-traffic, so
// the keys and axes that shape a fixed batch are refused with it (never silently ignored), and
// the scheduler must be able to run every request of every context.
void ScenarioParser::check_traffic(const Scenario& s) const {
  static const std::vector<Axis> traffic_axes = {Axis::kTrafficSeed, Axis::kMaxNumBatchedTokens,
                                                 Axis::kMaxNumSeqs, Axis::kPrefixCaching,
                                                 Axis::kChunkedPrefill};
  const TrafficSpec& t = s.traffic;
  for (const SweepAxis& a : s.sweep) {
    const bool traffic_axis =
        std::find(traffic_axes.begin(), traffic_axes.end(), a.axis) != traffic_axes.end();
    if (traffic_axis && !t.enabled)
      fail(a.where, "sweep axis '" + a.name() +
                        "' sets the serving traffic's scheduler; it needs a 'traffic' block");
    static const std::vector<Axis> fixed_batch = {
        Axis::kBatch,   Axis::kPosition, Axis::kPrefillChunk, Axis::kScoreBatch, Axis::kScoreChunk,
        Axis::kSampler, Axis::kTp,       Axis::kAllreduce,    Axis::kChannels};
    if (t.enabled && std::find(fixed_batch.begin(), fixed_batch.end(), a.axis) != fixed_batch.end())
      fail(a.where, "sweep axis '" + a.name() +
                        "' is not implemented with 'traffic': under serving traffic the scheduler "
                        "makes up each step (README \"Serving traffic\")");
  }
  if (!t.enabled) return;
  for (const char* key : {"prefill_chunk", "score_batch", "score_chunk", "sampling"}) {
    if (const auto it = model_keys_.find(key); it != model_keys_.end())
      fail(it->second, std::string("'model.") + key +
                           "' is not implemented with 'traffic': under serving traffic the "
                           "scheduler cuts the prompts, and tokens are greedy");
  }
  if (s.nccl.algo.size() || s.nccl.proto.size() || s.nccl.min_channels || s.nccl.max_channels)
    fail(traffic_where_,
         "'nccl' is not implemented with 'traffic' (the replay runs on one device)");
  const auto where = [&](const char* key) {
    const auto it = traffic_keys_.find(key);
    return it != traffic_keys_.end() ? it->second : traffic_where_;
  };
  const auto values_of = [&](Axis axis, AxisValue fixed) {
    for (const SweepAxis& a : s.sweep)
      if (a.axis == axis) return a.values;
    return std::vector<AxisValue>{std::move(fixed)};
  };
  int64_t least_budget = std::numeric_limits<int64_t>::max(), most_seqs = 0;
  for (const AxisValue& v : values_of(Axis::kMaxNumBatchedTokens, t.max_num_batched_tokens))
    least_budget = std::min(least_budget, std::get<int64_t>(v));
  for (const AxisValue& v : values_of(Axis::kMaxNumSeqs, t.max_num_seqs))
    most_seqs = std::max(most_seqs, std::get<int64_t>(v));
  if (least_budget < most_seqs)
    fail(where("max_num_batched_tokens"),
         "max_num_batched_tokens " + std::to_string(least_budget) + " is less than max_num_seqs " +
             std::to_string(most_seqs) +
             ": every running request's decode token must fit one step");
  // Without chunked prefill a prompt must fit one step's budget whole.
  bool unchunked = false;
  for (const AxisValue& v :
       values_of(Axis::kChunkedPrefill, std::string(t.chunked_prefill ? "on" : "off")))
    unchunked = unchunked || std::get<std::string>(v) == "off";
  if (unchunked) {
    int64_t longest = t.prefix_groups > 0 ? t.prefix_len : 0;
    if (t.prompts.empty()) {
      longest += t.prompt_len.max;
    } else {
      size_t file_longest = 0;
      for (const auto& p : t.prompts) file_longest = std::max(file_longest, p.size());
      longest += static_cast<int64_t>(file_longest);
    }
    const int64_t probe_prefix = t.probe_prefix >= 0 ? t.prefix_len : 0;
    if (s.model.prompts.empty()) {
      longest = std::max<int64_t>(longest, probe_prefix + s.model.prompt_len);
    } else {
      for (const int64_t r : s.requests)
        longest = std::max<int64_t>(
            longest, probe_prefix + static_cast<int64_t>(s.model.prompts.at(r).size()));
    }
    if (longest > least_budget)
      fail(where("chunked_prefill"),
           "with chunked_prefill off a prompt of " + std::to_string(longest) +
               " tokens cannot fit a step of max_num_batched_tokens " +
               std::to_string(least_budget) + "; raise max_num_batched_tokens or turn it on");
  }
}

void ScenarioParser::parse_requests(const Field* f, Scenario& s) {
  if (!f) {
    s.requests = {0};
    return;
  }
  s.requests_where = at(*f);
  if (is_integer_text(f->value)) {
    const int64_t count = integer_in(f->value, at(*f), "'requests' (a count)", 1, 1 << 16);
    for (int64_t i = 0; i < count; ++i) s.requests.push_back(i);
    return;
  }
  if (!f->value.IsSequence())
    fail(*f, "'requests' must be a list of request ids or a count, got " + describe(f->value));
  if (f->value.size() == 0) fail(*f, "'requests' must not be empty");
  for (const auto& id : f->value) {
    const int64_t v = integer_in(id, at(id), "a request id", 0, kMaxDim);
    if (std::find(s.requests.begin(), s.requests.end(), v) != s.requests.end())
      fail(id, "request " + std::to_string(v) + " is listed twice in 'requests'");
    s.requests.push_back(v);
  }
}

// ---- sweep ----------------------------------------------------------------------------------

// Appends the integers of a range map {from, to} / {from, to, step} / {from, to, mul}, inclusive.
void ScenarioParser::add_range(const AxisSpec& axis, const YAML::Node& range, SweepAxis& out,
                               AxisSource& source) {
  const std::string what = "the range of sweep axis '" + axis.name + "'";
  const auto fields = fields_of(range, at(range), what, {"from", "to", "step", "mul"});
  const Field* from = find(fields, "from");
  const Field* to = find(fields, "to");
  const Field* step = find(fields, "step");
  const Field* mul = find(fields, "mul");
  if (!from || !to) fail(range, what + " needs both 'from' and 'to'");
  if (step && mul) fail(mul->key, what + " takes 'step' or 'mul', not both");
  const int64_t lo = integer_in(*from, 0, kMaxDim);
  const int64_t hi = integer_in(*to, 0, kMaxDim);
  if (hi < lo)
    fail(*to, "'to' (" + std::to_string(hi) + ") must not be less than 'from' (" +
                  std::to_string(lo) + ")");
  check_axis_integer(axis, lo, at(*from));  // ranges grow: `from` is the smallest value
  // The values are counted before any is stored: many ranges, each under the limit, must not
  // expand to gigabytes before the axis's total is checked.
  int64_t factor = 0, stride = 1, count = 0;
  if (mul) {
    factor = integer_in(*mul, 2, 1 << 16);
    if (lo == 0) fail(*from, "'from' must be at least 1 with 'mul'");
    for (int64_t x = lo; x <= hi; x *= factor) ++count;  // at most 24 steps below kMaxDim
  } else {
    stride = step ? integer_in(*step, 1, kMaxDim) : 1;
    count = (hi - lo) / stride + 1;
  }
  if (count > kMaxAxisValues)
    fail(range, what + " expands to more than " + std::to_string(kMaxAxisValues) + " values");
  if (static_cast<int64_t>(out.values.size()) + count > kMaxAxisValues)
    fail(range, "sweep axis '" + axis.name + "' has more than " + std::to_string(kMaxAxisValues) +
                    " values (this range adds " + std::to_string(count) + " to " +
                    std::to_string(out.values.size()) + ")");
  for (int64_t i = 0, x = lo; i < count; ++i, x = mul ? x * factor : x + stride) {
    if (i + 1 == count) check_axis_integer(axis, x, at(*to));  // and the last the largest
    out.values.push_back(x);
    source.value_where.push_back(at(range));
  }
}

// Every value is checked by its axis's rule (lib/scenario/axis.h), the one every source of
// context values is checked by.
int64_t ScenarioParser::check_axis_integer(const AxisSpec& axis, int64_t v,
                                           const SourceLocation& where) const {
  if (const std::optional<std::string> why = axis_value_problem(axis, v)) fail(where, *why);
  return v;
}

// Checks one listed value against its axis's rule and converts it: a plain YAML integer is an
// integer when the axis takes them, anything else a word.
AxisValue ScenarioParser::axis_value(const AxisSpec& axis, const YAML::Node& n) const {
  if (!n.IsScalar())
    fail(n, "values of sweep axis '" + axis.name + "' must be single values or ranges, got " +
                describe(n));
  if (is_integer_text(n) && axis.takes_integers())
    return check_axis_integer(axis, integer(n, at(n), "'" + axis.name + "' value"), at(n));
  const AxisValue w = n.Scalar();
  if (const std::optional<std::string> why = axis_value_problem(axis, w)) fail(n, *why);
  return w;
}

void ScenarioParser::parse_sweep(const Field& f, Scenario& s) {
  std::vector<std::string> names;
  for (const AxisSpec& a : axis_table()) names.push_back(a.name);
  if (f.value.IsNull()) fail(f, "'sweep' is empty; give at least one axis or leave it out");
  const OpSpec& spec = op_spec(s.op);
  const std::vector<std::string> valid = axes_of_op(s.op);
  const auto axes =
      fields_of(f.value, at(f), "'sweep'", names,
                " (known axes for op '" + std::string(spec.name()) + "': " + join(valid) + ")");
  if (axes.empty()) fail(f, "'sweep' is empty; give at least one axis or leave it out");

  for (const auto& axis : axes) parse_axis(axis, valid, s);
}

// One axis of the sweep (from the file or from --axis): its values, checked by the same rules.
// An axis already in the sweep is replaced in place, so that the contexts keep their order.
void ScenarioParser::parse_axis(const Field& axis, const std::vector<std::string>& valid,
                                Scenario& s) {
  const OpSpec& spec = op_spec(s.op);
  {
    if (std::find(valid.begin(), valid.end(), axis.name) == valid.end())
      fail(axis.key, "axis '" + axis.name + "' does not apply to op '" + std::string(spec.name()) +
                         "' (its axes: " + join(valid) + ")");
    const AxisSpec& spec_of_axis = *find_axis(axis.name);  // a known name: checked by the caller
    SweepAxis out{spec_of_axis.axis, {}, at(axis.key)};
    AxisSource source;
    // Values: a single scalar, a range map, or a list whose items are scalars or range maps.
    const YAML::Node& v = axis.value;
    if (v.IsNull() || (v.IsSequence() && v.size() == 0))
      fail(axis, "sweep axis '" + axis.name + "' has no values");
    const auto add = [&](const YAML::Node& item) {
      if (item.IsMap()) {
        if (!spec_of_axis.takes_integers())
          fail(item, "sweep axis '" + axis.name + "' takes words (" +
                         quoted_list(spec_of_axis.words) + "), not a range");
        add_range(spec_of_axis, item, out, source);
      } else {
        if (static_cast<int64_t>(out.values.size()) >= kMaxAxisValues)
          fail(item, "sweep axis '" + axis.name + "' has more than " +
                         std::to_string(kMaxAxisValues) + " values");
        out.values.push_back(axis_value(spec_of_axis, item));
        source.value_where.push_back(at(item));
      }
    };
    if (v.IsSequence())
      for (const auto& item : v) add(item);
    else add(v);
    std::set<AxisValue> seen;
    for (size_t i = 0; i < out.values.size(); ++i)
      if (!seen.insert(out.values[i]).second)
        fail(source.value_where[i],
             "sweep axis '" + axis.name + "' lists " + axis_value_string(out.values[i]) + " twice");
    for (size_t i = 0; i < s.sweep.size(); ++i) {
      if (s.sweep[i].axis != out.axis) continue;
      s.sweep[i] = std::move(out);
      axis_sources_[i] = std::move(source);
      return;
    }
    s.sweep.push_back(std::move(out));
    axis_sources_.push_back(std::move(source));
  }
}

// --axis NAME=VALUES: VALUES is what the scenario's sweep would hold for the axis, in the same
// YAML flow syntax ("1,8,64", "[1, {from: 128, to: 1024, mul: 2}]"), read through the same guard
// and checked by the same rules; messages point into the option ("--axis batch:1:4: ...").
void ScenarioParser::apply_axis_overrides(Scenario& s) {
  std::vector<std::string> names;
  for (const AxisSpec& a : axis_table()) names.push_back(a.name);
  const std::vector<std::string> valid = axes_of_op(s.op);
  const std::string file = path_;
  for (size_t i = 0; i < overrides_.size(); ++i) {
    const AxisOverride& o = overrides_[i];
    path_ = "--axis " + excerpt(o.axis);
    // A second --axis of one name would silently replace the first: every value goes in one.
    for (size_t k = 0; k < i; ++k)
      if (overrides_[k].axis == o.axis)
        fail(SourceLocation{path_, 0, 0}, "axis '" + excerpt(o.axis) + "' is given twice (--axis " +
                                              excerpt(overrides_[k].axis) + "=" +
                                              excerpt(overrides_[k].values) + " and --axis " +
                                              excerpt(o.axis) + "=" + excerpt(o.values) +
                                              "); give all its values in one --axis");
    if (std::find(names.begin(), names.end(), o.axis) == names.end())
      fail(SourceLocation{path_, 0, 0}, "unknown axis '" + excerpt(o.axis) + "'" +
                                            typo_hint(o.axis, valid) + " (known axes for op '" +
                                            std::string(op_name(s.op)) + "': " + join(valid) + ")");
    const std::string text =
        !o.values.empty() && o.values.front() == '[' ? o.values : "[" + o.values + "]";
    check_yaml_guard(text, path_);
    YAML::Node value;
    try {
      value = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      fail(SourceLocation{path_, e.mark.line + 1, e.mark.column + 1},
           "YAML syntax error: " + excerpt(e.msg, 96));
    }
    parse_axis(Field{o.axis, value, value}, valid, s);
  }
  path_ = file;
}

// ---- fp8 ------------------------------------------------------------------------------------

// fp8: {format, act_scale, weight_scale, accumulation, static_scale} (README "FP8"), each
// optional (the defaults: e4m3, group_128, block_128x128, promoted). A model's format and weight
// scales are its FP8 checkpoint's, so it takes act_scale, accumulation and static_scale only.
void ScenarioParser::parse_fp8(const Field& f, Scenario& s) {
  const auto fields =
      fields_of(f.value, at(f), "'fp8'",
                {"format", "act_scale", "weight_scale", "accumulation", "static_scale"});
  s.fp8.enabled = true;
  s.fp8.where = at(f.key);
  const auto word = [&](const Field& x, const std::vector<std::string>& words) {
    const std::string w = string(x);
    if (std::find(words.begin(), words.end(), w) == words.end())
      fail(x, "'fp8." + x.name + "' must be one of " + quoted_list(words) + ", got " +
                  describe(x.value) + typo_hint(w, words));
    return w;
  };
  Fp8Scheme& scheme = s.fp8.scheme;
  for (const auto& x : fields) {
    if (s.op == OpKind::kModel && (x.name == "format" || x.name == "weight_scale"))
      fail(x.key, "'fp8." + x.name +
                      "' does not apply to op 'model': the FP8 checkpoint's quantization_config "
                      "gives the format and the weight scales");
    if (x.name == "format") scheme.format = *parse_fp8_format(word(x, fp8_format_words()));
    if (x.name == "act_scale") {
      scheme.act_scale = *parse_fp8_act_scale(word(x, fp8_act_scale_words()));
      fp8_act_scale_where_ = at(x);
    }
    if (x.name == "weight_scale")
      scheme.weight_scale = *parse_fp8_weight_scale(word(x, fp8_weight_scale_words()));
    if (x.name == "accumulation")
      scheme.accumulation = *parse_fp8_accumulation(word(x, fp8_accumulation_words()));
    if (x.name == "static_scale") {
      scheme.static_scale = static_cast<float>(positive_real(x));
      if (!(scheme.static_scale >= std::numeric_limits<float>::min()))
        fail(x, "'fp8.static_scale' is below the smallest normal float, got " + text_of(x));
      fp8_static_scale_where_ = at(x);
    }
  }
}

// The FP8 scheme across keys and axes: the FP8 axes need the key (a model may take FP8 from its
// checkpoint instead: its workload checks that), act_scale static needs static_scale and is for
// gemm only (an MoE block or a model would need a calibrated scale per GEMM), and what FP8 does
// not combine with is refused.
void ScenarioParser::check_fp8(const Scenario& s) const {
  bool uses_static = s.fp8.enabled && s.fp8.scheme.act_scale == Fp8ActScale::kStatic;
  SourceLocation static_where = fp8_act_scale_where_;
  const std::string_view static_word = fp8_act_scale_name(Fp8ActScale::kStatic);
  for (size_t i = 0; i < s.sweep.size(); ++i) {
    const SweepAxis& a = s.sweep[i];
    const bool fp8_axis = a.axis == Axis::kFp8Format || a.axis == Axis::kActScale ||
                          a.axis == Axis::kWeightScale || a.axis == Axis::kAccumulation;
    if (fp8_axis && !s.fp8.enabled && s.op != OpKind::kModel)
      fail(a.where, "sweep axis '" + a.name() +
                        "' sets the FP8 scheme; give the key 'fp8' (README \"FP8\") or leave the "
                        "axis out");
    if ((a.axis == Axis::kTp || a.axis == Axis::kAllreduce || a.axis == Axis::kChannels) &&
        s.fp8.enabled)
      fail(a.where,
           "sweep axis '" + a.name() + "' (tensor parallel) is not implemented with 'fp8'");
    if (a.axis != Axis::kActScale) continue;
    uses_static = false;  // the axis replaces the key's act_scale
    for (size_t v = 0; v < a.values.size(); ++v) {
      if (std::get<std::string>(a.values[v]) != static_word) continue;
      uses_static = true;
      static_where = axis_sources_[i].value_where[v];
    }
  }
  if (uses_static && s.op != OpKind::kGemm)
    fail(static_where,
         "act_scale 'static' applies to op gemm only: an MoE block or a model needs "
         "a calibrated scale per GEMM, which nvdet does not read");
  if (uses_static && s.fp8.scheme.static_scale <= 0)
    fail(static_where,
         "act_scale 'static' needs 'fp8.static_scale' (the activation scale, "
         "calibrated offline)");
  if (!uses_static && fp8_static_scale_where_.line)
    fail(fp8_static_scale_where_, "'fp8.static_scale' is read only with act_scale 'static'");
  if (s.fp8.enabled && s.tf32)
    fail(tf32_where_, "'tf32' does not apply to FP8 GEMMs (their inputs are FP8 codes)");
}

// ---- backends -------------------------------------------------------------------------------

void ScenarioParser::parse_backends(const Field& f, Scenario& s) {
  if (f.value.IsNull() || (f.value.IsMap() && f.value.size() == 0))
    fail(f, "'backends' must name at least one backend, e.g. 'cpu-invariant: invariant'");
  if (!f.value.IsMap())
    fail(f,
         "'backends' must be a map of backend name to expectation "
         "(invariant, variant or report), got " +
             describe(f.value));
  // Backend names are free here (the runner checks them against the registry); only the shape of
  // each entry is checked.
  std::vector<std::string> seen;
  for (auto it = f.value.begin(); it != f.value.end(); ++it) {
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar() || key.Scalar().empty())
      fail(key, "backend names must be plain words, got " + describe(key));
    const std::string name = key.Scalar();
    if (std::find(seen.begin(), seen.end(), name) != seen.end())
      fail(key, "backend '" + excerpt(name) + "' is listed twice in 'backends'");
    seen.push_back(name);

    Field expect{"expect", key, value};
    // The fields outlive this block: `parity` points into them below.
    std::vector<Field> fields;
    const Field* parity = nullptr;
    if (value.IsMap()) {
      fields = fields_of(value, at(value), "backend '" + excerpt(name) + "'", {"expect", "parity"});
      const Field* e = find(fields, "expect");
      parity = find(fields, "parity");
      if (!e)
        fail(value,
             "backend '" + excerpt(name) + "' is missing 'expect' (invariant, variant or report)");
      expect = *e;
    } else if (!value.IsScalar()) {
      fail(Field{name, key, value},
           "backend '" + excerpt(name) +
               "' needs an expectation (invariant, variant or report), got " + describe(value));
    }
    const std::string word = expect.value.Scalar();
    BackendSpec spec{name, Expectation::kReport, at(key)};
    if (word == "invariant") spec.expect = Expectation::kInvariant;
    else if (word == "variant") spec.expect = Expectation::kVariant;
    else if (word == "report") spec.expect = Expectation::kReport;
    else
      fail(expect, "unknown expectation '" + excerpt(word) + "' for backend '" + excerpt(name) +
                       "'" + typo_hint(word, {"invariant", "variant", "report"}) +
                       "; expected invariant, variant or report");
    if (parity) {
      if (parity->value.IsMap()) {
        parse_parity_tolerance(*parity, spec);
      } else {
        const std::string p = string(*parity);
        if (p == "bitwise") spec.parity = ParityExpectation::kBitwise;
        else if (p != "report")
          fail(*parity, "unknown parity expectation '" + excerpt(p) + "' for backend '" +
                            excerpt(name) + "'" + typo_hint(p, {"bitwise", "report"}) +
                            "; expected bitwise, report or a map of limits {mismatch_kl_max, "
                            "logprob_abs_diff_max}");
      }
      if (!op_spec(s.op).accepts_key("model"))
        fail(parity->key, "'parity' (sampler against trainer) applies to op 'model' only");
      parity_where_ = at(parity->key);
    }
    s.backends.push_back(std::move(spec));
  }
}

// parity: {mismatch_kl_max: 1e-4, logprob_abs_diff_max: 1e-3}: the limits a backend's
// sampler/trainer metrics may reach (README "Sampler against trainer"); at least one, each a
// number of at least 0.
void ScenarioParser::parse_parity_tolerance(const Field& f, BackendSpec& spec) {
  const auto limits = fields_of(f.value, at(f), "'parity' of backend '" + excerpt(spec.name) + "'",
                                {"mismatch_kl_max", "logprob_abs_diff_max"});
  if (limits.empty())
    fail(f, "'parity' limits need at least one of mismatch_kl_max and logprob_abs_diff_max");
  for (const Field& x : limits) {
    const double v = real(x);
    if (v < 0) fail(x, "'" + x.name + "' must be at least 0, got " + x.value.Scalar());
    (x.name == "mismatch_kl_max" ? spec.parity_tolerance.mismatch_kl_max
                                 : spec.parity_tolerance.logprob_abs_diff_max) = v;
  }
  spec.parity = ParityExpectation::kTolerance;
}

// ---- op probe: the server and the load -----------------------------------------------------

// The request body fields nvdet sets itself: a server hint may not replace one, which would
// change what the probe asks for behind the scenario's back.
const std::vector<std::string>& body_fields_set_by_nvdet() {
  static const std::vector<std::string> fields = {
      "model",    "prompt",       "messages",       "max_tokens", "temperature", "seed", "stream",
      "logprobs", "top_logprobs", "stream_options", "n"};
  return fields;
}

// Headers libcurl and nvdet set (or that would change the transfer itself).
bool reserved_header(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* r : {"host", "content-type", "content-length", "accept", "transfer-encoding",
                        "connection", "expect", "accept-encoding", "te", "upgrade"})
    if (name == r) return true;
  return false;
}

bool environment_variable_name(const std::string& w) {
  return !w.empty() && w.size() <= 256 && !std::isdigit(static_cast<unsigned char>(w[0])) &&
         std::all_of(w.begin(), w.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
         });
}

// A base URL nvdet may send requests under (lib/scenario/probe_spec.h), without trailing '/'.
std::string ScenarioParser::endpoint_url(const Field& f) const {
  const std::string url = string(f);
  if (const std::optional<std::string> why = endpoint_url_problem(url))
    fail(f, "'url' " + *why + ", got '" + excerpt(url) + "'");
  return normalized_endpoint_url(url);
}

double ScenarioParser::seconds(const Field& f) const {
  const double v = positive_real(f);
  if (v > 86400.0) fail(f, "'" + f.name + "' is more than a day (86400 s), got " + text_of(f));
  return v;
}

// A YAML value as the JSON a request body holds: maps and lists as objects and arrays, plain
// true/false/null as JSON's, plain decimal numbers as numbers, anything quoted or else a string.
nlohmann::json ScenarioParser::json_of(const YAML::Node& n, int depth) const {
  if (depth > 16) fail(n, "'body' is nested more than 16 levels deep");
  if (n.IsMap()) {
    nlohmann::json o = nlohmann::json::object();
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (!it->first.IsScalar()) fail(it->first, "keys of 'body' must be plain words");
      const std::string key = it->first.Scalar();
      if (o.contains(key)) fail(it->first, "duplicate key '" + excerpt(key) + "' in 'body'");
      o[key] = json_of(it->second, depth + 1);
    }
    return o;
  }
  if (n.IsSequence()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& item : n) a.push_back(json_of(item, depth + 1));
    return a;
  }
  if (n.IsNull()) return nullptr;
  const std::string& t = n.Scalar();
  if (n.Tag() == "!") return t;  // quoted: a string, whatever it looks like
  if (t == "true" || t == "True" || t == "TRUE") return true;
  if (t == "false" || t == "False" || t == "FALSE") return false;
  if (t == "null" || t == "~") return nullptr;
  if (is_integer_text(n)) return integer(n, at(n), "a 'body' number");
  if (!t.empty() && t.find_first_not_of("0123456789.eE+-") == std::string::npos) {
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(t.c_str(), &end);
    if (end == t.c_str() + t.size() && errno != ERANGE && std::isfinite(v)) return v;
  }
  return t;
}

void ScenarioParser::parse_endpoint(const Field& f, Scenario& s) {
  EndpointSpec& e = s.probe.endpoint;
  e.where = at(f.key);
  const auto fields =
      fields_of(f.value, at(f), "'endpoint'",
                {"name", "expect", "url", "model", "api", "api_key_env", "headers_env", "body",
                 "stream", "timeout", "inactivity_timeout", "retries", "max_response_bytes"});
  const auto need = [&](const char* key) -> const Field& {
    if (const Field* x = find(fields, key)) return *x;
    fail(f, std::string("'endpoint' is missing '") + key + "'");
  };
  BackendSpec spec{e.name, Expectation::kReport, at(f.key)};
  for (const Field& x : fields) {
    if (x.name == "name") {
      e.name = string(x);
      if (e.name.empty() || e.name.size() > 64 ||
          !std::all_of(e.name.begin(), e.name.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
          }))
        fail(x, "'name' must be a word of letters, digits, '.', '_' or '-' (at most 64), got " +
                    describe(x.value));
      spec.name = e.name;
      spec.where = at(x);
    }
    if (x.name == "url") e.url = endpoint_url(x);
    if (x.name == "model") {
      e.model = string(x);
      if (e.model.empty() || e.model.size() > 1024)
        fail(x, "'model' must name the served model (1 to 1024 characters)");
    }
    if (x.name == "api") {
      const std::string w = string(x);
      if (w == "completions") e.api = ServerApi::kCompletions;
      else if (w == "chat") e.api = ServerApi::kChat;
      else
        fail(x, "unknown api '" + excerpt(w) + "'" + typo_hint(w, {"completions", "chat"}) +
                    "; expected completions (/v1/completions) or chat (/v1/chat/completions)");
    }
    if (x.name == "api_key_env") {
      e.api_key_env = string(x);
      if (!environment_variable_name(e.api_key_env))
        fail(x, "'api_key_env' must name an environment variable, got " + describe(x.value));
    }
    if (x.name == "headers_env") {
      if (!x.value.IsMap())
        fail(x, "'headers_env' must map header names to environment variable names, got " +
                    describe(x.value));
      for (auto it = x.value.begin(); it != x.value.end(); ++it) {
        const YAML::Node key = it->first;
        const std::string header = key.IsScalar() ? key.Scalar() : "";
        const bool token =
            !header.empty() && header.size() <= 256 &&
            std::all_of(header.begin(), header.end(), [](char c) {
              return std::isalnum(static_cast<unsigned char>(c)) ||
                     std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
            });
        if (!token) fail(key, "'headers_env' keys must be header names, got " + describe(key));
        if (reserved_header(header))
          fail(key, "'headers_env' may not set '" + header + "': nvdet and libcurl set it");
        for (const auto& [taken, variable] : e.headers_env)
          if (absl::EqualsIgnoreCase(taken, header))
            fail(key, "header '" + header + "' is given twice in 'headers_env'");
        const std::string variable = it->second.IsScalar() ? it->second.Scalar() : "";
        if (!environment_variable_name(variable))
          fail(it->second,
               "'headers_env' values must name environment variables, got " + describe(it->second));
        e.headers_env.emplace_back(header, variable);
      }
    }
    if (x.name == "body") {
      if (!x.value.IsMap())
        fail(x, "'body' must be a map of request fields, got " + describe(x.value));
      const nlohmann::json body = json_of(x.value, 0);
      for (auto it = x.value.begin(); it != x.value.end(); ++it) {
        const auto& taken = body_fields_set_by_nvdet();
        if (std::find(taken.begin(), taken.end(), it->first.Scalar()) != taken.end())
          fail(it->first,
               "'body' may not set '" + it->first.Scalar() +
                   "': nvdet sets it from the scenario (endpoint.model, probe, fillers)");
      }
      e.body_json = body.dump();
    }
    if (x.name == "stream") e.stream = boolean(x);
    if (x.name == "timeout") e.timeout_s = seconds(x);
    if (x.name == "inactivity_timeout") e.inactivity_timeout_s = seconds(x);
    if (x.name == "retries") e.retries = static_cast<int32_t>(integer_in(x, 0, 10));
    if (x.name == "max_response_bytes")
      e.max_response_bytes = integer_in(x, 1024, int64_t{1} << 30);
    if (x.name == "expect") {
      const std::string word = string(x);
      if (word == "invariant") spec.expect = Expectation::kInvariant;
      else if (word == "variant") spec.expect = Expectation::kVariant;
      else if (word == "report") spec.expect = Expectation::kReport;
      else
        fail(x, "unknown expectation '" + excerpt(word) + "' for the endpoint" +
                    typo_hint(word, {"invariant", "variant", "report"}) +
                    "; expected invariant, variant or report");
    }
  }
  (void)need("url");
  (void)need("model");
  (void)need("expect");
  if (!e.api_key_env.empty())
    for (const auto& [header, variable] : e.headers_env)
      if (absl::EqualsIgnoreCase(header, "authorization"))
        fail(f, "'api_key_env' sets the Authorization header; 'headers_env' sets it too");
  s.backends = {spec};
}

void ScenarioParser::parse_probe_prompts(const Field& f, Scenario& s) {
  ProbePrompts& p = s.probe.probe;
  probe_prompts_where_ = at(f.key);
  const auto fields =
      fields_of(f.value, at(f), "'probe'",
                {"prompts", "prompts_file", "max_tokens", "temperature", "seed", "logprobs"});
  const Field* prompts = find(fields, "prompts");
  const Field* prompts_file = find(fields, "prompts_file");
  if (prompts && prompts_file)
    fail(prompts_file->key, "give either 'prompts' or 'prompts_file', not both");
  if (!prompts && !prompts_file) fail(f, "'probe' needs 'prompts' or 'prompts_file'");
  for (const Field& x : fields) {
    if (x.name == "max_tokens") p.max_tokens = static_cast<int32_t>(integer_in(x, 1, 1 << 20));
    if (x.name == "temperature") {
      const bool zero = x.value.IsScalar() && x.value.Tag() != "!" &&
                        (x.value.Scalar() == "0" || x.value.Scalar() == "0.0");
      p.temperature = zero ? 0.0 : positive_real(x);
      if (p.temperature > 1000.0)
        fail(x, "'temperature' must be from 0 (greedy) to 1000, got " + describe(x.value));
    }
    if (x.name == "seed") {
      p.seed = unsigned64(x);
      p.seeded = true;
    }
    if (x.name == "logprobs") p.logprobs = static_cast<int32_t>(integer_in(x, 0, 20));
  }
  if (p.temperature > 0.0 && !p.seeded)
    fail(f.key,
         "'probe.temperature' above 0 samples: give 'probe.seed', so that every run of the probe "
         "asks the server for the same draws");
  if (prompts) {
    if (!prompts->value.IsSequence() || prompts->value.size() == 0)
      fail(*prompts,
           "'prompts' must be a non-empty list of texts, got " + describe(prompts->value));
    for (const auto& prompt : prompts->value) {
      if (!prompt.IsScalar() || prompt.Scalar().empty())
        fail(prompt, "each prompt must be a non-empty text, got " + describe(prompt));
      p.prompts.push_back(prompt.Scalar());
    }
  }
  if (prompts_file) {
    const std::string name = string(*prompts_file);
    if (name.empty()) fail(*prompts_file, "'prompts_file' must name a file, got an empty string");
    p.prompts_file = resolve(name);
    std::error_code ec;
    if (!std::filesystem::exists(p.prompts_file, ec) ||
        std::filesystem::is_directory(p.prompts_file, ec))
      fail(*prompts_file,
           "cannot read prompts file '" + p.prompts_file + "': " +
               std::strerror(std::filesystem::is_directory(p.prompts_file, ec) ? EISDIR : ENOENT));
    p.prompts = read_text_prompts_file(p.prompts_file);
  }
}

void ScenarioParser::parse_fillers(const Field& f, Scenario& s) {
  FillerSpec& fl = s.probe.fillers;
  for (const Field& x :
       fields_of(f.value, at(f), "'fillers'", {"concurrency", "words", "max_tokens", "arrival"})) {
    if (x.name == "concurrency") fl.concurrency = static_cast<int32_t>(integer_in(x, 1, 4096));
    if (x.name == "words") fl.words = static_cast<int32_t>(integer_in(x, 1, 1 << 16));
    if (x.name == "max_tokens") fl.max_tokens = static_cast<int32_t>(integer_in(x, 1, 1 << 20));
    if (x.name == "arrival") {
      fl.arrival = string(x);
      if (const auto why = axis_value_problem(axis_spec(Axis::kArrival), fl.arrival)) fail(x, *why);
    }
  }
}

// The load's axes against the probe: concurrency 0 is the probe alone, which the control runs,
// and no more fillers are put in flight than one client holds connections for.
void ScenarioParser::cross_check_probe(const Scenario& s) {
  for (size_t a = 0; a < s.sweep.size(); ++a) {
    if (s.sweep[a].axis != Axis::kConcurrency) continue;
    for (size_t i = 0; i < s.sweep[a].values.size(); ++i) {
      const int64_t c = std::get<int64_t>(s.sweep[a].values[i]);
      if (c == 0)
        fail(axis_sources_[a].value_where[i],
             "concurrency 0 is the probe alone, which the control runs ('control: N' times); "
             "sweep concurrency from 1");
      if (c > 4096)
        fail(axis_sources_[a].value_where[i],
             "concurrency " + std::to_string(c) + " is more than 4096 fillers in flight");
    }
  }
  const int64_t prompts = static_cast<int64_t>(s.probe.probe.prompts.size());
  for (const int64_t r : s.requests)
    if (r >= prompts)
      fail(s.requests_where.line ? s.requests_where : probe_prompts_where_,
           "request " + std::to_string(r) + " is outside the probe's " + std::to_string(prompts) +
               " prompts (ids 0.." + std::to_string(prompts - 1) + ")");
}

// ---- cross-field checks ---------------------------------------------------------------------

void ScenarioParser::cross_check(const Scenario& s) {
  if (op_spec(s.op).server) {
    cross_check_probe(s);
    return;
  }
  const auto axis_index = [&](Axis axis) -> int {
    for (size_t i = 0; i < s.sweep.size(); ++i)
      if (s.sweep[i].axis == axis) return static_cast<int>(i);
    return -1;
  };
  const auto requests_text = [&] {
    std::vector<std::string> ids;
    for (const int64_t r : s.requests) ids.push_back(std::to_string(r));
    return "[" + join(ids) + "]";
  };
  const int64_t probed = static_cast<int64_t>(s.requests.size());

  if (s.tf32 && s.dtype != DType::kFP32)
    fail(tf32_where_, "'tf32' needs dtype fp32 (TF32 is a mode of fp32 GEMMs), but dtype is " +
                          std::string(dtype_name(s.dtype)));

  // Every batch must hold all probed requests; with no batch axis the batch is exactly them.
  int64_t smallest_batch = probed;
  if (const int b = axis_index(Axis::kBatch); b >= 0) {
    size_t smallest = 0;
    for (size_t i = 0; i < s.sweep[b].values.size(); ++i)
      if (std::get<int64_t>(s.sweep[b].values[i]) < std::get<int64_t>(s.sweep[b].values[smallest]))
        smallest = i;
    smallest_batch = std::get<int64_t>(s.sweep[b].values[smallest]);
    if (smallest_batch < probed)
      fail(axis_sources_[b].value_where[smallest],
           "batch " + std::to_string(smallest_batch) + " cannot hold the " +
               std::to_string(probed) + " probed requests " + requests_text() + ": request " +
               std::to_string(s.requests[smallest_batch]) + " would fall outside the batch");
  }
  if (const int p = axis_index(Axis::kPosition); p >= 0) {
    for (size_t i = 0; i < s.sweep[p].values.size(); ++i) {
      const auto* slot = std::get_if<int64_t>(&s.sweep[p].values[i]);
      if (!slot || *slot + probed <= smallest_batch) continue;
      const int64_t outside =
          std::max<int64_t>(0, smallest_batch - *slot);  // first probe that falls out
      fail(axis_sources_[p].value_where[i],
           "position " + std::to_string(*slot) + " puts request " +
               std::to_string(s.requests[outside]) + " (the " + ordinal(outside) +
               " probed request) at slot " + std::to_string(*slot + outside) +
               ", outside the smallest batch " + std::to_string(smallest_batch) + " (slots 0.." +
               std::to_string(smallest_batch - 1) + ")");
    }
  }

  if (op_spec(s.op).accepts_key("prefill")) {
    // Smallest prompt and largest prefix over both the fixed fields and the axes.
    int64_t prompt = s.prefill.prompt_len;
    SourceLocation prompt_where = prompt_len_where_;
    if (const int a = axis_index(Axis::kPromptLen); a >= 0) {
      prompt = std::numeric_limits<int64_t>::max();
      for (size_t i = 0; i < s.sweep[a].values.size(); ++i)
        if (std::get<int64_t>(s.sweep[a].values[i]) < prompt)
          prompt = std::get<int64_t>(s.sweep[a].values[i]),
          prompt_where = axis_sources_[a].value_where[i];
    }
    std::vector<std::pair<int64_t, SourceLocation>> prefixes = {
        {s.prefill.prefix_len, prefix_len_where_}};
    if (const int a = axis_index(Axis::kPrefixLen); a >= 0) {
      prefixes.clear();
      for (size_t i = 0; i < s.sweep[a].values.size(); ++i)
        prefixes.emplace_back(std::get<int64_t>(s.sweep[a].values[i]),
                              axis_sources_[a].value_where[i]);
    }
    for (const auto& [prefix, where] : prefixes)
      if (prefix >= prompt)
        fail(where.line ? where : prompt_where,
             "prefix_len " + std::to_string(prefix) + " must be smaller than prompt_len " +
                 std::to_string(prompt) + " (at least one prompt token must be computed)");
  }

  if (op_spec(s.op).accepts_key("model")) {
    const int64_t prompts = s.model.prompts.empty() ? s.model.num_prompts
                                                    : static_cast<int64_t>(s.model.prompts.size());
    for (const int64_t r : s.requests)
      if (r >= prompts)
        fail(s.requests_where.line ? s.requests_where : s.model.where,
             "request " + std::to_string(r) + " is outside the model's " + std::to_string(prompts) +
                 " prompts (ids 0.." + std::to_string(prompts - 1) + ")");
  }
}

}  // namespace

Scenario parse_scenario(const std::string& yaml_text, const std::string& path,
                        const std::vector<AxisOverride>& overrides) {
  check_yaml_guard(yaml_text, path);  // before yaml-cpp sees a byte: it can loop on some input
  try {
    return ScenarioParser(path, overrides).parse(yaml_text);
  } catch (const Error&) {
    throw;
  } catch (const YAML::Exception& e) {
    // Not expected (the parser checks node types before converting), but never let one escape.
    const SourceLocation where = e.mark.is_null()
                                     ? SourceLocation{path, 0, 0}
                                     : SourceLocation{path, e.mark.line + 1, e.mark.column + 1};
    throw_input_error(where, "cannot read the scenario: " + excerpt(e.msg, 96));
  } catch (const std::exception& e) {
    throw_input_error(SourceLocation{path, 0, 0},
                      std::string("cannot read the scenario: ") + e.what());
  }
}

Scenario load_scenario(const std::string& path, const std::vector<AxisOverride>& overrides) {
  return parse_scenario(read_bounded_file(path, kMaxScenarioBytes, "scenario"), path, overrides);
}

AxisOverride parse_axis_override(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw_input_error("--axis takes NAME=VALUES (e.g. batch=1,8,64), not '" + excerpt(text) + "'");
  }
  if (text.size() > kMaxAxisOverrideChars) {
    throw_input_error("--axis '" + excerpt(text) + "' is longer than " +
                      std::to_string(kMaxAxisOverrideChars) + " characters");
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::vector<Scenario> load_scenarios(const std::vector<std::string>& paths,
                                     const std::string& outputs,
                                     const std::vector<AxisOverride>& overrides) {
  std::vector<Scenario> scenarios;
  std::map<std::string, std::string> path_of_name;
  for (const std::string& path : paths) {
    Scenario s = load_scenario(path, overrides);
    const auto [it, fresh] = path_of_name.emplace(s.name, path);
    if (!fresh) {
      throw_input_error("two scenarios are named '" + s.name + "' (" + it->second + " and " + path +
                        "): their " + outputs + " would overwrite each other");
    }
    scenarios.push_back(std::move(s));
  }
  return scenarios;
}

}  // namespace nvdet
