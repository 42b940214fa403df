// nvdet audit SCENARIO...: run every context of each scenario through its backends, compare the
// probed requests' outputs bit for bit, and exit 0 only if every expectation held.
//
// Everything that can be checked is checked before the first context runs: every scenario file
// is loaded and validated, names are unique, backends and filters are valid, the manifest to
// verify is read, and every output target (report folder and files, manifest, dump folder) is
// of the right kind and writable. A mistake costs seconds, not a whole audit.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "lib/core/atomic_file.h"
#include "lib/core/checked_parse.h"
#include "lib/core/child_process.h"
#include "lib/core/error.h"
#include "lib/core/system_info.h"
#include "lib/core/temporary_files.h"
#include "lib/core/text_excerpt.h"
#include "lib/loader/op_table.h"
#include "lib/loader/scenario_loader.h"
#include "lib/manifest/manifest.h"
#include "lib/model/decode_progress.h"
#include "lib/report/console_summary.h"
#include "lib/report/json_report_reader.h"
#include "lib/report/last_failed.h"
#include "lib/report/merge_reports.h"
#include "lib/report/report_writers.h"
#include "lib/runner/audit.h"
#include "lib/runner/context_selection.h"
#include "lib/runner/nvdet_dump.h"
#include "lib/runner/run_fingerprint.h"
#include "lib/runner/shard.h"
#include "lib/scenario/context_filter.h"
#include "tools/cli_options.h"
#include "tools/command.h"
#include "tools/result_output.h"

