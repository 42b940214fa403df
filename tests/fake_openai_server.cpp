#include "tests/fake_openai_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>
#include <vector>

namespace nvdet::testing {
namespace {

void send_all(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;  // the client went away: nothing more to say
    sent += static_cast<size_t>(n);
  }
}

void pause(int ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

std::string reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 302: return "Found";
    case 404: return "Not Found";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

int listening_socket(int* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 512) != 0)
    throw std::runtime_error("bind/listen failed");
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

}  // namespace

FakeOpenAiServer::FakeOpenAiServer(Handler handler) : handler_(std::move(handler)) {
  listen_fd_ = listening_socket(&port_);
  acceptor_ = std::thread([this] { accept_loop(); });
}

FakeOpenAiServer::~FakeOpenAiServer() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  ::close(listen_fd_);
  for (std::thread& t : workers_) t.join();
}

std::string FakeOpenAiServer::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::vector<FakeRequest> FakeOpenAiServer::requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return requests_;
}

void FakeOpenAiServer::accept_loop() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    workers_.emplace_back([this, fd] { serve(fd); });
  }
}

void FakeOpenAiServer::serve(int fd) {
  // One request per connection (the reply says Connection: close).
  std::string data;
  char buffer[4096];
  size_t header_end = std::string::npos;
  size_t content_length = 0;
  while (true) {
    if (header_end != std::string::npos && data.size() >= header_end + 4 + content_length) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) {
      ::close(fd);
      return;
    }
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) {
      ::close(fd);
      return;
    }
    data.append(buffer, static_cast<size_t>(n));
    if (header_end == std::string::npos &&
        (header_end = data.find("\r\n\r\n")) != std::string::npos) {
      const std::string head = data.substr(0, header_end);
      const size_t at = head.find("Content-Length: ");
      if (at != std::string::npos) content_length = std::stoul(head.substr(at + 16));
    }
  }
  FakeRequest req;
  {
    const std::string head = data.substr(0, header_end);
    const size_t line_end = head.find("\r\n");
    const std::string first = head.substr(0, line_end);
    req.method = first.substr(0, first.find(' '));
    req.path = first.substr(first.find(' ') + 1);
    req.path = req.path.substr(0, req.path.find(' '));
    size_t at = line_end + 2;
    while (at < head.size()) {
      const size_t end = head.find("\r\n", at);
      req.headers.push_back(
          head.substr(at, end == std::string::npos ? std::string::npos : end - at));
      if (end == std::string::npos) break;
      at = end + 2;
    }
    req.body = data.substr(header_end + 4, content_length);
  }
  req.others_in_flight = in_flight_++;
  for (int seen = max_in_flight_;
       seen < in_flight_ && !max_in_flight_.compare_exchange_weak(seen, in_flight_);) {
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    requests_.push_back(req);
  }
  const FakeReply reply = handler_(req);
  // What goes out, in order, each after its pause. The count of requests in flight drops just
  // before the last write: once the reply's last bytes are out the client may send its next request
  // at once, and that one must not find this one still counted.
  std::vector<std::pair<std::string, int>> writes;
  if (!reply.close_unanswered) {
    std::string head = "HTTP/1.1 " + std::to_string(reply.status) + " " + reason(reply.status) +
                       "\r\nContent-Type: " + reply.content_type + "\r\nConnection: close\r\n";
    for (const std::string& h : reply.extra_headers) head += h + "\r\n";
    if (reply.chunked) {
      head += "Transfer-Encoding: chunked\r\n\r\n";
    } else {
      size_t total = 0;
      for (const auto& [bytes, ms] : reply.pieces) total += bytes.size();
      head += "Content-Length: " + std::to_string(total) + "\r\n\r\n";
    }
    writes.emplace_back(std::move(head), reply.stall_ms_before_headers);
    for (const auto& [bytes, ms] : reply.pieces) {
      if (reply.chunked) {
        char size[32];
        std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
        writes.emplace_back(size + bytes + "\r\n", ms);
      } else {
        writes.emplace_back(bytes, ms);
      }
    }
    if (reply.chunked) writes.emplace_back("0\r\n\r\n", 0);
  }
  for (size_t i = 0; i < writes.size(); ++i) {
    pause(writes[i].second);
    if (i + 1 == writes.size()) --in_flight_;
    send_all(fd, writes[i].first);
  }
  if (writes.empty()) --in_flight_;
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

int unused_port() {
  int port = 0;
  const int fd = listening_socket(&port);
  ::close(fd);
  return port;
}

std::string completion_json(const std::string& text, const std::string& logprobs_json) {
  return R"({"object":"text_completion","choices":[{"index":0,"text":)" +
         nlohmann::json(text).dump() + R"(,"logprobs":)" + logprobs_json +
         R"(,"finish_reason":"length"}]})";
}

std::vector<std::pair<std::string, int>> completion_stream(const std::vector<std::string>& texts,
                                                           int pause_ms, bool done) {
  std::vector<std::pair<std::string, int>> out;
  for (const std::string& t : texts) {
    out.emplace_back(
        "data: " +
            nlohmann::json{{"choices", {{{"index", 0}, {"text", t}, {"finish_reason", nullptr}}}}}
                .dump() +
            "\n\n",
        pause_ms);
  }
  out.emplace_back(
      "data: " +
          nlohmann::json{{"choices", {{{"index", 0}, {"text", ""}, {"finish_reason", "length"}}}}}
              .dump() +
          "\n\n",
      0);
  if (done) out.emplace_back("data: [DONE]\n\n", 0);
  return out;
}

}  // namespace nvdet::testing
