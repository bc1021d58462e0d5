// testing_support::InMemoryApi, the in-memory kube::Api of the unit tests: calls recorded with
// their bodies and content types, scripted replies and transport failures taken once each in
// order, the object store (create with generated names, reads, compare-and-swap updates, merge
// patches, deletes, Status refusals), and streams that end or are held open until their
// handle's Cancel() or Interrupt(), with the handle's semantics as kube/api.h states them.
#include "test/support/in_memory_api.h"

#include <string>
#include <thread>
#include <vector>

#include "common/json.h"
#include "gtest/gtest.h"

namespace {

using testing_support::InMemoryApi;

std::string FieldOfMeta(const std::string& json, const char* key) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(json);
  if (!doc.ok()) return "<unreadable>";
  const common::JsonValue* meta = common::FindMember(*doc, "metadata");
  return meta ? std::string(common::StringOr(*meta, key)) : "<no metadata>";
}

TEST(InMemoryApiTest, RecordsEveryCallWithItsBodyAndContentType) {
  InMemoryApi api;
  (void)api.Get("/api/v1/nodes/n1");
  (void)api.Post("/api/v1/namespaces/a/events", R"({"metadata":{"generateName":"p."}})");
  (void)api.Patch("/api/v1/nodes/n1", "{}", "application/merge-patch+json");
  (void)api.Delete("/api/v1/namespaces/a/pods/p");
  std::vector<InMemoryApi::Call> calls = api.Calls();
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0].method, "GET");
  EXPECT_EQ(calls[0].content_type, "");
  EXPECT_EQ(calls[1].method, "POST");
  EXPECT_EQ(calls[1].body, R"({"metadata":{"generateName":"p."}})");
  EXPECT_EQ(calls[1].content_type, "application/json");
  EXPECT_EQ(calls[2].content_type, "application/merge-patch+json");
  EXPECT_EQ(api.Calls("DELETE", "/api/v1/namespaces/a/").size(), 1u);
  EXPECT_EQ(api.Calls("GET", "/api/v1/namespaces/").size(), 0u);
  api.ClearCalls();
  EXPECT_TRUE(api.Calls().empty());
}

TEST(InMemoryApiTest, ScriptedRepliesAndFailuresAreTakenOnceEachInOrder) {
  InMemoryApi api;
  api.SetObject("/api/v1/nodes/n1", R"({"metadata":{"name":"n1"}})");
  api.Reply("GET", "/api/v1/nodes/", 500);
  api.Fail("GET", "/api/v1/nodes/");
  api.Reply("GET", "/api/v1/nodes/", 200, "scripted");
  api.Reply("POST", "/elsewhere", 201);

  absl::StatusOr<kube::ApiResponse> r = api.Get("/api/v1/nodes/n1");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(kube::DescribeError(*r), "HTTP 500: scripted HTTP 500");
  r = api.Get("/api/v1/nodes/n1");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  r = api.Get("/api/v1/nodes/n1");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body, "scripted");
  r = api.Get("/api/v1/nodes/n1");  // the script is used up: the store answers
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(FieldOfMeta(r->body, "name"), "n1");
}

