#include "lib/probe/http_client.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "lib/core/error.h"

namespace nvdet {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// libcurl's global state, set up once before the first handle (not thread-safe in libcurl 7.x:
// the probe runs on one thread).
void init_curl_once() {
  static const bool ready = [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      throw_runtime_error("cannot initialise libcurl");
    return true;
  }();
  (void)ready;
}

// The failures after which a request was never answered, so that sending it again cannot
// duplicate work the server did: nothing connected, or the connection closed before any byte.
bool never_answered(CURLcode code, int64_t received) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_GOT_NOTHING: return true;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR: return received == 0;
    default: return false;
  }
}

}  // namespace

struct Transfer {
  int id = 0;
  HttpRequest request;
  HttpClient::Done done;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  char error_text[CURL_ERROR_SIZE] = {};
  std::string body;
  int64_t received = 0;
  bool oversized = false, stopped = false, inactive = false;
  Clock::time_point started, last_byte, retry_at;
  int attempts = 0;

  ~Transfer() {
    if (easy) curl_easy_cleanup(easy);
    if (headers) curl_slist_free_all(headers);
  }
  void reset_for_attempt() {
    body.clear();
    received = 0;
    oversized = stopped = inactive = false;
    error_text[0] = '\0';
    last_byte = Clock::now();
  }
  long status() const {
    long code = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
    return code;
  }
};

namespace {

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  t->last_byte = Clock::now();
  if (t->received + static_cast<int64_t>(n) > t->request.max_response_bytes) {
    t->oversized = true;
    return 0;  // fails the transfer with CURLE_WRITE_ERROR before anything past the limit is kept
  }
  t->received += static_cast<int64_t>(n);
  t->body.append(data, n);
  const long status = t->status();
  // Only an answer's body is the caller's to read as it comes: an error's is reported whole.
  if (t->request.on_data && status >= 200 && status < 300 &&
      !t->request.on_data(std::string_view(data, n))) {
    t->stopped = true;
    return 0;
  }
  return n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (seconds_between(t->last_byte, Clock::now()) > t->request.inactivity_timeout_s) {
    t->inactive = true;
    return 1;  // CURLE_ABORTED_BY_CALLBACK
  }
  return 0;
}

}  // namespace

struct HttpClient::Impl {
  CURLM* multi = nullptr;
  int next_id = 1;
  std::map<CURL*, std::unique_ptr<Transfer>> active;
  std::vector<std::unique_ptr<Transfer>> pending;  // waiting to be sent again

  void add(std::unique_ptr<Transfer> t) {
    t->reset_for_attempt();
    if (t->attempts == 0) t->started = Clock::now();
    ++t->attempts;
    if (curl_multi_add_handle(multi, t->easy) != CURLM_OK)
      throw_runtime_error("libcurl refused a request to " + t->request.url);
    active.emplace(t->easy, std::move(t));
  }

  // What went wrong with a finished transfer, in words; "" when an answer came whole.
  static std::string failure(const Transfer& t, CURLcode code) {
    const HttpRequest& r = t.request;
    if (t.oversized || code == CURLE_FILESIZE_EXCEEDED)
      return fmt::format("answered more than {} bytes (endpoint.max_response_bytes)",
                         r.max_response_bytes);
    if (t.inactive)
      return fmt::format("sent nothing for {:g} s (endpoint.inactivity_timeout)",
                         r.inactivity_timeout_s);
    if (t.stopped) return "sent a stream nvdet could not read";
    if (code == CURLE_OPERATION_TIMEDOUT)
      return fmt::format("did not finish within {:g} s (endpoint.timeout)", r.timeout_s);
    if (code == CURLE_OK) return "";
    const std::string detail = t.error_text[0] ? t.error_text : curl_easy_strerror(code);
    return "could not be reached or read: " + detail;
  }

