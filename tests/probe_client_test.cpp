// nvdet probe's client against a scripted server on 127.0.0.1: many requests in flight on one
// thread, the deadlines, the size limit, retries only where allowed, SSE with and without
// [DONE], and reading both OpenAI answer shapes down to the bits of each log probability.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>

#include "lib/probe/http_client.h"
#include "lib/probe/served_output.h"
#include "lib/probe/sse_stream.h"
#include "tests/fake_openai_server.h"

namespace nvdet {
namespace {

using testing::FakeOpenAiServer;
using testing::FakeReply;
using testing::FakeRequest;

HttpResponse fetch(const std::string& url, HttpRequest r = {}) {
  HttpClient client;
  r.url = url;
  r.body = "{}";
  HttpResponse out;
  client.start(std::move(r), [&out](int, HttpResponse resp) { out = std::move(resp); });
  client.run();
  return out;
}

FakeReply json_reply(const std::string& body, int status = 200) {
  FakeReply r;
  r.status = status;
  r.pieces = {{body, 0}};
  return r;
}

TEST(ProbeClient, ManyRequestsAreInFlightAtOnceOnOneThread) {
  // Each answer waits 300 ms: 24 requests take about that long only if all are in flight.
  FakeOpenAiServer server([](const FakeRequest&) {
    FakeReply r = json_reply(testing::completion_json("x"));
    r.stall_ms_before_headers = 300;
    return r;
  });
  HttpClient client;
  int done = 0;
  for (int i = 0; i < 24; ++i) {
    HttpRequest r;
    r.url = server.url() + "/v1/completions";
    r.body = "{}";
    client.start(std::move(r), [&done](int, HttpResponse resp) {
      EXPECT_TRUE(resp.ok()) << resp.error;
      ++done;
    });
  }
  const auto t0 = std::chrono::steady_clock::now();
  client.run();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(done, 24);
  EXPECT_EQ(server.max_in_flight(), 24);
  EXPECT_LT(s, 3.0);
  for (const FakeRequest& q : server.requests()) {
    EXPECT_EQ(q.method, "POST");
    EXPECT_EQ(q.path, "/v1/completions");
  }
}

// The scripted server's own count, which the probe tests' batching stand-in reads: a request
// sent as soon as the previous reply has arrived must find nothing in flight (the count drops
// before a reply's last bytes go out, not after), for plain and for streamed replies.
TEST(ProbeClient, TheServersCountOfRequestsInFlightIsZeroBetweenSequentialRequests) {
  std::atomic<int> calls{0};
  FakeOpenAiServer server([&calls](const FakeRequest&) {
    if (calls++ % 2 == 0) return json_reply(testing::completion_json("x"));
    FakeReply r;
    r.content_type = "text/event-stream";
    r.chunked = true;
    r.pieces = testing::completion_stream({"a", "b"}, 0);
    return r;
  });
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(fetch(server.url() + "/v1/completions").ok()) << i;
  const std::vector<FakeRequest> requests = server.requests();
  ASSERT_EQ(requests.size(), 200u);
  for (size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(requests[i].others_in_flight, 0) << "request " << i;
}

TEST(ProbeClient, AnInactiveServerTimesOutAndSaysWhich) {
  FakeOpenAiServer server([](const FakeRequest&) {
    FakeReply r = json_reply("{}");
    r.stall_ms_before_headers = 3000;
    return r;
  });
  HttpRequest r;
  r.inactivity_timeout_s = 0.5;
  const auto t0 = std::chrono::steady_clock::now();
  const HttpResponse resp = fetch(server.url(), r);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.5);
  EXPECT_EQ(resp.error, "sent nothing for 0.5 s (endpoint.inactivity_timeout)");
}

TEST(ProbeClient, ATricklingAnswerMeetsItsTotalDeadline) {
  // A byte every 100 ms never looks inactive; the total deadline ends it.
  FakeOpenAiServer server([](const FakeRequest&) {
    FakeReply r;
    for (int i = 0; i < 60; ++i) r.pieces.emplace_back("x", 100);
    return r;
  });
  HttpRequest r;
  r.timeout_s = 1.0;
  r.inactivity_timeout_s = 0.5;
  const HttpResponse resp = fetch(server.url(), r);
  EXPECT_EQ(resp.error, "did not finish within 1 s (endpoint.timeout)");
}

TEST(ProbeClient, AnAnswerPastItsLimitIsCutOffBeforeItIsKept) {
  for (const bool chunked : {false, true}) {
    FakeOpenAiServer server([chunked](const FakeRequest&) {
      FakeReply r;
      r.chunked = chunked;  // chunked: no Content-Length to refuse it by in advance
      for (int i = 0; i < 64; ++i) r.pieces.emplace_back(std::string(1024, 'a'), 0);
      return r;
    });
    HttpRequest r;
    r.max_response_bytes = 4096;
    const HttpResponse resp = fetch(server.url(), r);
    EXPECT_EQ(resp.error, "answered more than 4096 bytes (endpoint.max_response_bytes)") << chunked;
    EXPECT_LE(resp.body.size(), 4096u);
  }
}

TEST(ProbeClient, RetriesOnlyWhereAllowedAndOnlyUnansweredOr503) {
  std::atomic<int> calls{0};
  FakeOpenAiServer server([&calls](const FakeRequest&) {
    return ++calls == 1 ? json_reply("busy", 503) : json_reply(testing::completion_json("x"));
  });
  HttpRequest none;
  EXPECT_EQ(fetch(server.url(), none).status, 503);  // no retries asked for: the 503 stands
  calls = 0;
  HttpRequest one;
  one.retries = 1;
  const HttpResponse resp = fetch(server.url(), one);
  EXPECT_TRUE(resp.ok());
  EXPECT_EQ(resp.retries_used, 1);
  // A 500 is an answer: never sent again, whatever the retries.
  FakeOpenAiServer failing([](const FakeRequest&) { return json_reply("boom", 500); });
  HttpRequest many;
  many.retries = 3;
  EXPECT_EQ(fetch(failing.url(), many).status, 500);
  EXPECT_EQ(failing.requests().size(), 1u);
}

TEST(ProbeClient, RefusedConnectionsAndClosedOnesSaySo) {
  const HttpResponse refused = fetch("http://127.0.0.1:" + std::to_string(testing::unused_port()));
  EXPECT_EQ(refused.status, 0);
  EXPECT_NE(refused.error.find("could not be reached or read"), std::string::npos) << refused.error;
  FakeOpenAiServer closing([](const FakeRequest&) {
    FakeReply r;
    r.close_unanswered = true;
    return r;
  });
  HttpRequest twice;
  twice.retries = 1;
  const HttpResponse closed = fetch(closing.url(), twice);
  EXPECT_NE(closed.error.find("could not be reached or read"), std::string::npos) << closed.error;
  EXPECT_EQ(closed.retries_used, 1);
  EXPECT_EQ(closing.requests().size(), 2u);  // sent again: the server never answered
}

TEST(ProbeClient, ARedirectIsAnAnswerNotAPlaceToGo) {
  FakeOpenAiServer elsewhere([](const FakeRequest&) { return json_reply("{}"); });
  FakeOpenAiServer server([&elsewhere](const FakeRequest&) {
    FakeReply r = json_reply("moved", 302);
    r.extra_headers = {"Location: " + elsewhere.url() + "/v1/completions"};
    return r;
  });
  EXPECT_EQ(fetch(server.url()).status, 302);
  EXPECT_TRUE(elsewhere.requests().empty());
}

TEST(ProbeClient, NoProxyFromTheEnvironmentSeesARequest) {
  FakeOpenAiServer proxy([](const FakeRequest&) { return json_reply("{}"); });
  FakeOpenAiServer server([](const FakeRequest&) { return json_reply("{}"); });
  ::setenv("http_proxy", proxy.url().c_str(), 1);
  ::setenv("HTTP_PROXY", proxy.url().c_str(), 1);
  ::setenv("ALL_PROXY", proxy.url().c_str(), 1);
  const HttpResponse resp = fetch(server.url());
  ::unsetenv("http_proxy");
  ::unsetenv("HTTP_PROXY");
  ::unsetenv("ALL_PROXY");
  EXPECT_TRUE(resp.ok()) << resp.error;
  EXPECT_TRUE(proxy.requests().empty());
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(ProbeClient, StreamsArriveInPiecesWithOrWithoutDone) {
  for (const bool done : {true, false}) {
    FakeOpenAiServer server([done](const FakeRequest&) {
      FakeReply r;
      r.content_type = "text/event-stream";
      r.chunked = true;
      r.pieces = testing::completion_stream({"a", "b", "c"}, 20, done);
      return r;
    });
    ServedOutputReader reader(ServerApi::kCompletions);
    SseStream sse;
    int pieces = 0;
    HttpRequest r;
    r.on_data = [&](std::string_view bytes) {
      ++pieces;
      sse.feed(bytes, [&](std::string_view data) { reader.add_text(data); });
      return true;
    };
    const HttpResponse resp = fetch(server.url(), r);
    sse.finish([&](std::string_view data) { reader.add_text(data); });
    ASSERT_TRUE(resp.ok()) << resp.error;
    EXPECT_EQ(reader.error(), "");
    EXPECT_EQ(reader.output().text, "abc");
    EXPECT_EQ(reader.output().finish_reason, "length");
    EXPECT_EQ(reader.output().chunks, 3);
    EXPECT_GE(pieces, 3);  // delivered as they came, not at the end
    EXPECT_EQ(sse.done(), done);
  }
}

TEST(SseStream, LineEndsCommentsAndSplitPieces) {
  const std::string stream =
      ": keep-alive\r\n\r\nevent: x\r\ndata: {\"a\":1}\r\n\r\ndata: one\ndata: two\n\n"
      "data:[DONE]\n\ndata: after\n\n";
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    SseStream sse;
    std::vector<std::string> events;
    const auto on = [&](std::string_view d) { events.emplace_back(d); };
    sse.feed(stream.substr(0, cut), on);
    sse.feed(stream.substr(cut), on);
    sse.finish(on);
    EXPECT_EQ(events, (std::vector<std::string>{"{\"a\":1}", "one\ntwo"})) << cut;
    EXPECT_TRUE(sse.done());
  }
  SseStream open;
  std::vector<std::string> events;
  open.feed("data: last", [&](std::string_view d) { events.emplace_back(d); });
  open.finish([&](std::string_view d) { events.emplace_back(d); });
  EXPECT_EQ(events, std::vector<std::string>{"last"});  // a server that closes without a blank line
}

// llama-server's shape: logprobs.content with ids and top_logprobs, for completions too.
const char* kLlamaAnswer = R"({"choices":[{"index":0,"text":" river stone","finish_reason":"length",
  "logprobs":{"content":[
    {"id":17,"token":" river","logprob":-0.6931471824645996,"top_logprobs":[
      {"id":17,"token":" river","logprob":-0.6931471824645996},{"id":23,"token":" stone","logprob":-0.6940000057220459}]},
    {"id":23,"token":" stone","logprob":-1.5,"top_logprobs":[
      {"id":23,"token":" stone","logprob":-1.5},{"id":4,"token":" the","logprob":-2.25}]}]}}]})";

