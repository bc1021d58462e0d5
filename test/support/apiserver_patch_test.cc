// PATCH: a merge patch answered as the capture, no-op patches, strategic merge, JSON Patch, a
// resourceVersion precondition, and the media types refused.
#include "test/support/apiserver_patch.h"

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

TEST_F(FakeApiServerTest, MergePatchMatchesTheRealReply) {
  rapidjson::Document real = ParseOrDie(ReadTestData("apiserver/patch-pod-merge.json"));
  // The pod as it was before the captured patch: no annotations, no managedFields from curl.
  rapidjson::Document before;
  before.CopyFrom(real, before.GetAllocator());
  before["metadata"].RemoveMember("annotations");
  rapidjson::Value& managed = before["metadata"]["managedFields"];
  for (rapidjson::SizeType i = 0; i < managed.Size(); ++i) {
    if (Str(managed[i], "manager") == "curl") {
      managed.Erase(managed.Begin() + i);
      break;
    }
  }
  ASSERT_OK(server_->AddPod(common::ToJson(before)));
  int64_t rv = server_->resource_version();
  auto client = MakeClient(*server_);
  const std::string path = "/api/v1/namespaces/watchns/pods/bind-probe";
  const std::string patch = R"({"metadata":{"annotations":{"gpu-tenancy.io/tenant":"labs"}}})";

  httplib::Result r = client->Patch(path, patch, "application/merge-patch+json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  rapidjson::Document patched = ParseOrDie(r->body);
  EXPECT_EQ(Meta(patched, "resourceVersion"), absl::StrCat(rv + 1));
  EXPECT_EQ(Keys(patched), Keys(real));
  EXPECT_EQ(Keys(patched["metadata"]), Keys(real["metadata"]));
  for (rapidjson::Document* d : {&patched, &real}) {
    EraseMetadataField(*d, "resourceVersion");
    EraseMetadataField(*d, "managedFields");  // server-side field tracking is not emulated
  }
  EXPECT_TRUE(patched == real) << r->body;

  // The same patch again changes nothing: same resourceVersion, as kube-apiserver.
  httplib::Result noop = client->Patch(path, patch, "application/merge-patch+json");
  ASSERT_TRUE(noop);
  EXPECT_EQ(Meta(ParseOrDie(noop->body), "resourceVersion"), absl::StrCat(rv + 1));
  EXPECT_EQ(server_->resource_version(), rv + 1);

  httplib::Result strategic = client->Patch(path, R"({"metadata":{"labels":{"tier":"gpu"}}})",
                                            "application/strategic-merge-patch+json");
  ASSERT_TRUE(strategic);
  rapidjson::Document s = ParseOrDie(strategic->body);
  EXPECT_EQ(std::string(s["metadata"]["labels"]["app"].GetString()), "w");
  EXPECT_EQ(std::string(s["metadata"]["labels"]["tier"].GetString()), "gpu");

  httplib::Result json_patch =
      client->Patch(path, R"([{"op":"add","path":"/metadata/labels/extra","value":"1"}])",
                    "application/json-patch+json");
  ASSERT_TRUE(json_patch);
  EXPECT_EQ(json_patch->status, 200);
  EXPECT_EQ(std::string(ParseOrDie(json_patch->body)["metadata"]["labels"]["extra"].GetString()),
            "1");

  httplib::Result stale =
      client->Patch(path, R"({"metadata":{"resourceVersion":"1","labels":{"z":"1"}}})",
                    "application/merge-patch+json");
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, 409);
  EXPECT_EQ(Str(ParseOrDie(stale->body), "reason"), "Conflict");

  httplib::Result apply = client->Patch(path, "{}", "application/apply-patch+yaml");
  ASSERT_TRUE(apply);
  EXPECT_EQ(apply->status, 415);

  httplib::Result missing =
      client->Patch("/api/v1/namespaces/watchns/pods/ghost", patch, "application/merge-patch+json");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

// webhook::ApplyPatch has no move or copy; the emulation's adapter applies them in order with
// the operations around them.
TEST(FakeApiServerJsonPatchTest, MoveAndCopyApplyInOrderWithTheRest) {
  rapidjson::Document doc = ParseOrDie(R"({"a":{"x":1},"b":[1,2]})");
  rapidjson::Document ops = ParseOrDie(
      R"([{"op":"copy","from":"/a/x","path":"/b/0"},{"op":"add","path":"/a/y","value":2},)"
      R"({"op":"move","from":"/a/y","path":"/c"},{"op":"test","path":"/c","value":2}])");
  ASSERT_OK(apiserver::ApplyJsonPatch(doc, ops));
  EXPECT_TRUE(doc == ParseOrDie(R"({"a":{"x":1},"b":[1,1,2],"c":2})")) << common::ToJson(doc);

  rapidjson::Document missing = ParseOrDie(R"([{"op":"move","from":"/nope","path":"/d"}])");
  EXPECT_FALSE(apiserver::ApplyJsonPatch(doc, missing).ok());
  rapidjson::Document unknown = ParseOrDie(R"([{"op":"merge","path":"/d","value":1}])");
  EXPECT_FALSE(apiserver::ApplyJsonPatch(doc, unknown).ok());
}

}  // namespace
}  // namespace testing_support::apiserver_test
