#include "lib/report/bench_report.h"

#include <absl/strings/str_join.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <variant>
#include <vector>

namespace nvdet {
namespace {

// For people: four significant digits (whole numbers from 1000 up), so that a slow device's
// 0.000123 TFLOP/s is not 0.0; "-" where the figure does not apply.
std::string readable(double v) {
  if (!(v > 0)) return "-";
  return v >= 1000 ? fmt::format("{:.0f}", v) : fmt::format("{:.4g}", v);
}

// A note's value as Markdown code, or as it is where it holds a backtick.
std::string code(const std::string& v) {
  return v.find('`') == std::string::npos ? "`" + v + "`" : v;
}

// Per backend, in the table's order: the run notes every context shares, then those that differ
// between contexts with their distinct values (the first few, in order of appearance). Empty
// where no row has notes.
std::string what_ran(const BenchResult& r) {
  constexpr size_t kValuesShown = 4;
  std::vector<std::string> backends;
  std::map<std::string, size_t> rows_of;
  // backend -> key -> (distinct values in order of appearance, rows that carry the key)
  std::map<std::string, std::map<std::string, std::pair<std::vector<std::string>, size_t>>> keys;
  for (const BenchRow& row : r.rows) {
    if (rows_of[row.backend]++ == 0) backends.push_back(row.backend);
    for (const auto& [key, value] : row.notes) {
      auto& [values, rows] = keys[row.backend][key];
      if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
      ++rows;
    }
  }
  if (keys.empty()) return "";
  std::string s =
      "\n### What each backend ran\n\nThe run notes of an untimed call per context and backend "
      "(every row's notes are in the JSON and CSV).\n\n";
  for (const std::string& b : backends) {
    std::vector<std::string> shared, varying;
    for (const auto& [key, entry] : keys[b]) {
      const auto& [values, rows] = entry;
      if (values.size() == 1 && rows == rows_of[b]) {
        shared.push_back(key + " " + code(values[0]));
        continue;
      }
      const auto shown_end = values.begin() + std::min(values.size(), kValuesShown);
      std::string text =
          key + " (" +
          absl::StrJoin(values.begin(), shown_end, ", ",
                        [](std::string* out, const std::string& v) { out->append(code(v)); });
      if (values.size() > kValuesShown) {
        text += fmt::format(", ... {} values in all", values.size());
      }
      if (rows < rows_of[b]) text += fmt::format("; in {} of {} contexts", rows, rows_of[b]);
      varying.push_back(text + ")");
    }
    s += "- `" + b + "`: ";
    if (shared.empty() && varying.empty()) s += "no notes";
    s += absl::StrJoin(shared, ", ");
    if (!varying.empty()) {
      s += std::string(shared.empty() ? "" : "; ") + "by context: " + absl::StrJoin(varying, ", ");
    }
    s += "\n";
  }
  return s;
}

}  // namespace

std::string render_bench_markdown(const BenchResult& r) {
  std::string s = fmt::format("## nvdet bench: {} ({}, {})\n\n", r.scenario, r.op, r.dtype);
  s += r.system.gpus.empty()
           ? "Device: CPU only (host wall-clock times)\n\n"
           : fmt::format(
                 "Device: {} ({} SMs), driver {}, CUDA {}, cuBLAS {}. Median of {} timed "
                 "runs after {} warm-up runs, CUDA events; {}; {}.\n\n",
                 r.system.gpus[0].name, r.system.gpus[0].sm_count, r.system.driver_version,
                 r.system.cuda_runtime_version, r.system.cublas_version, r.timing.repetitions,
                 r.timing.warmup,
                 r.timing.flush_l2 ? "L2 evicted before each timed run (--l2 cold)"
                                   : "each run finds what the previous one left in L2 (--l2 hot)",
                 r.timing.launch_gaps
                     ? "each run launched as the GPU reached it, the host's launch cost included "
                       "(--launch-gaps)"
                     : "the runs queued ahead of the GPU, so each time is the device's work "
                       "alone, as under a CUDA graph");
  if (r.copy_gbps > 0) {
    s += fmt::format(
        "Copy ceiling: {:.0f} GB/s (a 256 MiB device-to-device copy, bytes read + "
        "written, timed in this run); `% of copy` is GB/s over it.\n\n",
        r.copy_gbps);
  }
  s += fmt::format(
      "| context | backend | median us | spread us (min-max) | TFLOP/s | GB/s | % of copy | time "
      "vs "
      "{} | throughput vs {} |\n",
      r.baseline, r.baseline);
  s += "|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const BenchRow& row : r.rows) {
    const std::string copy =
        row.copy_fraction > 0 ? fmt::format("{:.0f}%", 100.0 * row.copy_fraction) : "-";
    s += fmt::format("| {} | {}{} | {} | {}-{} | {} | {} | {} | {:.2f}x | {:.2f}x |\n", row.context,
                     row.backend, row.device_timed ? "" : " (host)", readable(row.median_us),
                     readable(row.min_us), readable(row.max_us), readable(row.tflops),
                     readable(row.gbps), copy, row.time_ratio,
                     row.time_ratio > 0 ? 1.0 / row.time_ratio : 0.0);
  }
  return s + what_ran(r);
}

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Six significant digits whatever the magnitude (a slow CPU's 0.000123 TFLOP/s, an H200's
// 4.5e+03 GB/s); "" where the figure does not apply (0: not measured or not counted).
std::string figure(double v) { return v > 0 ? fmt::format("{:.6g}", v) : std::string(); }

nlohmann::json figure_json(double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(nullptr); }

// The timed runs' spread, max - min, as a percentage of the median.
double spread_pct(const BenchRow& row) {
  return row.median_us > 0 ? 100.0 * (row.max_us - row.min_us) / row.median_us : 0.0;
}

// How the run's GPU rows met the L2 (`nvdet bench --l2`).
const char* l2_mode(const BenchResult& r) { return r.timing.flush_l2 ? "cold" : "hot"; }

// How the run's GPU rows were launched (`nvdet bench --launch-gaps`).
const char* launch_mode(const BenchResult& r) { return r.timing.launch_gaps ? "paced" : "queued"; }

// The row's run notes in one CSV field: "key=value; key=value", keys in order.
std::string notes_text(const RunNotes& notes) {
  return absl::StrJoin(notes, "; ", absl::PairFormatter("="));
}

// The row's: the run's mode for device-timed rows, "" for host-timed ones.
std::string l2_text(const BenchResult& r, const BenchRow& row) {
  return row.device_timed ? l2_mode(r) : "";
}

std::string axis_text(const BenchRow& row, const std::string& axis) {
  for (const auto& [name, v] : row.context_values) {
    if (name == axis) return axis_value_string(v);
  }
  return "";
}

}  // namespace