TEST(ServedOutput, ReadsTheChatShapeWithIdsAndTheLegacyShape) {
  ServedOutputReader llama(ServerApi::kCompletions);
  ASSERT_TRUE(llama.add_text(kLlamaAnswer)) << llama.error();
  const ServedOutput& o = llama.output();
  ASSERT_EQ(o.tokens.size(), 2u);
  EXPECT_EQ(o.text, " river stone");
  EXPECT_EQ(o.tokens[1].id, 23);
  EXPECT_EQ(o.tokens[0].top[1].text, " stone");
  EXPECT_EQ(served_level(o), "logprobs");
  const RequestRecord rec = served_record(0, o);
  EXPECT_EQ(rec.completion, (std::vector<int32_t>{17, 23}));
  EXPECT_EQ(rec.token_hashes.size(), 2u);
  ASSERT_TRUE(rec.served);
  EXPECT_NEAR(rec.served->top_gaps[0], 0.6940000057220459 - 0.6931471824645996, 1e-15);
  EXPECT_DOUBLE_EQ(rec.served->top_gaps[1], 0.75);

  // The legacy completions shape (vLLM's): parallel lists, top alternatives as a map.
  ServedOutputReader legacy(ServerApi::kCompletions);
  ASSERT_TRUE(legacy.add_text(R"({"choices":[{"text":"ab","logprobs":{"tokens":["a","b"],
      "token_logprobs":[-0.5,-0.25],"top_logprobs":[{"a":-0.5,"z":-0.75},{"b":-0.25,"y":-2.0}]}}]})"))
      << legacy.error();
  ASSERT_EQ(legacy.output().tokens.size(), 2u);
  EXPECT_EQ(legacy.output().tokens[0].top[1].text, "z");
  EXPECT_TRUE(served_record(0, legacy.output()).completion.empty());  // no ids given

  // Chat: message.content, and a stream's delta.content.
  ServedOutputReader chat(ServerApi::kChat);
  ASSERT_TRUE(chat.add_text(R"({"choices":[{"delta":{"content":"hi"}}]})"));
  ASSERT_TRUE(
      chat.add_text(R"({"choices":[{"delta":{"content":" there"},"finish_reason":"stop"}]})"));
  EXPECT_EQ(chat.output().text, "hi there");
  EXPECT_EQ(served_level(chat.output()), "text");
}

