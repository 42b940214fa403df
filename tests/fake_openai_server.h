#pragma once
// A scripted HTTP/1.1 server on 127.0.0.1 for nvdet probe's tests: each connection is served on
// a thread of its own by a handler that sees the request (and how many other requests were in
// flight when it arrived) and answers with a status, headers and body pieces sent with pauses --
// or misbehaves on purpose (closes without answering, stalls, sends too much). Every request it
// received is kept, so that a test can check where nvdet sent what.
#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace nvdet::testing {

struct FakeRequest {
  std::string method, path;
  std::vector<std::string> headers;  // "Name: value", as received
  std::string body;
  int others_in_flight = 0;  // requests in flight when this one's body had arrived
};

struct FakeReply {
  int status = 200;
  std::string content_type = "application/json";
  // The body in pieces, each sent after waiting its milliseconds.
  std::vector<std::pair<std::string, int>> pieces;
  bool chunked = false;           // Transfer-Encoding: chunked instead of Content-Length
  bool close_unanswered = false;  // close the connection before any byte
  int stall_ms_before_headers = 0;
  std::vector<std::string> extra_headers;
};

class FakeOpenAiServer {
 public:
  using Handler = std::function<FakeReply(const FakeRequest&)>;
  explicit FakeOpenAiServer(Handler handler);
  ~FakeOpenAiServer();

  int port() const { return port_; }
  std::string url() const;  // "http://127.0.0.1:<port>"
  std::vector<FakeRequest> requests() const;
  int max_in_flight() const { return max_in_flight_; }

 private:
  void accept_loop();
  void serve(int fd);
  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> in_flight_{0}, max_in_flight_{0};
  mutable std::mutex mutex_;
  std::vector<FakeRequest> requests_;
  std::vector<std::thread> workers_;
  std::thread acceptor_;
};

// A port on 127.0.0.1 that nothing listens on (bound, then closed).
int unused_port();

// OpenAI completions answers, as the fake servers send them.
std::string completion_json(const std::string& text, const std::string& logprobs_json = "null");
// An SSE stream of `texts`, one chunk each, ended by [DONE] when `done`.
std::vector<std::pair<std::string, int>> completion_stream(const std::vector<std::string>& texts,
                                                           int pause_ms, bool done = true);

}  // namespace nvdet::testing
