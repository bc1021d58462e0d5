// labelSelector and fieldSelector on lists, and the ADDED/DELETED transitions a watch under a
// selector sees.
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

TEST_F(FakeApiServerTest, SelectorsFilterListsAndWatches) {
  ASSERT_OK(server_->AddPod(PodJson("team", "p1", "", "a")));
  ASSERT_OK(server_->AddPod(PodJson("team", "p2", "node-1", "b")));
  auto client = MakeClient(*server_);
  auto names = [&](const std::string& query) {
    httplib::Result r = client->Get(absl::StrCat("/api/v1/pods?", query));
    return r ? ItemNames(ParseOrDie(r->body)) : std::vector<std::string>{"<transport error>"};
  };
  EXPECT_EQ(names("labelSelector=app%3Da"), std::vector<std::string>{"p1"});
  EXPECT_EQ(names("labelSelector=app%20in%20(a,b)"), (std::vector<std::string>{"p1", "p2"}));
  EXPECT_EQ(names("labelSelector=app!%3Da"), std::vector<std::string>{"p2"});
  EXPECT_EQ(names("fieldSelector=spec.nodeName%3D"), std::vector<std::string>{"p1"});
  EXPECT_EQ(names("fieldSelector=spec.nodeName!%3D,status.phase!%3DSucceeded"),
            std::vector<std::string>{"p2"});
  httplib::Result bad = client->Get("/api/v1/pods?fieldSelector=spec.foo%3Dx");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(Str(ParseOrDie(bad->body), "message"), "field label not supported: spec.foo");

  // Under a selector a pod that starts matching is ADDED, one that stops matching is DELETED.
  WatchStream w(*server_, absl::StrCat("/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dnode-1"
                                       "&resourceVersion=",
                                       server_->resource_version()));
  ASSERT_TRUE(server_->WaitForWatches(1, seconds(5)));
  ASSERT_OK(
      server_->MergePatch(Resource::kPods, "team", "p1", R"({"spec":{"nodeName":"node-1"}})"));
  std::string added = w.NextEvent();
  EXPECT_TRUE(absl::StartsWith(added, R"({"type":"ADDED")")) << added;
  EXPECT_EQ(Meta(ParseOrDie(added)["object"], "name"), "p1");
  ASSERT_OK(
      server_->MergePatch(Resource::kPods, "team", "p2", R"({"spec":{"nodeName":"node-2"}})"));
  std::string gone = w.NextEvent();
  EXPECT_TRUE(absl::StartsWith(gone, R"({"type":"DELETED")")) << gone;
  rapidjson::Document gone_doc = ParseOrDie(gone);
  EXPECT_EQ(Meta(gone_doc["object"], "name"), "p2");
  EXPECT_EQ(gone_doc["object"]["spec"]["nodeName"].GetString(),
            std::string("node-1"));  // old content
  EXPECT_EQ(Meta(gone_doc["object"], "resourceVersion"),
            absl::StrCat(server_->resource_version()));  // new resourceVersion
}

}  // namespace
}  // namespace testing_support::apiserver_test