TEST(ServedOutput, MalformedAnswersAndErrorsAreOneSentence) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"choices\":", "sent an answer that is not valid JSON (truncated or corrupt"},
      {"[1,2]", "sent a JSON answer that is not an object"},
      {"{\"object\":\"x\"}", "sent an answer without a 'choices' list"},
      {"{\"choices\":[{\"text\":7}]}", "sent a 'text' that is not text"},
      {"{\"error\":{\"message\":\"model overloaded\"}}", "reported an error: model overloaded"},
      {"{\"error\":\"boom\"}", "reported an error: boom"},
      {"{\"choices\":[{\"text\":\"a\",\"logprobs\":{\"tokens\":[\"a\"],\"token_logprobs\":[]}}]}",
       "sent 'logprobs' lists of different lengths"},
      {"{\"choices\":[{\"text\":\"a\",\"logprobs\":{\"content\":[{\"token\":\"a\"}]}}]}",
       "without a token text and a logprob"},
  };
  for (const auto& [text, expected] : cases) {
    ServedOutputReader r(ServerApi::kCompletions);
    EXPECT_FALSE(r.add_text(text)) << text;
    EXPECT_NE(r.error().find(expected), std::string::npos) << text << " -> " << r.error();
    EXPECT_EQ(r.error().find('\n'), std::string::npos);
  }
}

