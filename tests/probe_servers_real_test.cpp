// nvdet probe against real servers, started here on 127.0.0.1 with the tiny random Llama that
// tests/probe/setup-servers.sh makes (no download): llama-server built from the llama.cpp sources
// of PyPI's llama-cpp-python package, and `transformers serve`. Each server runs once in a
// configuration that batches (llama-server with 4 slots sharing one KV cache at f16; transformers
// serve with continuous batching at bf16), where the shipped scenario's canary must see the load
// change the probe, and once in one that does not (1 slot; no continuous batching), the negative
// control, where the same scenario must hold with `expect: invariant`. Every test skips, saying
// why, where the servers are not set up.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/fake_openai_server.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The servers' folder, or why there is none.
struct ServersFolder {
  fs::path dir;
  std::string missing;
};

ServersFolder servers_folder() {
  const char* env = std::getenv("NVDET_PROBE_SERVERS");
  const fs::path dir = env && *env ? fs::path(env) : fs::path(NVDET_PROBE_SERVERS_DEFAULT);
  if (!fs::exists(dir / "ready"))
    return {dir, "no probe servers in " + dir.string() +
                     " (tests/probe/setup-servers.sh builds them there; NVDET_PROBE_SERVERS names "
                     "another folder)"};
  return {dir, ""};
}

// GET /health answered 200.
bool healthy(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string get = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (::send(fd, get.data(), get.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(get.size())) {
      char buffer[64] = {};
      const ssize_t n = ::recv(fd, buffer, sizeof buffer - 1, 0);
      ok = n > 12 && std::string(buffer, static_cast<size_t>(n)).rfind("HTTP/1.1 200", 0) == 0;
    }
  }
  ::close(fd);
  return ok;
}

// A server process of this test, in a process group of its own, ended (by its id) when the test
// ends.
class ServerProcess {
 public:
  ServerProcess(const std::vector<std::string>& argv, const fs::path& cwd, const fs::path& log)
      : log_(log) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      if (::chdir(cwd.c_str()) != 0) ::_exit(126);
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      // One compute thread: a server that spreads over both cores fights the fillers' client and
      // the other tests, and each token then takes a hundred times longer.
      ::setenv("OMP_NUM_THREADS", "1", 1);
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ~ServerProcess() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  // Waits until the server answers /health; "" when it does, else why not (with its log's end).
  std::string wait_healthy(int port, double seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
      if (healthy(port)) return "";
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return "the server exited before it answered: " + log_tail();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return "the server did not answer /health within " + std::to_string(seconds) +
           " s: " + log_tail();
  }

 private:
  std::string log_tail() const {
    const std::string text = read_file(log_);
    return text.substr(text.size() > 2000 ? text.size() - 2000 : 0);
  }
  pid_t pid_ = -1;
  fs::path log_;
};

// The shipped scenario, or a copy of it that expects invariance (the negative control).
fs::path scenario(const std::string& name, bool invariant, const fs::path& dir) {
  const fs::path shipped = source_dir() / "scenarios" / (name + ".yaml");
  if (!invariant) return shipped;
  std::string text = read_file(shipped);
  const size_t at = text.find("expect: variant");
  EXPECT_NE(at, std::string::npos);
  text.replace(at, 15, "expect: invariant");
  write_file(dir / (name + ".yaml"), text);
  return dir / (name + ".yaml");
}

struct ProbeOutcome {
  CommandResult run;
  json report;
};

ProbeOutcome probe(const fs::path& scenario_file, int port, const fs::path& out,
                   const std::string& extra) {
  ProbeOutcome o;
  o.run = run_nvdet("probe " + scenario_file.string() +
                    " --url http://127.0.0.1:" + std::to_string(port) + " --report-dir " +
                    out.string() + " --format md,json,junit,html" + extra);
  const fs::path json_file = out / (scenario_file.stem().string() + ".json");
  if (fs::exists(json_file)) o.report = json::parse(read_file(json_file));
  // What the server did, in the test's log: the verdict and the first difference.
  std::cout << o.run.out;
  return o;
}

int divergences(const json& report, bool seen_alone) {
  int n = 0;
  for (const json& d : report.at("divergences"))
    n += d.at("kind") == "context" && d.at("served").at("seen_alone").get<bool>() == seen_alone;
  return n;
}

