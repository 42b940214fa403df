#pragma once
// Server-sent events as OpenAI-compatible servers stream them: `data: <json>` events, each ended
// by a blank line, the stream ended by `data: [DONE]` or, where a server sends no such event, by
// the connection closing. Fed in whatever pieces the network delivers.
#include <functional>
#include <string>
#include <string_view>

namespace nvdet {

class SseStream {
 public:
  using OnEvent = std::function<void(std::string_view data)>;

  // Reads `bytes`, calling `on_event` with each complete event's data (several data lines joined
  // by '\n'). Comments (':'), `event:`, `id:` and `retry:` lines carry nothing nvdet reads.
  void feed(std::string_view bytes, const OnEvent& on_event);
  // At the end of the body: an event the server did not end with a blank line is delivered.
  void finish(const OnEvent& on_event);
  bool done() const { return done_; }  // `data: [DONE]` was seen; what follows is ignored

 private:
  void line(std::string_view text, const OnEvent& on_event);
  void dispatch(const OnEvent& on_event);
  std::string partial_;  // a line not yet ended
  std::string data_;
  bool has_data_ = false, done_ = false, after_cr_ = false;
};

}  // namespace nvdet