ServedOutput read_llama(const std::string& text) {
  ServedOutputReader r(ServerApi::kCompletions);
  EXPECT_TRUE(r.add_text(text)) << r.error();
  return r.output();
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(ServedOutput, OneBitOfOneAlternativeChangesTheHashAndIsFound) {
  const ServedOutput a = read_llama(kLlamaAnswer);
  // -2.25 -> the next float down: one ulp of the second token's second alternative.
  float next = std::nextafter(-2.25f, -3.0f);
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", static_cast<double>(next));
  const ServedOutput b = read_llama(replaced(kLlamaAnswer, "-2.25}", std::string(text) + "}"));
  EXPECT_NE(served_record(0, a).hash, served_record(0, b).hash);
  EXPECT_EQ(served_record(0, a).token_hashes[0], served_record(0, b).token_hashes[0]);
  const std::optional<Divergence> d = compare_served(a, b);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->token, 1);
  EXPECT_EQ(d->first_mismatch.coords, (std::vector<int64_t>{1, 2}));  // token 1, alternative 2
  EXPECT_EQ(d->first_mismatch.ulp, 1u);
  EXPECT_EQ(d->first_mismatch.a_bits, "0xc0100000");
  ASSERT_TRUE(d->served);
  EXPECT_EQ(d->served->position, -1);  // the same tokens chosen: no flip
  EXPECT_FALSE(compare_served(a, a));
}

TEST(ServedOutput, AFlippedTokenIsNamedWithBothLogprobsAndTheAloneGap) {
  const ServedOutput a = read_llama(kLlamaAnswer);
  // The second token flips; the first drifted by 2^-20 on the way.
  std::string flipped = replaced(kLlamaAnswer, R"({"id":23,"token":" stone","logprob":-1.5,)",
                                 R"({"id":4,"token":" the","logprob":-1.4,)");
  flipped = replaced(flipped, R"("logprob":-0.6931471824645996,"top)",
                     R"("logprob":-0.69314813613891602,"top)");
  const ServedOutput b = read_llama(flipped);
  const std::optional<Divergence> d = compare_served(a, b);
  ASSERT_TRUE(d && d->served);
  EXPECT_EQ(d->token, 0);  // the first bits to differ: token 0's logprob
  EXPECT_EQ(d->served->position, 1);
  EXPECT_EQ(d->served->baseline_piece, " stone");
  EXPECT_EQ(d->served->piece, " the");
  EXPECT_EQ(d->served->baseline_id, 23);
  EXPECT_EQ(d->served->id, 4);
  EXPECT_DOUBLE_EQ(d->served->baseline_logprob, -1.5);
  EXPECT_DOUBLE_EQ(d->served->logprob, -1.4);
  EXPECT_DOUBLE_EQ(d->served->baseline_top_gap, 0.75);
  EXPECT_NEAR(d->max_abs_diff, 0.69314813613891602 - 0.6931471824645996, 1e-15);
}

TEST(ServedOutput, TextOnlyAnswersPartAtTheirFirstByte) {
  ServedOutput a, b;
  a.text = "the river runs";
  b.text = "the rover runs";
  const std::optional<Divergence> d = compare_served(a, b);
  ASSERT_TRUE(d && d->served);
  EXPECT_FALSE(d->served->by_token);
  EXPECT_EQ(d->served->position, 5);
  EXPECT_EQ(d->served->baseline_piece, "iver runs");
  EXPECT_EQ(d->served->piece, "over runs");
  EXPECT_EQ(d->first_mismatch.a_bits, "0x69");
  b.text = a.text;
  b.finish_reason = "stop";
  EXPECT_TRUE(compare_served(a, b));  // the same text, another ending
  EXPECT_NE(served_record(0, a).hash, served_record(0, b).hash);
}

}  // namespace
}  // namespace nvdet