  void finish(CURL* easy, CURLcode code) {
    curl_multi_remove_handle(multi, easy);
    auto it = active.find(easy);
    std::unique_ptr<Transfer> t = std::move(it->second);
    active.erase(it);
    const long status = code == CURLE_OK ? t->status() : 0;
    const bool retriable = (code != CURLE_OK && never_answered(code, t->received)) ||
                           (code == CURLE_OK && (status == 429 || status == 503));
    if (retriable && t->attempts <= t->request.retries) {
      // Backing off 0.25 s, 0.5 s, 1 s, ... (at most 4 s) before each new attempt.
      const double wait = std::min(4.0, 0.25 * std::pow(2.0, t->attempts - 1));
      t->retry_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(wait));
      pending.push_back(std::move(t));
      return;
    }
    HttpResponse r;
    r.status = status;
    r.error = failure(*t, code);
    r.body = std::move(t->body);
    r.seconds = seconds_between(t->started, Clock::now());
    r.retries_used = t->attempts - 1;
    t->done(t->id, std::move(r));
  }

  void send_due_retries() {
    const auto now = Clock::now();
    for (size_t i = 0; i < pending.size();) {
      if (pending[i]->retry_at > now) {
        ++i;
        continue;
      }
      std::unique_ptr<Transfer> t = std::move(pending[i]);
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
      add(std::move(t));
    }
  }
};

HttpClient::HttpClient() : impl_(std::make_unique<Impl>()) {
  init_curl_once();
  impl_->multi = curl_multi_init();
  if (!impl_->multi) throw_runtime_error("cannot create a libcurl multi handle");
  // HTTP/1.1 without pipelining: each request in flight has a connection of its own, so that
  // the server sees them all at once.
  curl_multi_setopt(impl_->multi, CURLMOPT_PIPELINING, long{CURLPIPE_NOTHING});
}

HttpClient::~HttpClient() {
  for (auto& [easy, t] : impl_->active) curl_multi_remove_handle(impl_->multi, easy);
  impl_->active.clear();
  impl_->pending.clear();
  curl_multi_cleanup(impl_->multi);
}

int HttpClient::start(HttpRequest request, Done done) {
  auto t = std::make_unique<Transfer>();
  t->id = impl_->next_id++;
  t->request = std::move(request);
  t->done = std::move(done);
  t->easy = curl_easy_init();
  if (!t->easy) throw_runtime_error("cannot create a libcurl handle");
  CURL* e = t->easy;
  const HttpRequest& r = t->request;
  for (const char* h : {"Content-Type: application/json",
                        "Accept: application/json, text/event-stream", "Expect:"}) {
    t->headers = curl_slist_append(t->headers, h);
  }
  for (const std::string& h : r.headers) t->headers = curl_slist_append(t->headers, h.c_str());
  curl_easy_setopt(e, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, r.body.c_str());
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
  curl_easy_setopt(e, CURLOPT_USERAGENT, "nvdet-probe/" NVDET_VERSION);
  // Nowhere but the URL given: http(s) only, no redirects, no proxy from the environment.
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_PROXY, "");
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(std::ceil(r.timeout_s * 1000.0)));
  curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(r.max_response_bytes));
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
  curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(e, CURLOPT_XFERINFODATA, t.get());
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error_text);
  const int id = t->id;
  impl_->add(std::move(t));
  return id;
}

size_t HttpClient::in_flight() const { return impl_->active.size() + impl_->pending.size(); }

void HttpClient::run(const std::function<bool()>& stop) {
  while (in_flight() > 0) {
    impl_->send_due_retries();
    int running = 0;
    if (curl_multi_perform(impl_->multi, &running) != CURLM_OK)
      throw_runtime_error("libcurl failed while driving the requests");
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(impl_->multi, &left)) {
      if (m->msg == CURLMSG_DONE) impl_->finish(m->easy_handle, m->data.result);
    }
    if (stop && stop()) return;
    if (in_flight() == 0) return;
    curl_multi_poll(impl_->multi, nullptr, 0, 50, nullptr);
  }
}

}  // namespace nvdet