std::string render_bench_csv(const BenchResult& r) {
  std::string s = "scenario,context";
  for (const std::string& a : r.axes) s += "," + csv_field(a);
  s += ",backend,median_us,min_us,max_us,samples,spread_pct,tflops,gbps,copy_fraction,time_ratio,"
       "baseline,device_timed,l2,notes\n";
  for (const BenchRow& row : r.rows) {
    s += csv_field(r.scenario) + "," + csv_field(row.context);
    for (const std::string& a : r.axes) s += "," + csv_field(axis_text(row, a));
    // Every figure with six significant digits (README), the spread too; `baseline` names the
    // backend time_ratio divides by, so that a table read on its own says what 1.0 is.
    s += fmt::format(
        ",{},{:.6g},{:.6g},{:.6g},{},{:.6g},{},{},{},{:.6g},{},{},{},{}\n", csv_field(row.backend),
        row.median_us, row.min_us, row.max_us, row.samples, spread_pct(row), figure(row.tflops),
        figure(row.gbps), figure(row.copy_fraction), row.time_ratio, csv_field(r.baseline),
        row.device_timed ? "true" : "false", l2_text(r, row), csv_field(notes_text(row.notes)));
  }
  return s;
}

nlohmann::json bench_to_json(const BenchResult& r) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["scenario"] = r.scenario;
  j["op"] = r.op;
  j["dtype"] = r.dtype;
  j["baseline"] = r.baseline;
  j["timing"] = {{"warmup", r.timing.warmup},
                 {"repetitions", r.timing.repetitions},
                 {"l2", l2_mode(r)},
                 {"launches", launch_mode(r)}};
  j["device"] =
      r.system.gpus.empty() ? nlohmann::json("cpu") : nlohmann::json(r.system.gpus[0].name);
  j["driver_version"] = r.system.driver_version;
  j["cuda_runtime_version"] = r.system.cuda_runtime_version;
  j["cublas_version"] = r.system.cublas_version;
  if (r.copy_gbps > 0) j["copy_gbps"] = r.copy_gbps;
  // Each row carries every axis as a key of its own (named in "axes"), for plotting tools.
  j["axes"] = r.axes;
  j["rows"] = nlohmann::json::array();
  for (const BenchRow& row : r.rows) {
    nlohmann::json jr = {{"context", row.context},
                         {"backend", row.backend},
                         {"median_us", row.median_us},
                         {"min_us", row.min_us},
                         {"max_us", row.max_us},
                         {"samples", row.samples},
                         {"spread_pct", spread_pct(row)},
                         {"tflops", figure_json(row.tflops)},
                         {"gbps", figure_json(row.gbps)},
                         {"time_ratio", row.time_ratio},
                         {"baseline", r.baseline},
                         {"copy_fraction", figure_json(row.copy_fraction)},
                         {"device_timed", row.device_timed},
                         {"l2", l2_text(r, row)},
                         {"notes", row.notes}};
    for (const auto& [name, v] : row.context_values) {
      if (const auto* n = std::get_if<int64_t>(&v)) {
        jr[name] = *n;
      } else {
        jr[name] = axis_value_string(v);
      }
    }
    j["rows"].push_back(std::move(jr));
  }
  return j;
}

}  // namespace nvdet
