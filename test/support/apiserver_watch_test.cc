// Watch streams: replay, live events, bookmarks byte for byte as captured, the chunked bytes,
// 410 after compaction, timeoutSeconds, DropWatches and a client that hangs up.
#include <httplib.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/fake_apiserver.h"
#include "test/support/fake_apiserver_test_util.h"

namespace testing_support::apiserver_test {
namespace {

TEST_F(FakeApiServerTest, WatchReplaysThenStreamsLiveEventsBookmarksAndDeletes) {
  ASSERT_OK(server_->AddPod(PodJson("watchns", "a")));
  int64_t from = server_->resource_version();
  ASSERT_OK(
      server_->MergePatch(Resource::kPods, "watchns", "a", R"({"metadata":{"labels":{"x":"1"}}})"));
  WatchStream w(*server_, absl::StrCat("/api/v1/namespaces/watchns/pods?watch=1&"
                                       "allowWatchBookmarks=true&resourceVersion=",
                                       from));
  std::string replayed = w.NextEvent();
  rapidjson::Document first = ParseOrDie(replayed);
  EXPECT_EQ(Str(first, "type"), "MODIFIED");
  EXPECT_EQ(Meta(first["object"], "resourceVersion"), absl::StrCat(from + 1));
  EXPECT_EQ(first["object"]["metadata"]["labels"]["x"].GetString(), std::string("1"));
  ASSERT_TRUE(server_->WaitForWatches(1, seconds(5)));

  ASSERT_OK(server_->AddPod(PodJson("elsewhere", "c")));  // another namespace: not seen
  ASSERT_OK(server_->AddPod(PodJson("watchns", "b")));
  rapidjson::Document added = ParseOrDie(w.NextEvent());
  EXPECT_EQ(Str(added, "type"), "ADDED");
  EXPECT_EQ(Meta(added["object"], "name"), "b");
  EXPECT_EQ(Str(added["object"], "kind"), "Pod");  // watch objects carry kind/apiVersion

  ASSERT_OK(server_->DeletePod("watchns", "a"));
  rapidjson::Document deleted = ParseOrDie(w.NextEvent());
  EXPECT_EQ(Str(deleted, "type"), "DELETED");
  EXPECT_EQ(Meta(deleted["object"], "name"), "a");
  EXPECT_EQ(Meta(deleted["object"], "resourceVersion"), absl::StrCat(server_->resource_version()));

  // The bookmark is byte for byte the captured one, but for its resourceVersion.
  std::string bookmark = w.NextOfType("BOOKMARK", milliseconds(3000));
  ASSERT_FALSE(bookmark.empty());
  std::string captured;
  for (const std::string& line : CapturedWatchLines()) {
    if (absl::StrContains(line, "\"BOOKMARK\"")) captured = line;
  }
  ASSERT_FALSE(captured.empty());
  EXPECT_EQ(
      bookmark + "\n",
      absl::StrReplaceAll(
          captured, {{R"("resourceVersion":"306")",
                      absl::StrCat(R"("resourceVersion":")", server_->resource_version(), "\"")}}));

  // Without resourceVersion the watch starts with the current state as ADDED events.
  WatchStream fresh(*server_, "/api/v1/namespaces/watchns/pods?watch=true");
  rapidjson::Document initial = ParseOrDie(fresh.NextEvent());
  EXPECT_EQ(Str(initial, "type"), "ADDED");
  EXPECT_EQ(Meta(initial["object"], "name"), "b");
}

TEST_F(FakeApiServerTest, WatchBytesHaveTheShapeOfTheCapture) {
  std::vector<std::string> captured = CapturedWatchLines();
  ASSERT_GE(captured.size(), 4u);
  rapidjson::Document captured_added = ParseOrDie(captured[0]);
  ASSERT_EQ(Str(captured_added, "type"), "ADDED");
  int64_t from = server_->resource_version();
  // The captured pod, loaded as it was streamed.
  ASSERT_OK(server_->AddPod(common::ToJson(captured_added["object"])));
  ASSERT_OK(server_->MergePatch(Resource::kPods, "watchns", "watch-probe",
                                R"({"metadata":{"labels":{"step":"2"}}})"));
  ASSERT_OK(server_->DeletePod("watchns", "watch-probe"));

  RawResponse raw = RawHttps(server_->port(), server_->ca_file(),
                             absl::StrCat("/api/v1/pods?watch=1&allowWatchBookmarks=true&"
                                          "resourceVersion=",
                                          from, "&timeoutSeconds=1"));
  EXPECT_TRUE(absl::StartsWith(raw.head, "HTTP/1.1 200 OK")) << raw.head;
  std::string real_head = ReadTestData("apiserver/watch-pods.headers");
  for (const char* header : {"Content-Type: application/json", "Transfer-Encoding: chunked",
                             "Cache-Control: no-cache, private"}) {
    EXPECT_TRUE(ContainsIgnoreCase(real_head, header)) << header;
    EXPECT_TRUE(ContainsIgnoreCase(raw.head, header)) << header << " in\n" << raw.head;
  }
  EXPECT_TRUE(ContainsIgnoreCase(raw.head, "Audit-Id: "));

  bool terminated = false;
  std::vector<std::string> chunks = Chunks(raw.body, &terminated);
  EXPECT_TRUE(terminated) << "timeoutSeconds ends the body with the 0-chunk";
  ASSERT_GE(chunks.size(), 3u);
  std::vector<std::string> types;
  for (const std::string& chunk : chunks) {
    // As in the capture: one event per chunk, one line per event.
    EXPECT_EQ(chunk.find('\n'), chunk.size() - 1) << chunk;
    rapidjson::Document event = ParseOrDie(chunk);
    EXPECT_EQ(Keys(event), (std::set<std::string>{"type", "object"}));
    types.push_back(Str(event, "type"));
  }
  for (const std::string& chunk : captured) EXPECT_EQ(chunk.find('\n'), chunk.size() - 1);
  EXPECT_EQ(std::vector<std::string>(types.begin(), types.begin() + 3),
            (std::vector<std::string>{"ADDED", "MODIFIED", "DELETED"}));

  // The ADDED line is the captured line, byte for byte, but for the resourceVersion.
  std::string expected = absl::StrReplaceAll(
      captured[0],
      {{R"("resourceVersion":"303")", absl::StrCat(R"("resourceVersion":")", from + 1, "\"")}});
  EXPECT_EQ(chunks[0], expected);
}

