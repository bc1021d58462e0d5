// pods/binding: the capture's 201 and 409, annotations and PodScheduled on the pod, a uid
// precondition, and binding latency that holds no lock.
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

TEST_F(FakeApiServerTest, BindingCreatesThenConflictsLikeTheRealOne) {
  ASSERT_OK(server_->AddPod(PodJson("watchns", "bind-probe")));
  auto client = MakeClient(*server_);
  const std::string path = "/api/v1/namespaces/watchns/pods/bind-probe/binding";
  WatchStream w(*server_, absl::StrCat("/api/v1/namespaces/watchns/pods?watch=1&resourceVersion=",
                                       server_->resource_version()));
  ASSERT_TRUE(server_->WaitForWatches(1, seconds(5)));

  httplib::Result created =
      client->Post(path,
                   BindingJson("watchns", "bind-probe", "gpu-node-b",
                               R"(,"annotations":{"gpu-tenancy.io/tenant":"labs"})"),
                   "application/json");
  ASSERT_TRUE(created);
  auto [real_created, real_created_code] =
      CapturedReply(ReadTestData("apiserver/binding-created.txt"));
  EXPECT_EQ(created->status, real_created_code);
  EXPECT_TRUE(ParseOrDie(created->body) == ParseOrDie(real_created)) << created->body;

  rapidjson::Document pod =
      ParseOrDie(server_->GetObject(Resource::kPods, "watchns", "bind-probe"));
  EXPECT_EQ(std::string(pod["spec"]["nodeName"].GetString()), "gpu-node-b");
  EXPECT_EQ(std::string(pod["metadata"]["annotations"]["gpu-tenancy.io/tenant"].GetString()),
            "labs");
  EXPECT_EQ(std::string(pod["metadata"]["labels"]["app"].GetString()), "w");
  bool scheduled = false;
  for (const auto& c : pod["status"]["conditions"].GetArray()) {
    scheduled |= Str(c, "type") == "PodScheduled" && Str(c, "status") == "True";
  }
  EXPECT_TRUE(scheduled);
  rapidjson::Document modified = ParseOrDie(w.NextEvent());
  EXPECT_EQ(Str(modified, "type"), "MODIFIED");
  EXPECT_EQ(std::string(modified["object"]["spec"]["nodeName"].GetString()), "gpu-node-b");

  httplib::Result again =
      client->Post(path, BindingJson("watchns", "bind-probe", "gpu-node-a"), "application/json");
  ASSERT_TRUE(again);
  auto [real_conflict, real_conflict_code] =
      CapturedReply(ReadTestData("apiserver/binding-conflict.txt"));
  EXPECT_EQ(again->status, real_conflict_code);
  EXPECT_TRUE(ParseOrDie(again->body) == ParseOrDie(real_conflict)) << again->body;
  EXPECT_EQ(server_->CountRequests("POST", path), 2);

  httplib::Result missing =
      client->Post("/api/v1/namespaces/watchns/pods/ghost/binding",
                   BindingJson("watchns", "ghost", "gpu-node-a"), "application/json");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(Str(ParseOrDie(missing->body), "reason"), "NotFound");

  ASSERT_OK(server_->AddPod(PodJson("watchns", "uid-probe")));
  httplib::Result wrong_uid =
      client->Post("/api/v1/namespaces/watchns/pods/uid-probe/binding",
                   BindingJson("watchns", "uid-probe", "gpu-node-a", R"(,"uid":"not-the-uid")"),
                   "application/json");
  ASSERT_TRUE(wrong_uid);
  EXPECT_EQ(wrong_uid->status, 409);
  EXPECT_TRUE(absl::StrContains(Str(ParseOrDie(wrong_uid->body), "message"),
                                "Precondition failed: UID in precondition: not-the-uid"));
}

TEST_F(FakeApiServerTest, BindingLatencyHoldsNoLock) {
  ASSERT_OK(server_->AddPod(PodJson("ns", "slow")));
  server_->SetLatency(milliseconds(600));
  std::chrono::steady_clock::duration bind_took{};
  int bind_status = 0;
  std::thread binder([&] {
    auto client = MakeClient(*server_);
    auto start = std::chrono::steady_clock::now();
    httplib::Result r = client->Post("/api/v1/namespaces/ns/pods/slow/binding",
                                     BindingJson("ns", "slow", "n1"), "application/json");
    bind_took = std::chrono::steady_clock::now() - start;
    bind_status = r ? r->status : 0;
  });
  std::this_thread::sleep_for(milliseconds(150));
  auto client = MakeClient(*server_);
  auto start = std::chrono::steady_clock::now();
  httplib::Result get = client->Get("/api/v1/namespaces/ns/pods/slow");
  auto get_took = std::chrono::steady_clock::now() - start;
  binder.join();
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 200);
  EXPECT_LT(get_took, milliseconds(400));
  EXPECT_EQ(bind_status, 201);
  EXPECT_GE(bind_took, milliseconds(550));
}

}  // namespace
}  // namespace testing_support::apiserver_test
