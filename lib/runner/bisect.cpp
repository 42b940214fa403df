#include "lib/runner/bisect.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <tuple>

#include "lib/backend/backend.h"
#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"
#include "lib/loader/op_table.h"
#include "lib/model/model_runner.h"
#include "lib/runner/audit.h"
#include "lib/runner/completion_compare.h"
#include "lib/runner/traffic_steps_text.h"
#include "lib/runner/verdict.h"
#include "lib/scenario/context.h"

namespace nvdet {
namespace {

struct Captured {
  int32_t step = 0, layer = 0;
  std::string op;
  HostTensor rows;
};

// Keeps every tensor of the one watched request (its rows only: memory grows with the steps,
// layers and widths, not with the batch).
class Capture final : public TensorObserver {
 public:
  void observe(size_t, int32_t step, int32_t layer, std::string_view op,
               const HostTensor& rows) override {
    entries.push_back({step, layer, std::string(op), rows});
  }
  std::vector<Captured> entries;
};

// The baseline context with some axis values replaced (or added), made and checked as every
// context is (make_context): a value outside its axis's rule is refused, naming the axis.
Context context_with(const Scenario& s, const Context& base,
                     const std::vector<std::pair<std::string, std::string>>& kv,
                     const std::string& flag) {
  const AxisSettings defaults = axis_defaults(s);
  Context c = base;
  for (const auto& [key, text] : kv) {
    const AxisSpec* axis = find_axis(key);
    const AxisValue v = axis ? axis_value_from_text(*axis, text) : AxisValue(text);
    std::vector<std::pair<std::string, AxisValue>> values = c.values;
    bool replaced = false;
    for (auto& [name, old] : values) {
      if (name == key) old = v, replaced = true;
    }
    if (!replaced) values.emplace_back(key, v);
    c = make_context(s.op, base.index, std::move(values), &defaults,
                     flag + " " + excerpt(key) + "=" + excerpt(text));
  }
  return c;
}

std::string pick_backend(const Scenario& s, const std::string& asked) {
  if (!asked.empty()) return asked;
  for (const BackendSpec& b : s.backends) {
    if (b.expect != Expectation::kInvariant) return b.name;
  }
  return s.backends.front().name;
}

RequestOutput as_output(int64_t request, SequenceResult r) {
  RequestOutput o;
  o.request = request;
  o.output = std::move(r.logits);
  o.completion = std::move(r.completion);
  o.traffic_steps = std::move(r.steps);
  return o;
}

std::vector<std::string> coord_names_of(const Captured& c) {
  if (c.rows.rank() == 3) return {"token", "head", "dim"};
  if (c.op == "logits") return {"token", "vocab"};
  return {"token", "col"};
}

class Bisector {
 public:
  Bisector(const Scenario& s, const BisectOptions& o) : s_(s), o_(o), runner_(s) {}

  BisectResult run() {
    BisectResult r;
    r.scenario = s_.name;
    r.request = o_.request >= 0 ? o_.request : s_.requests.front();
    r.layers = runner_.weights().config.layers;
    bool known = false;
    for (int64_t q : s_.requests) known = known || q == r.request;
    if (!known) {
      std::string ids;
      for (int64_t q : s_.requests) ids += (ids.empty() ? "" : ", ") + std::to_string(q);
      throw_input_error("--request " + std::to_string(r.request) +
                        " is not one of the scenario's probed requests (" + ids + ")");
    }
    if (o_.backend_override || !o_.backend.empty()) return run_on(open_backend(r), r);
    // No backend named: the first of the scenario's backends (that this machine runs) whose
    // contexts differ, so that the default has something to bisect; when none differs, the
    // first that ran, reported identical.
    std::optional<BisectResult> first;
    for (const BackendSpec& b : s_.backends) {
      if (!scenario_support(s_, b.name, device_facts()).ok()) continue;
      BisectResult attempt = r;
      attempt.backend = b.name;
      owned_ = make_backend(b.name);
      run_on(*owned_, attempt);
      if (attempt.diverged) return attempt;
      if (!first) first = std::move(attempt);
    }
    if (first) return *first;
    return run_on(open_backend(r), r);  // no backend runs here: open_backend says why
  }