TEST_F(FakeApiServerTest, CompactedResourceVersionGets410LikeTheRealOne) {
  ASSERT_OK(server_->AddPod(PodJson("ns", "a")));
  int64_t old = server_->resource_version();
  ASSERT_OK(server_->AddPod(PodJson("ns", "b")));
  auto client = MakeClient(*server_);
  httplib::Result page = client->Get("/api/v1/pods?limit=1");
  ASSERT_TRUE(page);
  std::string cont = Meta(ParseOrDie(page->body), "continue");
  ASSERT_FALSE(cont.empty());
  ASSERT_OK(server_->AddPod(PodJson("ns", "c")));
  server_->Compact();

  RawResponse raw = RawHttps(server_->port(), server_->ca_file(),
                             absl::StrCat("/api/v1/pods?watch=1&resourceVersion=", old));
  EXPECT_TRUE(absl::StartsWith(raw.head, "HTTP/1.1 200 OK")) << raw.head;
  bool terminated = false;
  std::vector<std::string> chunks = Chunks(raw.body, &terminated);
  bool real_terminated = false;
  std::vector<std::string> real =
      Chunks(ReadTestData("apiserver/watch-too-old.raw"), &real_terminated);
  EXPECT_TRUE(terminated);
  EXPECT_TRUE(real_terminated);
  ASSERT_EQ(chunks.size(), 1u);
  ASSERT_EQ(real.size(), 1u);
  EXPECT_EQ(NoDigits(chunks[0]), NoDigits(real[0]));
  EXPECT_TRUE(absl::StrContains(chunks[0], absl::StrCat("too old resource version: ", old, " (",
                                                        server_->resource_version(), ")")));

  // From the compacted resourceVersion itself the watch is fine.
  WatchStream ok(
      *server_, absl::StrCat("/api/v1/pods?watch=1&resourceVersion=", server_->resource_version()));
  ASSERT_TRUE(server_->WaitForWatches(1, seconds(5)));
  ASSERT_OK(server_->AddPod(PodJson("ns", "d")));
  EXPECT_TRUE(absl::StartsWith(ok.NextEvent(), R"({"type":"ADDED")"));

  // A continue token minted before the compaction has expired too.
  httplib::Result expired = client->Get(absl::StrCat("/api/v1/pods?limit=1&continue=", cont));
  ASSERT_TRUE(expired);
  EXPECT_EQ(expired->status, 410);
  rapidjson::Document status = ParseOrDie(expired->body);
  EXPECT_EQ(Str(status, "reason"), "Expired");
  EXPECT_FALSE(Meta(status, "continue").empty());  // the inconsistent-continuation token
}

TEST_F(FakeApiServerTest, WatchTimeoutEndsTheBodyCleanly) {
  auto start = std::chrono::steady_clock::now();
  WatchStream w(*server_, "/api/v1/nodes?watch=1&timeoutSeconds=1");
  ASSERT_TRUE(w.WaitDone(milliseconds(4000)));
  EXPECT_TRUE(w.ok());
  EXPECT_EQ(w.status(), 200);
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(900));
}

TEST_F(FakeApiServerTest, DropWatchesEndsEveryStream) {
  {
    WatchStream pods(*server_, "/api/v1/pods?watch=1");
    WatchStream nodes(*server_, "/api/v1/nodes?watch=true&allowWatchBookmarks=true");
    ASSERT_TRUE(server_->WaitForWatches(2, seconds(5)));
    server_->DropWatches();
    ASSERT_TRUE(pods.WaitDone(milliseconds(3000)));
    ASSERT_TRUE(nodes.WaitDone(milliseconds(3000)));
    EXPECT_FALSE(pods.ok()) << "dropped mid-stream: no terminating chunk";
    EXPECT_FALSE(nodes.ok());
  }
  for (int i = 0; i < 100 && server_->OpenWatches() > 0; ++i) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(server_->OpenWatches(), 0);

  WatchStream clean(*server_, "/api/v1/pods?watch=1");
  ASSERT_TRUE(server_->WaitForWatches(1, seconds(5)));
  server_->DropWatches(/*graceful=*/true);
  ASSERT_TRUE(clean.WaitDone(milliseconds(3000)));
  EXPECT_TRUE(clean.ok());
  EXPECT_EQ(clean.status(), 200);
  EXPECT_EQ(server_->CountRequests("GET", "/api/v1/pods", "watch=1"), 2);
}

TEST_F(FakeApiServerTest, AClientThatHangsUpFreesItsWatch) {
  {
    WatchStream w(*server_, "/api/v1/pods?watch=1");
    ASSERT_TRUE(server_->WaitForWatches(1, seconds(5)));
  }
  for (int i = 0; i < 100 && server_->OpenWatches() > 0; ++i) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(server_->OpenWatches(), 0);
}

}  // namespace
}  // namespace testing_support::apiserver_test