// One KV cache for every slot and attention without flash attention: the probe's keys then sit
// among the fillers' cells, and the masked sums over the shared cache follow the load. With
// llama.cpp's defaults (a cache per slot, flash attention where it can) the batch variance is
// left to the CPU's f16 matmul path: on an AVX-512 host that path sums each row in one order at
// any batch, and the 4-slot canary saw no change in 12 runs.
std::vector<std::string> llama_server(const fs::path& dir, int port, int slots) {
  return {(dir / "bin" / "llama-server").string(),
          "-m",
          (dir / "tiny-llama-f16.gguf").string(),
          "--host",
          "127.0.0.1",
          "--port",
          std::to_string(port),
          "-np",
          std::to_string(slots),
          "-c",
          std::to_string(1024 * slots),
          "-t",
          "1",
          "--kv-unified",
          "--flash-attn",
          "off",
          "--no-webui"};
}

std::vector<std::string> transformers_serve(const fs::path& dir, int port, bool batching) {
  // The paged cache sized here: left to itself it takes most of the machine's memory.
  std::vector<std::string> argv = {(dir / "venv" / "bin" / "transformers").string(),
                                   "serve",
                                   "tiny-llama",
                                   "--dtype",
                                   "bfloat16",
                                   "--device",
                                   "cpu",
                                   "--cb-num-blocks",
                                   "128",
                                   "--cb-block-size",
                                   "32",
                                   "--cb-max-batch-tokens",
                                   "512",
                                   "--host",
                                   "127.0.0.1",
                                   "--port",
                                   std::to_string(port)};
  argv.push_back(batching ? "--continuous-batching" : "--no-continuous-batching");
  return argv;
}

class RealServers : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = servers_folder();
    if (!folder_.missing.empty()) GTEST_SKIP() << folder_.missing;
    tmp_ = make_temp_dir("probe-servers");
  }
  // Starts the server `argv` names (on `port`), waits for it, and probes it with the shipped
  // scenario `name` (or its copy expecting invariance).
  ProbeOutcome serve_and_probe(const std::vector<std::string>& argv, int port, double startup_s,
                               const std::string& name, bool invariant,
                               const std::string& extra = "") {
    ServerProcess server(argv, folder_.dir, tmp_ / "server.log");
    const std::string why = server.wait_healthy(port, startup_s);
    EXPECT_EQ(why, "");
    if (!why.empty()) return {};
    return probe(scenario(name, invariant, tmp_), port, tmp_ / "r", extra);
  }
  ServersFolder folder_;
  fs::path tmp_;
};

TEST_F(RealServers, LlamaServerWithFourSlotsAtF16ChangesTheProbe) {
  const int port = unused_port();
  const ProbeOutcome o =
      serve_and_probe(llama_server(folder_.dir, port, 4), port, 120, "probe-llama-server", false);
  ASSERT_EQ(o.run.exit_code, 0) << o.run.out << o.run.err;
  EXPECT_EQ(o.report.at("probe").at("level"), "logprobs");
  // The probe alone repeats bit for bit (prompt cache off): every difference is the load's.
  EXPECT_EQ(o.report.at("backends")[0].at("run_to_run_divergences"), 0);
  EXPECT_GT(divergences(o.report, false), 0);
  EXPECT_EQ(divergences(o.report, true), 0);
}

TEST_F(RealServers, LlamaServerWithOneSlotIsTheNegativeControl) {
  const int port = unused_port();
  const ProbeOutcome o =
      serve_and_probe(llama_server(folder_.dir, port, 1), port, 120, "probe-llama-server", true);
  ASSERT_EQ(o.run.exit_code, 0) << o.run.out << o.run.err;
  EXPECT_TRUE(o.report.at("divergences").empty());
  EXPECT_EQ(o.report.at("cases").size(), 3u + 6u);  // control x3, 6 contexts
}

TEST_F(RealServers, TransformersServeWithContinuousBatchingAtBf16ChangesTheText) {
  const int port = unused_port();
  const ProbeOutcome o = serve_and_probe(transformers_serve(folder_.dir, port, true), port, 300,
                                         "probe-transformers-serve", false);
  ASSERT_EQ(o.run.exit_code, 0) << o.run.out << o.run.err;
  EXPECT_EQ(o.report.at("probe").at("level"), "text");  // no token ids, no log probabilities
  EXPECT_GT(divergences(o.report, false), 0);
}

TEST_F(RealServers, TransformersServeWithoutContinuousBatchingIsTheNegativeControl) {
  const int port = unused_port();
  // One request at a time: the fillers only queue, so 4 of them show as much as 8 would.
  const ProbeOutcome o = serve_and_probe(transformers_serve(folder_.dir, port, false), port, 300,
                                         "probe-transformers-serve", true, " --axis concurrency=4");
  ASSERT_EQ(o.run.exit_code, 0) << o.run.out << o.run.err;
  EXPECT_TRUE(o.report.at("divergences").empty());
}

}  // namespace
}  // namespace nvdet::testing