TEST(InMemoryApiTest, TheStoreCreatesReadsSwapsPatchesAndDeletes) {
  InMemoryApi api;
  const std::string coll = "/api/v1/namespaces/a/configmaps";
  absl::StatusOr<kube::ApiResponse> made = api.Post(coll, R"({"metadata":{"name":"cm"}})");
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(made->status, 201);
  const std::string version = FieldOfMeta(made->body, "resourceVersion");
  EXPECT_FALSE(version.empty());
  EXPECT_EQ(api.Post(coll, R"({"metadata":{"name":"cm"}})")->status, 409);

  absl::StatusOr<kube::ApiResponse> generated =
      api.Post(coll, R"({"metadata":{"generateName":"gen-"}})");
  ASSERT_TRUE(generated.ok());
  EXPECT_EQ(generated->status, 201);
  const std::string name = FieldOfMeta(generated->body, "name");
  EXPECT_EQ(name.rfind("gen-", 0), 0u) << name;
  EXPECT_TRUE(api.Object(coll + "/" + name).has_value());

  EXPECT_EQ(api.Get(coll + "/cm?x=1")->status, 200);
  EXPECT_EQ(api.Get(coll + "/absent")->status, 404);
  EXPECT_EQ(kube::DescribeError(*api.Get(coll + "/absent")),
            "HTTP 404: " + coll + "/absent not found");

  // A PUT carrying the version it read wins once; the same version again is stale.
  const std::string put =
      R"({"metadata":{"name":"cm","resourceVersion":")" + version + R"("},"data":{"k":"v"}})";
  EXPECT_EQ(api.Put(coll + "/cm", put)->status, 200);
  EXPECT_EQ(api.Put(coll + "/cm", put)->status, 409);
  EXPECT_EQ(api.Put(coll + "/nothing", put)->status, 404);

  absl::StatusOr<kube::ApiResponse> patched =
      api.Patch(coll + "/cm", R"({"data":{"k":null,"n":"1"},"metadata":{"labels":{"l":"x"}}})",
                "application/merge-patch+json");
  ASSERT_TRUE(patched.ok());
  EXPECT_EQ(patched->status, 200);
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(*api.Object(coll + "/cm"));
  ASSERT_TRUE(doc.ok());
  const common::JsonValue* data = common::FindMember(*doc, "data");
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(common::FindMember(*data, "k"), nullptr);
  EXPECT_EQ(common::StringOr(*data, "n"), "1");
  EXPECT_EQ(FieldOfMeta(*api.Object(coll + "/cm"), "name"), "cm");
  EXPECT_EQ(api.Patch(coll + "/cm", "[]", "application/json-patch+json")->status, 415);

  EXPECT_EQ(api.Delete(coll + "/cm")->status, 200);
  EXPECT_EQ(api.Delete(coll + "/cm")->status, 404);
  EXPECT_FALSE(api.Object(coll + "/cm").has_value());
}

TEST(InMemoryApiTest, AStreamDeliversItsLinesAndStatusOrA404WhenUnscripted) {
  InMemoryApi api;
  api.ScriptStream("/api/v1/nodes?watch=1", {"one", "two", "three"}, 200);
  std::vector<std::string> seen;
  absl::StatusOr<int> status = api.StreamLines(
      "/api/v1/nodes?watch=1&resourceVersion=5",
      [&](absl::string_view line) {
        seen.emplace_back(line);
        return seen.size() < 2;
      },
      nullptr, 30);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(*status, 200);
  EXPECT_EQ(seen, (std::vector<std::string>{"one", "two"}));
  ASSERT_EQ(api.Calls().size(), 1u);
  EXPECT_TRUE(api.Calls()[0].stream);

  seen.clear();
  status = api.StreamLines(
      "/api/v1/pods?watch=1",
      [&](absl::string_view line) {
        seen.emplace_back(line);
        return true;
      },
      nullptr, 30);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(*status, 404);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NE(seen[0].find("\"code\":404"), std::string::npos) << seen[0];
}

TEST(InMemoryApiTest, AHeldStreamEndsOnInterruptThenOnCancelForGood) {
  InMemoryApi api;
  kube::Api::Stream handle;
  auto run = [&] {
    return api.StreamLines(
        "/w", [](absl::string_view) { return true; }, &handle, 30);
  };
  // An Interrupt() with no stream running ends the next one at once, and only that one.
  handle.Interrupt();
  EXPECT_EQ(run().status().code(), absl::StatusCode::kAborted);

  api.ScriptStream("/w", {"line"}, 200, /*hold_open=*/true);
  absl::StatusOr<int> ended;
  std::thread watcher([&] { ended = run(); });
  while (api.RunningStreams() == 0) std::this_thread::yield();
  handle.Interrupt();
  watcher.join();
  EXPECT_EQ(ended.status().code(), absl::StatusCode::kAborted);

  api.ScriptStream("/w", {}, 200, /*hold_open=*/true);
  watcher = std::thread([&] { ended = run(); });
  while (api.RunningStreams() == 0) std::this_thread::yield();
  handle.Cancel();
  watcher.join();
  EXPECT_EQ(ended.status().code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(handle.cancelled());
  api.ScriptStream("/w", {"never"}, 200);
  EXPECT_EQ(run().status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(api.Calls().size(), 2u);  // refused streams made no call
}

}  // namespace
