#include "tests/fuzz/fuzz_entries.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "lib/core/error.h"
#include "lib/core/json_input.h"
#include "lib/loader/scenario_loader.h"
#include "lib/manifest/manifest.h"
#include "lib/model/checkpoint.h"
#include "lib/probe/served_output.h"
#include "lib/probe/sse_stream.h"
#include "lib/report/html_report.h"
#include "lib/report/json_report_reader.h"
#include "lib/report/markdown_report.h"
#include "lib/scenario/scenario.h"
#include "lib/tensorio/npy.h"
#include "lib/tensorio/safetensors.h"

namespace nvdet::fuzz {
namespace {

// Runs `f`, accepting an nvdet::Error (the documented refusal) and nothing else.
template <class F>
void refusal_ok(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    if (e.code() != ExitCode::kBadInput && e.code() != ExitCode::kRuntime) std::abort();
  }
}

// An in-memory regular file (memfd) that the file-reading entry points open by path, so the
// fuzzers exercise the same open/stat/map code as nvdet without touching the disk.
class MemFile {
 public:
  MemFile() : fd_(memfd_create("nvdet-fuzz", MFD_CLOEXEC)) {
    if (fd_ < 0) std::abort();
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  const std::string& hold(const uint8_t* data, size_t size) {
    if (ftruncate(fd_, 0) != 0 ||
        (size && pwrite(fd_, data, size, 0) != static_cast<ssize_t>(size)))
      std::abort();
    return path_;
  }

 private:
  int fd_;
  std::string path_;
};

// A private folder holding config.json, for the checkpoint-config reader (which takes a folder).
const std::filesystem::path& config_folder() {
  static const std::filesystem::path dir = [] {
    std::string templ =
        (std::filesystem::temp_directory_path() / "nvdet-fuzz-ckpt-XXXXXX").string();
    if (!mkdtemp(templ.data())) std::abort();
    return std::filesystem::path(templ);
  }();
  return dir;
}

}  // namespace

void scenario(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  refusal_ok([&] { parse_scenario(text, "fuzz.yaml"); });
}

void npy(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  refusal_ok([&] { parse_npy(bytes, "fuzz.npy"); });
  refusal_ok([&] { parse_npy(bytes, "fuzz.npy", ElemType::kBF16); });
}

void safetensors(const uint8_t* data, size_t size) {
  static MemFile file;
  const std::string& path = file.hold(data, size);
  refusal_ok([&] {
    const SafetensorsFile f = SafetensorsFile::open(path);
    for (const std::string& name : f.names()) {
      refusal_ok([&] { (void)f.read_any(name); });
      refusal_ok([&] { (void)f.read(name); });
    }
  });
}

void manifest(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  refusal_ok([&] { (void)manifest_from_json(parse_json_input(text, "fuzz.json"), "fuzz.json"); });
}

void checkpoint_config(const uint8_t* data, size_t size) {
  const std::filesystem::path& dir = config_folder();
  {
    const int fd =
        ::open((dir / "config.json").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || (size && write(fd, data, size) != static_cast<ssize_t>(size))) std::abort();
    ::close(fd);
  }
  refusal_ok([&] { (void)read_hf_config(dir.string()); });
}

// `nvdet report`: the JSON audit report read back, then rendered, as the command does.
void audit_report(const uint8_t* data, size_t size) {
  static MemFile file;
  const std::string& path = file.hold(data, size);
  refusal_ok([&] {
    const AuditResult r = read_audit_report(path);
    (void)render_markdown_report(r);
    (void)render_html_report(r);
  });
}

void served_answer(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const ServerApi api = data[0] & 1 ? ServerApi::kChat : ServerApi::kCompletions;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t cut = body.empty() ? 0 : (data[0] >> 1) % (body.size() + 1);
  // What a reader says of malformed input is a sentence in error(), never an exception.
  ServedOutputReader whole(api), streamed(api);
  (void)whole.add_text(body);
  SseStream sse;
  const auto read = [&](std::string_view event) { (void)streamed.add_text(event); };
  sse.feed(body.substr(0, cut), read);
  sse.feed(body.substr(cut), read);
  sse.finish(read);
  ServedOutput plain;
  plain.text = "a";
  for (const ServedOutputReader* r : {&whole, &streamed}) {
    (void)served_level(r->output());
    (void)served_record(0, r->output());
    (void)compare_served(plain, r->output());
    (void)compare_served(r->output(), whole.output());
  }
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {{"scenario", scenario},
                                          {"npy", npy},
                                          {"safetensors", safetensors},
                                          {"manifest", manifest},
                                          {"checkpoint_config", checkpoint_config},
                                          {"audit_report", audit_report},
                                          {"served_answer", served_answer}};
  return all;
}

}  // namespace nvdet::fuzz