 private:
  BisectResult& run_on(Backend& backend, BisectResult& r) {
    const std::vector<Context> contexts = expand_contexts(s_);
    const Context a = context_with(s_, contexts.front(), o_.context, "--context");
    if (o_.scoring) return against_scoring(backend, a, r);
    std::optional<Context> b;
    if (!o_.against.empty()) {
      b = context_with(s_, contexts.front(), o_.against, "--against");
    } else {
      b = first_divergent_context(backend, a, contexts, r.request);
    }
    r.context_a = a.id;
    if (!b) return r;  // no context differs: nothing to bisect
    r.context_b = b->id;

    Capture cap_a, cap_b;
    RequestOutput out_a =
        as_output(r.request, runner_.run(backend, a, {r.request}, &cap_a, nullptr).at(0));
    RequestOutput out_b =
        as_output(r.request, runner_.run(backend, *b, {r.request}, &cap_b, nullptr).at(0));
    r.completion_a = out_a.completion;
    r.completion_b = out_b.completion;
    r.steps = static_cast<int32_t>(std::max(out_a.completion.size(), out_b.completion.size()));
    r.first_flip = compare_completions(out_a, out_b);
    // Sampled tokens are drawn, not argmax choices: no top-1/top-2 margin explains a flip.
    if (r.first_flip)
      r.first_flip->sampled = s_.model.sampling.temperature > 0.0 && s_.model.sampling.enabled;
    compare_traces(cap_a.entries, cap_b.entries, r);
    r.diverged =
        r.first_op.has_value() || r.first_flip.has_value() || out_a.completion != out_b.completion;
    std::optional<OpDivergence> first_op;
    if (r.first_op) first_op = OpDivergence{r.first_op->step, r.first_op->layer, r.first_op->op};
    if (const auto t = traffic_parting(out_a, out_b, first_op, r.first_flip)) {
      r.step_a = t->baseline;
      r.step_b = t->here;
    }
    return r;
  }

  // Context A's decode against its own scoring pass: the same tokens, computed by a trainer.
  BisectResult& against_scoring(Backend& backend, const Context& a, BisectResult& r) {
    if (!o_.against.empty()) {
      throw_input_error(
          "--scoring compares context A with its own scoring pass; leave --against out");
    }
    const ScoreOptions so = runner_.score_options_for(a);
    r.context_a = a.id;
    r.context_b = fmt::format("scoring pass of {} (score_batch={}, score_chunk={})", a.id, so.batch,
                              so.chunk == 0 ? std::string("whole") : std::to_string(so.chunk));
    Capture cap_a, cap_b;
    RequestOutput out_a =
        as_output(r.request, runner_.run(backend, a, {r.request}, &cap_a, nullptr).at(0));
    RequestOutput out_b;
    out_b.request = r.request;
    out_b.output =
        runner_.score(backend, a, {r.request}, {out_a.completion}, &cap_b, nullptr).at(0);
    for (int64_t t = 0; t < out_b.output.dim(0); ++t) {
      out_b.completion.push_back(argmax_of_row(out_b.output, t));
    }
    r.completion_a = out_a.completion;
    r.completion_b = out_b.completion;
    r.steps = static_cast<int32_t>(out_a.completion.size());
    r.first_flip = compare_completions(out_a, out_b);
    compare_traces(cap_a.entries, cap_b.entries, r);
    r.diverged = r.first_op.has_value() || r.first_flip.has_value();
    return r;
  }

  static int32_t argmax_of_row(const HostTensor& logits, int64_t row) {
    const int64_t v = logits.dim(1);
    int32_t best = 0;
    for (int64_t j = 1; j < v; ++j) {
      if (logits.get(row * v + j) > logits.get(row * v + best)) best = static_cast<int32_t>(j);
    }
    return best;
  }

  Backend& open_backend(BisectResult& r) {
    if (o_.backend_override) {
      r.backend = o_.backend_override->info().name;
      return *o_.backend_override;
    }
    r.backend = pick_backend(s_, o_.backend);
    // An op or dtype the backend lacks is refused before it exists; a machine that cannot run
    // it, when it is created.
    if (const Support answer = scenario_support(s_, r.backend, device_facts());
        answer.status == Support::Status::kUnsupportedOp) {
      throw_input_error("backend '" + excerpt(r.backend) + "' " + answer.reason);
    }
    owned_ = make_backend(r.backend);
    return *owned_;
  }

  // The first context whose completion of the request differs from A's; failing that, the
  // first whose logits differ in any bit; nullopt when every context gives A's bits.
  std::optional<Context> first_divergent_context(Backend& backend, const Context& a,
                                                 const std::vector<Context>& contexts,
                                                 int64_t request) {
    const SequenceResult ref = runner_.run(backend, a, {request}, nullptr, nullptr).at(0);
    std::optional<Context> bits_only;
    for (const Context& c : contexts) {
      if (c.id == a.id) continue;
      const SequenceResult got = runner_.run(backend, c, {request}, nullptr, nullptr).at(0);
      if (got.completion != ref.completion) return c;
      if (!bits_only && (got.logits.shape() != ref.logits.shape() ||
                         compare_tensors(ref.logits, got.logits).mismatch_count > 0)) {
        bits_only = c;
      }
    }
    return bits_only;
  }