namespace nvdet::cli {
namespace {

namespace fs = std::filesystem;

struct AuditFlags {
  std::vector<std::string> scenarios;
  std::vector<std::string> backends;
  std::string report_dir;
  std::string formats = "md,json";
  bool format_given = false;  // --format on the command line
  std::string filter;
  bool quiet = false;
  bool list_contexts = false;
  bool skip_unavailable = false;
  std::string record, verify, dump_dir;  // --record, --verify, --dump (lib/manifest/manifest.h)
  bool strict = false;
  std::vector<std::string> verify_as;  // --verify-as RUN=RECORDED
  uint64_t max_contexts = kDefaultMaxContexts;
  std::string max_host_bytes, max_device_bytes;  // "" = sized to this machine
  std::vector<std::string> axes;                 // --axis NAME=VALUES
  std::string shard;                             // --shard I/N | auto
  std::vector<std::string> devices;      // --devices 0,1,...: one shard per GPU, in parallel
  bool exit_first = false;               // -x
  int max_fail = 0;                      // --maxfail N (0: no limit)
  std::vector<std::string> last_failed;  // --last-failed REPORT.json...
};

constexpr int kMaxDevices = 64;

std::optional<uint64_t> byte_limit(const std::string& flag, const std::string& text) {
  if (text.empty()) return std::nullopt;
  if (const auto b = parse_byte_size(text)) return b;
  throw_input_error(flag + " '" + text + "' is not a size (bytes, or a number with K, M, G or T)");
}

// True when two output paths name the same file (relative or absolute, through "..", links in
// their folders); both folders exist by the time this is asked.
bool same_output_path(const fs::path& a, const fs::path& b) {
  std::error_code ea, eb;
  const fs::path ca = fs::weakly_canonical(fs::absolute(a), ea);
  const fs::path cb = fs::weakly_canonical(fs::absolute(b), eb);
  return !ea && !eb && ca == cb;
}

struct Planned {
  Scenario scenario;
  std::vector<Context> contexts;
  std::optional<ShardInfo> shard;
};

std::vector<AxisOverride> axis_overrides(const AuditFlags& f) {
  std::vector<AxisOverride> out;
  for (const std::string& a : f.axes) out.push_back(parse_axis_override(a));
  return out;
}

// The options that cannot go together, and the shard this process runs (nullopt: the whole sweep).
std::optional<ShardSpec> shard_of(const AuditFlags& f) {
  if (!f.devices.empty() && !f.shard.empty()) {
    throw_input_error("--devices runs one shard per device itself; it does not take --shard");
  }
  if (f.shard.empty()) return std::nullopt;
  if (!f.verify.empty()) {
    throw_input_error(
        "--shard does not take --verify: verify the merged shards instead "
        "(nvdet report SHARDS.json... --verify MANIFEST)");
  }
  return parse_shard(f.shard);
}

// --last-failed: what of a scenario runs again.
struct LastFailedCut {
  bool run = true;             // false: it passed there, and is not run
  std::vector<int> selection;  // the contexts kept (indices), when it cut the sweep; else empty
};

// Cuts `contexts` to what failed in the reports (with their baselines).
LastFailedCut apply_last_failed(const LastFailed& lf, const Scenario& s,
                                std::vector<Context>& contexts) {
  if (!lf.any_failed) return {};  // nothing failed last time: everything runs
  const auto it = lf.scenarios.find(s.name);
  if (it == lf.scenarios.end() || it->second.rerun == LastFailed::Rerun::kWhole) return {};
  if (it->second.rerun == LastFailed::Rerun::kNone) {
    fmt::print(stderr, "nvdet: {}: passed in {}, not run again (--last-failed)\n", s.name,
               it->second.report);
    return {false, {}};
  }
  std::vector<Context> failed = select_context_ids(contexts, it->second.contexts);
  if (failed.empty()) {
    fmt::print(stderr,
               "nvdet: {}: none of the {} contexts that failed in {} is in the sweep now; "
               "running it whole\n",
               s.name, it->second.contexts.size(), it->second.report);
    return {};
  }
  contexts = std::move(failed);
  LastFailedCut cut;
  for (const Context& c : contexts) cut.selection.push_back(c.index);
  return cut;
}

AuditOptions options_for(const AuditFlags& f) {
  AuditOptions opts;
  opts.backends = f.backends;
  opts.context_filter = f.filter;
  opts.skip_unavailable = f.skip_unavailable;
  opts.budget = Budget{f.max_contexts, byte_limit("--max-host-bytes", f.max_host_bytes),
                       byte_limit("--max-device-bytes", f.max_device_bytes)};
  return opts;
}

// A --filter over several scenarios applies to the run as a whole: it must match some context of
// some scenario (exit 2 naming every scenario otherwise); a scenario it matches nothing of is
// named on stderr and not run (no reports, no manifest entries).
// A --filter over several scenarios applies to the run as a whole: the scenarios it matched
// nothing of are named and left out (none matched at all: exit 2).
void note_unmatched_scenarios(const std::string& filter, const std::vector<std::string>& unmatched,
                              size_t scenarios) {
  if (const std::string note = filter_run_note(filter, unmatched, scenarios); !note.empty())
    fmt::print(stderr, "nvdet: {}\n", note);
}

// Loads and checks every scenario and output target; throws (exit 2 or 3) before anything runs.
std::vector<Planned> plan(const AuditFlags& f, const std::vector<const ReportWriter*>& formats,
                          const std::optional<Manifest>& golden) {
  if (f.format_given && f.report_dir.empty()) {
    throw_input_error("--format needs --report-dir (the folder the reports are written to)");
  }
  const std::optional<ShardSpec> shard = shard_of(f);
  const LastFailed last_failed =
      f.last_failed.empty() ? LastFailed{} : read_last_failed(f.last_failed);
  if (!f.last_failed.empty() && !last_failed.any_failed) {
    fmt::print(stderr, "nvdet: nothing failed in the --last-failed reports; running everything\n");
  }
  std::vector<Planned> planned;
  std::vector<std::string> unmatched;
  std::vector<Scenario> scenarios =
      load_scenarios(f.scenarios, "reports and manifest entries", axis_overrides(f));
  // What each scenario says, checked for every scenario before any budget is (exit 2 before 3).
  for (const Scenario& s : scenarios) check_op_scenario(s);
  for (Scenario& s : scenarios) {
    // A manifest recorded from other inputs (weights, prompts, shapes) is refused before
    // anything runs: its hashes would blame the kernels for the inputs' change.
    if (golden) check_manifest_inputs(*golden, f.verify, s.name, run_fingerprint(s));
    AuditOptions options = options_for(f);
    options.filter_spans_scenarios = f.scenarios.size() > 1;
    std::vector<Context> contexts = check_audit(s, options);
    // A filter that spans scenarios leaves this one empty when it matches none of its contexts.
    if (contexts.empty()) {
      unmatched.push_back(s.name);
      continue;
    }
    // A long model run says what it will compute before it starts (the budget refused worse),
    // and a checkpoint rounded to the scenario's dtype says so.
    if (const ScenarioEstimate e = estimate_scenario(s); !f.quiet && e.token_layers >= 1e8)
      fmt::print(stderr, "nvdet: scenario '{}' will compute {}\n", s.name, e.work);
    if (const std::string note = checkpoint_rounding_note(s); !f.quiet && !note.empty())
      fmt::print(stderr, "nvdet: {}\n", note);
    LastFailedCut cut = apply_last_failed(last_failed, s, contexts);
    if (!cut.run) continue;
    std::optional<ShardInfo> info;
    if (shard) {
      // The shards of a --last-failed run partition what it left, and say so for the merge.
      ShardSelection sel =
          select_shard(std::move(contexts), *shard, f.filter, std::move(cut.selection));
      contexts = std::move(sel.contexts);
      info = std::move(sel.info);
    }
    planned.push_back({std::move(s), std::move(contexts), std::move(info)});
  }
  note_unmatched_scenarios(f.filter, unmatched, f.scenarios.size());
  if (f.list_contexts) return planned;
  // Output targets: the right kind and writable, before the first context runs.
  std::vector<fs::path> report_files;  // every report of the run, for the --record collision check
  if (!f.report_dir.empty()) {
    prepare_output_dir(f.report_dir, "report");
    std::set<std::string> bases;
    for (const Planned& p : planned) {
      const std::string base =
          p.shard ? report_base_name(p.scenario.name, p.shard->index, p.shard->count)
                  : report_base_name(p.scenario.name);
      if (!bases.insert(base).second) {
        throw_input_error("two scenarios would write the same reports '" + base + ".*' in " +
                          f.report_dir);
      }
      for (const ReportWriter* w : writers_with_companions(formats)) {
        if (w->needs_verify() && !golden) continue;
        report_files.push_back(fs::path(f.report_dir) / (base + std::string(w->extension())));
        check_output_file(report_files.back(), "report");
      }
    }
  }
  if (!f.record.empty()) {
    // The manifest's folder is created like the report and dump folders ("golden/" on a fresh
    // clone), and the manifest must not be one of this run's reports, which would replace it.
    const fs::path record(f.record);
    if (!record.parent_path().empty()) prepare_output_dir(record.parent_path(), "manifest");
    for (const fs::path& report : report_files) {
      if (same_output_path(record, report)) {
        throw_input_error("--record '" + f.record + "' is also a report of this run ('" +
                          report.string() + "'); record the manifest elsewhere");
      }
    }
    check_output_file(record, "manifest");
  }
  if (!f.dump_dir.empty()) prepare_output_dir(f.dump_dir, "dump");
  return planned;
}

// What every scenario's result goes through once it is known, whether this process ran it or
// merged it from shards run elsewhere: the verification, the console, the reports, CI, the
// manifest, and the tallies for the closing line and the exit code.
class Publisher {
 public:
  Publisher(const AuditFlags& f, const std::vector<const ReportWriter*>& formats,
            const std::optional<Manifest>& golden)
      : f_(f), formats_(formats), golden_(golden) {
    for (const std::string& a : f.verify_as) recorded_as_.insert(parse_verify_as(a));
  }

