#pragma once
// nvdet probe's HTTP client: libcurl's multi interface, so that a probe and hundreds of fillers
// are in flight at once on one thread (the only file that includes libcurl).
//
// What it will and will not do, whatever the server answers:
// - it sends each request to the URL it is given and nowhere else: no redirect is followed, no
//   proxy from the environment is used, and only http and https are spoken;
// - each request has a total deadline and an inactivity timeout (seconds without a byte of the
//   response, waiting for the first one included);
// - a response body larger than its limit is cut off and fails, before it is stored;
// - a request is sent again only where its `retries` allow, and only when the server never
//   answered it (the connection failed or closed before a byte came) or answered 429 or 503.
// Every failure is a sentence in the response (`error`); nothing is thrown from a transfer.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace nvdet {

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;                  // POSTed as application/json
  double timeout_s = 300.0;
  double inactivity_timeout_s = 60.0;
  int64_t max_response_bytes = int64_t{8} << 20;
  int retries = 0;
  // Called with each piece of the body as it arrives (streams); the body is also kept, up to its
  // limit, in the response. Return false to fail the request with `stop_reason`.
  std::function<bool(std::string_view)> on_data;
};

struct HttpResponse {
  long status = 0;    // the HTTP status; 0 when no answer came
  std::string body;   // the whole body (at most the limit)
  std::string error;  // why the transfer failed ("" when an answer came whole)
  double seconds = 0.0;
  int retries_used = 0;
  bool ok() const { return error.empty() && status >= 200 && status < 300; }
};

class HttpClient {
 public:
  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  using Done = std::function<void(int id, HttpResponse response)>;

  // Starts a request; `done` is called once, from run(), when it has finished or failed.
  // Returns its id.
  int start(HttpRequest request, Done done);
  // Drives every transfer until none is in flight or `stop()` returns true (asked after each
  // turn of the loop, at least every 50 ms).
  void run(const std::function<bool()>& stop = {});
  size_t in_flight() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nvdet