  static void compare_traces(const std::vector<Captured>& a, const std::vector<Captured>& b,
                             BisectResult& r) {
    const int32_t L = r.layers;
    r.columns.push_back("embed");
    for (int32_t l = 0; l < L; ++l) r.columns.push_back("layer " + std::to_string(l));
    r.columns.push_back("final_norm");
    r.columns.push_back("logits");
    auto column_of = [&](const Captured& c) -> size_t {
      if (c.layer >= 0) return static_cast<size_t>(1 + c.layer);
      if (c.op == "embed") return 0;
      return c.op == "final_norm" ? static_cast<size_t>(L + 1) : static_cast<size_t>(L + 2);
    };
    std::map<std::tuple<int32_t, int32_t, std::string>, const Captured*> by_key;
    for (const Captured& c : b) by_key[{c.step, c.layer, c.op}] = &c;
    for (const Captured& ca : a) {
      auto it = by_key.find({ca.step, ca.layer, ca.op});
      if (it == by_key.end()) continue;
      const Captured& cb = *it->second;
      if (r.growth.empty() || r.growth.back().step != ca.step) {
        r.growth.push_back({ca.step, std::vector<double>(r.columns.size(), 0.0)});
      }
      double& cell = r.growth.back().max_abs_diff[column_of(ca)];
      if (ca.rows.shape() != cb.rows.shape() || ca.rows.dtype() != cb.rows.dtype()) {
        cell = std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      const TensorComparison cmp = compare_tensors(ca.rows, cb.rows);
      if (cmp.identical) continue;
      if (!std::isnan(cell)) cell = std::max(cell, cmp.max_abs_diff);
      if (!r.first_op && cmp.first) {
        BisectFirstOp f;
        f.step = ca.step;
        f.layer = ca.layer;
        f.op = ca.op;
        f.shape = ca.rows.shape();
        f.coord_names = coord_names_of(ca);
        f.first_mismatch = *cmp.first;
        f.max_abs_diff = cmp.max_abs_diff;
        f.mismatch_count = cmp.mismatch_count;
        f.numel = ca.rows.numel();
        r.first_op = f;
      }
    }
  }

  const Scenario& s_;
  const BisectOptions& o_;
  ModelRunner runner_;
  std::unique_ptr<Backend> owned_;
};

std::string coords_text(const std::vector<std::string>& names, const std::vector<int64_t>& coords) {
  std::string out;
  for (size_t i = 0; i < coords.size(); ++i) {
    out += (i ? ", " : "") + (i < names.size() ? names[i] : "dim" + std::to_string(i)) + " " +
           std::to_string(coords[i]);
  }
  return out;
}

std::string cell_text(double v) {
  if (std::isnan(v)) return "n/a";
  if (v == 0.0) return "0";
  return fmt::format("{:.3g}", v);
}

}  // namespace

BisectResult run_bisect(const Scenario& s, const BisectOptions& options) {
  if (s.op != OpKind::kModel) {
    throw_input_error(s.path +
                      ": nvdet bisect needs a model scenario (op: model), this one is op " +
                      std::string(op_name(s.op)));
  }
  Bisector b(s, options);
  return b.run();
}

nlohmann::json bisect_to_json(const BisectResult& r) {
  using json = nlohmann::json;
  json j;
  j["scenario"] = r.scenario;
  j["backend"] = r.backend;
  j["request"] = r.request;
  j["context_a"] = r.context_a;
  j["context_b"] = r.context_b.empty() ? json(nullptr) : json(r.context_b);
  j["diverged"] = r.diverged;
  j["steps"] = r.steps;
  j["layers"] = r.layers;
  if (r.first_op) {
    const BisectFirstOp& f = *r.first_op;
    j["first_op"] = {{"step", f.step},
                     {"layer", f.layer},
                     {"op", f.op},
                     {"shape", f.shape},
                     {"coord_names", f.coord_names},
                     {"first_mismatch",
                      {{"flat_index", f.first_mismatch.flat_index},
                       {"coords", f.first_mismatch.coords},
                       {"a", f.first_mismatch.a},
                       {"b", f.first_mismatch.b},
                       {"a_bits", f.first_mismatch.a_bits},
                       {"b_bits", f.first_mismatch.b_bits},
                       {"ulp", f.first_mismatch.ulp}}},
                     {"max_abs_diff", f.max_abs_diff},
                     {"mismatch_count", f.mismatch_count},
                     {"numel", f.numel}};
  } else {
    j["first_op"] = nullptr;
  }
  if (r.first_flip) {
    const CompletionDivergence& d = *r.first_flip;
    j["first_flip"] = {{"step", d.step},
                       {"token_a", d.baseline_token},
                       {"token_b", d.token},
                       {"a_logit_of_token_a", d.baseline_logit_of_baseline_token},
                       {"a_logit_of_token_b", d.baseline_logit_of_token},
                       {"b_logit_of_token_a", d.logit_of_baseline_token},
                       {"b_logit_of_token_b", d.logit_of_token},
                       {"a_margin", d.baseline_margin}};
  } else {
    j["first_flip"] = nullptr;
  }
  j["completion_a"] = r.completion_a;
  j["completion_b"] = r.completion_b;
  j["columns"] = r.columns;
  json growth = json::array();
  for (const BisectStepGrowth& g : r.growth) {
    json cells = json::array();
    for (double v : g.max_abs_diff) cells.push_back(std::isnan(v) ? json(nullptr) : json(v));
    growth.push_back({{"step", g.step}, {"max_abs_diff", cells}});
  }
  j["growth"] = growth;
  if (r.step_a && r.step_b) {
    j["traffic"] = {{"a", probe_step_json(*r.step_a)}, {"b", probe_step_json(*r.step_b)}};
  }
  return j;
}

std::string render_bisect_text(const BisectResult& r) {
  std::string out =
      fmt::format("bisect {}: backend {}, request {}\n", r.scenario, r.backend, r.request);
  out += fmt::format("  A: {}\n", r.context_a);
  if (r.context_b.empty()) {
    out += "  no context of the scenario changes this request's bits: nothing to bisect\n";
    return out;
  }
  out += fmt::format("  B: {}\n", r.context_b);
  if (!r.diverged) {
    out += "  A and B are bit for bit identical at every step, layer and op\n";
    return out;
  }
  if (r.first_op) {
    const BisectFirstOp& f = *r.first_op;
    const FirstMismatch& m = f.first_mismatch;
    out += fmt::format("first divergent op: {} (shape [{}])\n",
                       describe_op_location(f.step, f.layer, f.op), fmt::join(f.shape, ", "));
    out += fmt::format("  first mismatch at {} (flat {}): A {:.9g} ({}) vs B {:.9g} ({}), {} ulp\n",
                       coords_text(f.coord_names, m.coords), m.flat_index, m.a, m.a_bits, m.b,
                       m.b_bits, m.ulp == UINT64_MAX ? std::string("nan") : std::to_string(m.ulp));
    out += fmt::format("  {} of {} elements differ, max |diff| {}\n", f.mismatch_count, f.numel,
                       cell_text(f.max_abs_diff));
  }
  if (r.step_a && r.step_b) {
    out += fmt::format("  the step's batch in A: {}\n  the step's batch in B: {}\n",
                       probe_step_text(*r.step_a), probe_step_text(*r.step_b));
  }
  if (r.first_flip) {
    const CompletionDivergence& d = *r.first_flip;
    out += fmt::format(
        "first {} flip: step {}: A chose {} (logit {:.6g}{}), "
        "B chose {} (logit {:.6g}); B's logit of A's token {:.6g}\n",
        d.sampled ? "token" : "argmax", d.step, d.baseline_token,
        d.baseline_logit_of_baseline_token,
        d.sampled ? std::string(", sampled")
                  : fmt::format(", margin over 2nd {:.3g}", d.baseline_margin),
        d.token, d.logit_of_token, d.logit_of_baseline_token);
  } else {
    out += "no argmax flip: both contexts generate the same tokens (the logits differ)\n";
  }
  out += fmt::format("  A: {}\n  B: {}\n", fmt::join(r.completion_a, " "),
                     fmt::join(r.completion_b, " "));
  out += "max |diff| per layer per step (A vs B):\n";
  out += fmt::format("{:>6}", "step");
  for (const std::string& c : r.columns) out += fmt::format(" {:>10}", c);
  out += "\n";
  // Up to two steps past the flip, then a count; the JSON output has every step.
  const int64_t last = r.first_flip ? r.first_flip->step + 2 : std::numeric_limits<int64_t>::max();
  size_t shown = 0;
  for (const BisectStepGrowth& g : r.growth) {
    if (g.step > last) break;
    out += fmt::format("{:>6}", g.step);
    for (double v : g.max_abs_diff) out += fmt::format(" {:>10}", cell_text(v));
    out += "\n";
    ++shown;
  }
  if (shown < r.growth.size()) {
    out += fmt::format(
        "  ... {} more steps (the inputs differ after the flip; --format json lists them)\n",
        r.growth.size() - shown);
  }
  return out;
}

}  // namespace nvdet