  void publish(AuditResult result) {
    if (golden_) {
      attach_verify(result, verify_manifest(*golden_, f_.verify, result,
                                            {f_.strict, f_.dump_dir, recorded_as_}));
    }
    print_and_write_result(result, f_.report_dir, formats_, f_.quiet);
    ++scenarios_;
    failed_ += result.summary.passed ? 0 : 1;
    empty_ += ran_nothing(result) ? 1 : 0;
    failed_backends_ += result.summary.failed_backends;
    cases_ += result.summary.cases;
    seconds_ += result.summary.seconds;
    if (!f_.record.empty()) recording_.add(result);
  }

  // Whether -x / --maxfail has been reached: failed expectations (backends) so far.
  bool should_stop() const {
    const int limit = f_.exit_first ? 1 : f_.max_fail;
    return limit > 0 && failed_backends_ >= limit;
  }

  int finish(size_t planned) {
    if (!f_.record.empty()) {
      write_manifest(f_.record, recording_, f_.dump_dir);
      if (!f_.quiet) fmt::print("manifest: {}\n", f_.record);
    }
    const size_t not_run = planned - static_cast<size_t>(scenarios_);
    if (scenarios_ > 1 || not_run > 0) {
      // One line over the whole invocation, as pytest's last line.
      fmt::print("nvdet audit: {} of {} scenarios passed, {} failed{}{}; {} cases ({:.1f} s)\n",
                 scenarios_ - failed_ - empty_, planned, failed_,
                 empty_ ? fmt::format(", {} ran nothing", empty_) : std::string(),
                 not_run ? fmt::format(", {} not run (stopped after {} failed {})", not_run,
                                       failed_backends_,
                                       failed_backends_ == 1 ? "expectation" : "expectations")
                         : std::string(),
                 cases_, seconds_);
    }
    if (failed_ > 0) return static_cast<int>(ExitCode::kExpectationFailed);
    if (scenarios_ > 0 && empty_ == scenarios_) return static_cast<int>(ExitCode::kNothingRan);
    return static_cast<int>(ExitCode::kOk);
  }

 private:
  const AuditFlags& f_;
  const std::vector<const ReportWriter*>& formats_;
  const std::optional<Manifest>& golden_;
  std::map<std::string, std::string> recorded_as_;
  Manifest recording_;
  int scenarios_ = 0, failed_ = 0, empty_ = 0, failed_backends_ = 0, cases_ = 0;
  double seconds_ = 0.0;
};

// The arguments of the shard that runs scenario `p` on one device: every option of this run
// that a shard honours (each with its own value, so none is dropped), its shard, and JSON
// reports into the shards' folder. -x/--maxfail are this process's (it runs the scenarios one
// after another), --record/--verify/--strict/--format too (they apply to the merged result).
std::vector<std::string> child_arguments(const AuditFlags& f, const Planned& p, const fs::path& dir,
                                         int shard, size_t shards) {
  std::vector<std::string> a = {own_executable().string(), "audit", p.scenario.path};
  auto add = [&a](const std::string& flag, const std::string& value) {
    if (value.empty()) return;
    a.push_back(flag);
    a.push_back(value);
  };
  for (const std::string& b : f.backends) add("--backends", b);
  add("--filter", f.filter);
  for (const std::string& x : f.axes) add("--axis", x);
  for (const std::string& r : f.last_failed) add("--last-failed", r);
  add("--dump", f.dump_dir);
  add("--max-contexts", std::to_string(f.max_contexts));
  add("--max-host-bytes", f.max_host_bytes);
  add("--max-device-bytes", f.max_device_bytes);
  if (f.skip_unavailable) a.push_back("--skip-unavailable");
  add("--shard", fmt::format("{}/{}", shard, shards));
  add("--report-dir", dir.string());
  add("--format", "json");
  a.push_back("--quiet");
  return a;
}

// The last `bytes` of a file ("" when it cannot be read).
std::string file_tail(const fs::path& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (!in || size <= 0) return "";
  const std::streamoff from = size > static_cast<std::streamoff>(bytes) ? size - bytes : 0;
  in.seekg(from);
  std::string text(static_cast<size_t>(size - from), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  return text;
}

// What a failed shard said: its error sentence, the last line of its stderr that nvdet wrote
// ("nvdet: ..."), never a line of its stdout (which ends with its verdict whatever went wrong).
std::string shard_error(const fs::path& error_log) {
  const std::string log = file_tail(error_log, 8192);
  std::string last, any;
  for (size_t at = 0; at < log.size();) {
    const size_t end = std::min(log.find('\n', at), log.size());
    const std::string line = log.substr(at, end - at);
    if (!line.empty()) any = line;
    if (line.rfind("nvdet", 0) == 0) last = line;
    at = end + 1;
  }
  if (last.empty()) last = any;
  return last.empty() ? std::string("it wrote no error message") : last;
}

// --devices 0,1,...: the listed GPUs, each once, every one present on this host; a device that
// is not there is the machine's condition (exit 3), refused before any shard starts.
std::vector<int> checked_devices(const AuditFlags& f) {
  std::vector<int> devices;
  for (const std::string& d : f.devices) {
    const std::optional<int> n = parse_integer<int>(d);
    if (!n || *n < 0)
      throw_input_error("--devices takes GPU indices (0,1,...), not '" + excerpt(d) + "'");
    if (std::find(devices.begin(), devices.end(), *n) != devices.end()) {
      throw_input_error("--devices lists device " + d + " twice");
    }
    devices.push_back(*n);
  }
  if (devices.size() > static_cast<size_t>(kMaxDevices)) {
    throw_input_error("--devices lists more than " + std::to_string(kMaxDevices) + " devices");
  }
  const SystemInfo system = collect_system_info();
  const int present = test_device_count().value_or(static_cast<int>(system.gpus.size()));
  for (const int d : devices) {
    if (d < present) continue;
    throw_runtime_error(
        present == 0
            ? fmt::format("--devices names GPU {}, but this machine has no GPU{} (run the audit "
                          "without --devices, or --shard I/N to split it)",
                          d, system.device_error.empty() ? "" : ": " + system.device_error)
            : fmt::format("--devices names GPU {}, but this machine has {} (0 to {})", d, present,
                          present - 1));
  }
  return devices;
}

// --devices: one child per device for each scenario in turn, each the shard of its place in the
// list on that GPU alone (CUDA_VISIBLE_DEVICES), writing JSON reports into a folder of their
// own; their reports are merged here into the report set of the unsharded run. Scenario by
// scenario, so that -x and --maxfail stop where the unsharded run stops. SIGINT or SIGTERM stops
// the shards and removes the folder (lib/core/child_process.h).
int run_on_devices(const AuditFlags& f, const std::vector<Planned>& planned, Publisher& publisher) {
  const std::vector<int> devices = checked_devices(f);
  const fs::path base = f.report_dir.empty() ? temporary_base("the shards' reports of --devices")
                                             : fs::path(f.report_dir);
  const TemporaryFolder dir(base / fmt::format(".nvdet-shards-{}", ::getpid()));
  prepare_output_dir(dir.path(), "shard report");
  if (!f.quiet) {
    fmt::print(stderr, "nvdet: running {} shards, one per device ({})\n", devices.size(),
               fmt::join(f.devices, ", "));
  }
  for (const Planned& p : planned) {
    if (publisher.should_stop()) break;
    std::vector<ChildSpec> children;
    for (size_t i = 0; i < devices.size(); ++i) {
      // The CI summary and annotations are the merged result's, written here, not each shard's.
      const std::string name = fmt::format("{}.shard-{}", p.scenario.name, i + 1);
      children.push_back(
          {child_arguments(f, p, dir.path(), static_cast<int>(i) + 1, devices.size()),
           {{"CUDA_VISIBLE_DEVICES", std::to_string(devices[i])}},
           {"GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS"},
           dir.path() / (name + ".out.log"),
           dir.path() / (name + ".err.log")});
    }
    const std::vector<int> codes = run_children(children);
    for (size_t i = 0; i < codes.size(); ++i) {
      if (codes[i] == 0 || codes[i] == 1) continue;
      throw Error(codes[i] == 2 ? ExitCode::kBadInput : ExitCode::kRuntime,
                  fmt::format("shard {} of '{}' on device {} exited with code {}: {}", i + 1,
                              p.scenario.name, devices[i], codes[i],
                              excerpt(shard_error(children[i].error_log), 400)));
    }
    std::vector<AuditResult> shards;
    for (size_t i = 0; i < devices.size(); ++i) {
      shards.push_back(read_audit_report(
          (dir.path() /
           (report_base_name(p.scenario.name, static_cast<int>(i) + 1, devices.size()) + ".json"))
              .string()));
    }
    publisher.publish(merge_shards(std::move(shards)));
  }
  return publisher.finish(planned.size());
}

int run(const AuditFlags& f) {
  const std::vector<const ReportWriter*> formats = parse_report_formats(f.formats);
  (void)shard_of(f);  // options that cannot go together, before any file is read
  // A bad manifest is bad input: read it before any backend runs.
  std::optional<Manifest> golden;
  for (const std::string& a : f.verify_as) (void)parse_verify_as(a);
  if (!f.verify_as.empty() && f.verify.empty()) throw_input_error("--verify-as needs --verify");
  if (!f.verify.empty()) golden = read_manifest(f.verify);
  const std::vector<Planned> planned = plan(f, formats, golden);
  if (f.list_contexts) {
    for (const Planned& p : planned) {
      fmt::print("{}: {} contexts\n", p.scenario.name, p.contexts.size());
      for (const Context& c : p.contexts) {
        const bool baseline_only =
            p.shard && !std::binary_search(p.shard->owned.begin(), p.shard->owned.end(), c.index);
        fmt::print("  {}{}\n", c.id,
                   baseline_only ? "  (baseline only: another shard owns it)" : "");
      }
    }
    return 0;
  }
  Publisher publisher(f, formats, golden);
  if (!f.devices.empty()) return run_on_devices(f, planned, publisher);

  for (const Planned& p : planned) {
    if (publisher.should_stop()) break;
    const Scenario& s = p.scenario;
    AuditOptions opts = options_for(f);
    opts.shard = p.shard;
    if (!f.dump_dir.empty()) {
      opts.on_outputs = [&](const Context& context, const CaseRecord& c,
                            const std::vector<RequestOutput>& outputs) {
        write_case_dump(f.dump_dir, s.name, context, c, outputs);
      };
    }
    TerminalProgress progress(stderr);
    AuditProgress last;  // the case under way, for the model decode's per-step progress
    if (!f.quiet) {
      opts.on_progress = [&](const AuditProgress& pr) {
        last = pr;
        progress.update(pr.done, pr.total, pr.backend, pr.context, pr.context_number, pr.contexts);
      };
      set_decode_progress_sink([&](const DecodeProgress& d) {
        progress.update(
            last.done, last.total, d.backend, d.context, last.context_number, last.contexts,
            fmt::format("{}, {:.0f} tokens/s",
                        d.detail.empty() ? fmt::format("step {} of {}", d.steps_done, d.steps_total)
                                         : d.detail,
                        d.tokens_per_second));
      });
    }
    struct SinkReset {  // the sink refers to this iteration's locals
      ~SinkReset() { set_decode_progress_sink(nullptr); }
    } sink_reset;
    AuditResult result = run_checked_audit(s, opts, p.contexts);
    progress.finish();
    publisher.publish(std::move(result));
  }
  return publisher.finish(planned.size());
}

}  // namespace

Action add_audit_command(CLI::App& app) {
  auto flags = std::make_shared<AuditFlags>();
  CLI::App* cmd = app.add_subcommand(
      "audit", "Run scenarios and check every backend's expectation (exit 0 pass, 1 fail)");
  cmd->add_option("scenario", flags->scenarios, "Scenario YAML files")->required();
  add_list_option(cmd, "--backends", flags->backends, "Run only these backends (comma separated)");
  CLI::Option* format =
      add_report_options(cmd, flags->report_dir, flags->formats, flags->filter, flags->quiet);
  cmd->add_option("--axis", flags->axes,
                  "Sweep axis NAME over VALUES instead of the scenario's (NAME=VALUES, e.g. "
                  "batch=1,8,64 or 'batch=[1, {from: 16, to: 64, mul: 2}]'); repeatable")
      ->allow_extra_args(false);  // one NAME=VALUES per --axis: the scenarios are not values
  cmd->add_option("--shard", flags->shard,
                  "Run shard I of N of every scenario's contexts (I/N, from 1), or auto: from "
                  "SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX or GTEST_SHARD_INDEX; nvdet report "
                  "merges the shards' JSON reports");
  cmd->add_option("--devices", flags->devices,
                  "Run one shard per GPU in parallel processes on this host (CUDA_VISIBLE_DEVICES "
                  "per shard; e.g. 0,1,2,3) and merge them into one report set")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_flag("-x,--exitfirst", flags->exit_first,
                "Stop after the first scenario with a failed expectation");
  add_integer_option(cmd, "--maxfail", flags->max_fail, 0, std::numeric_limits<int>::max(),
                     "Stop after the scenario in which the N-th expectation failed (0: no limit)");
  cmd->add_option("--last-failed", flags->last_failed,
                  "Run again only what failed in these JSON audit reports (the failed contexts, "
                  "with their baselines; everything when nothing failed)");
  cmd->add_flag("--list-contexts", flags->list_contexts,
                "Check the scenarios, print their expanded contexts (after --filter) and exit");
  cmd->add_flag("--skip-unavailable", flags->skip_unavailable,
                "Skip backends this machine cannot run (GPU backends without a GPU); reported as "
                "skipped in every format");
  cmd->add_option("--record", flags->record, "Write a golden manifest of every hash to this file");
  cmd->add_option("--verify", flags->verify,
                  "Compare hashes with this manifest (exit 1 if an invariant backend's changed)");
  cmd->add_flag("--strict", flags->strict,
                "With --verify: fail on any changed, missing or new hash, whatever the backend");
  add_list_option(cmd, "--verify-as", flags->verify_as,
                  "With --verify: compare this run's backend RUN with the hashes recorded for "
                  "RECORDED (RUN=RECORDED, e.g. cuda-portable=cpu-portable); any change fails");
  cmd->add_option("--dump", flags->dump_dir,
                  "Write the probed requests' outputs as safetensors files under this folder");
  // Up to 2^53: the budget compares context counts as doubles.
  add_integer_option<uint64_t>(cmd, "--max-contexts", flags->max_contexts, 1, uint64_t{1} << 53,
                               "Refuse scenarios that sweep more contexts than this (exit 2)");
  cmd->add_option("--max-host-bytes", flags->max_host_bytes,
                  "Refuse scenarios estimated to need more host memory per context (exit 3); "
                  "default: 3/4 of the memory available now (e.g. 64G)");
  cmd->add_option("--max-device-bytes", flags->max_device_bytes,
                  "Refuse scenarios estimated to need more GPU memory per context (exit 3); "
                  "default: the GPU's free memory");
  return [flags, format] {
    flags->format_given = format->count() > 0;
    return run(*flags);
  };
}

}  // namespace nvdet::cli
