// The object store over the API: paginated lists shaped like the captures, create, update
// and delete with their watch events, leases under optimistic concurrency, posted events, and
// an object removed behind the watchers' backs.
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

TEST_F(FakeApiServerTest, PaginatedNodeListHasTheShapeOfTheRealOne) {
  ASSERT_OK(server_->LoadTestData("apiserver/list-nodes-page1.json"));
  ASSERT_OK(server_->LoadTestData("apiserver/list-nodes-page2.json"));
  rapidjson::Document real1 = ParseOrDie(ReadTestData("apiserver/list-nodes-page1.json"));
  rapidjson::Document real2 = ParseOrDie(ReadTestData("apiserver/list-nodes-page2.json"));
  auto client = MakeClient(*server_);

  httplib::Result r1 = client->Get("/api/v1/nodes?limit=2");
  ASSERT_TRUE(r1);
  EXPECT_EQ(r1->status, 200);
  EXPECT_EQ(r1->get_header_value("Content-Type"), "application/json");
  rapidjson::Document page1 = ParseOrDie(r1->body);
  EXPECT_EQ(Keys(page1), Keys(real1));
  EXPECT_EQ(Str(page1, "kind"), "NodeList");
  EXPECT_EQ(Str(page1, "apiVersion"), "v1");
  EXPECT_EQ(Keys(page1["metadata"]),
            Keys(real1["metadata"]));  // resourceVersion, continue, remainingItemCount
  EXPECT_EQ(page1["metadata"]["remainingItemCount"].GetInt64(), 1);
  EXPECT_EQ(ItemNames(page1), ItemNames(real1));  // etcd key order: cpu-node-c, gpu-node-a
  ASSERT_EQ(page1["items"].Size(), real1["items"].Size());
  for (rapidjson::SizeType i = 0; i < page1["items"].Size(); ++i) {
    // Items carry no kind/apiVersion and come back as loaded, but for resourceVersion.
    EXPECT_EQ(Keys(page1["items"][i]), Keys(real1["items"][i]));
    EraseMetadataField(page1["items"][i], "resourceVersion");
    EraseMetadataField(real1["items"][i], "resourceVersion");
    EXPECT_TRUE(page1["items"][i] == real1["items"][i]) << common::ToJson(page1["items"][i]);
  }
  EXPECT_EQ(Meta(page1, "resourceVersion"), absl::StrCat(server_->resource_version()));

  // The continue token is what kube-apiserver mints: base64url of {"v","rv","start"}.
  auto token = [](const rapidjson::Value& list) {
    std::string decoded;
    EXPECT_TRUE(absl::WebSafeBase64Unescape(Meta(list, "continue"), &decoded));
    return ParseOrDie(decoded);
  };
  rapidjson::Document ours = token(page1);
  rapidjson::Document theirs = token(real1);
  EXPECT_EQ(Keys(ours), Keys(theirs));
  EXPECT_TRUE(ours["start"] == theirs["start"]);  // "gpu-node-a\u0000"
  EXPECT_EQ(ours["rv"].GetInt64(), server_->resource_version());

  httplib::Result r2 =
      client->Get(absl::StrCat("/api/v1/nodes?limit=2&continue=", Meta(page1, "continue")));
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->status, 200);
  rapidjson::Document page2 = ParseOrDie(r2->body);
  EXPECT_EQ(Keys(page2), Keys(real2));
  EXPECT_EQ(Keys(page2["metadata"]), Keys(real2["metadata"]));  // the last page: no continue
  EXPECT_EQ(ItemNames(page2), ItemNames(real2));
  EXPECT_EQ(Meta(page2, "resourceVersion"), Meta(page1, "resourceVersion"));

  EXPECT_EQ(server_->CountRequests("GET", "/api/v1/nodes", "limit=2"), 2);
  EXPECT_EQ(server_->CountRequests("GET", "/api/v1/nodes", "continue="), 1);

  // resourceVersion=0 is served from the watch cache, which ignores limit.
  httplib::Result cached = client->Get("/api/v1/nodes?limit=2&resourceVersion=0");
  ASSERT_TRUE(cached);
  rapidjson::Document all = ParseOrDie(cached->body);
  EXPECT_EQ(ItemNames(all).size(), 3u);
  EXPECT_EQ(Keys(all["metadata"]), std::set<std::string>{"resourceVersion"});

  // A continue token together with a resourceVersion is refused, as by the real validation.
  httplib::Result both = client->Get(
      absl::StrCat("/api/v1/nodes?limit=2&resourceVersion=5&continue=", Meta(page1, "continue")));
  ASSERT_TRUE(both);
  EXPECT_EQ(both->status, 400);
}

TEST_F(FakeApiServerTest, PodAndNamespaceListsMatchTheCaptures) {
  ASSERT_OK(server_->LoadTestData("apiserver/list-pods.json"));
  ASSERT_OK(server_->LoadTestData("apiserver/list-namespaces.json"));
  auto client = MakeClient(*server_);
  for (const auto& [path, file, kind] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"/api/v1/pods", "apiserver/list-pods.json", "PodList"},
           {"/api/v1/namespaces", "apiserver/list-namespaces.json", "NamespaceList"}}) {
    SCOPED_TRACE(path);
    rapidjson::Document real = ParseOrDie(ReadTestData(file));
    httplib::Result r = client->Get(path.c_str());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    rapidjson::Document list = ParseOrDie(r->body);
    EXPECT_EQ(Keys(list), Keys(real));
    EXPECT_EQ(Keys(list["metadata"]), Keys(real["metadata"]));
    EXPECT_EQ(Str(list, "kind"), kind);
    EXPECT_EQ(ItemNames(list), ItemNames(real));
    for (rapidjson::SizeType i = 0; i < list["items"].Size(); ++i) {
      EXPECT_EQ(Keys(list["items"][i]), Keys(real["items"][i]));
    }
  }
  httplib::Result team = client->Get("/api/v1/namespaces/gpu-team/pods");
  ASSERT_TRUE(team);
  EXPECT_EQ(ItemNames(ParseOrDie(team->body)).size(), 8u);
  httplib::Result none = client->Get("/api/v1/namespaces/default/pods");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->body.find(R"("items":[])") != std::string::npos, true) << none->body;

  httplib::Result one = client->Get("/api/v1/namespaces/gpu-team/pods/pod-gpu");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->status, 200);
  rapidjson::Document pod = ParseOrDie(one->body);
  EXPECT_EQ(Str(pod, "kind"), "Pod");  // single objects do carry kind/apiVersion
  EXPECT_EQ(Str(pod, "apiVersion"), "v1");

  httplib::Result node = client->Get("/api/v1/nodes/nope");
  ASSERT_TRUE(node);
  EXPECT_EQ(node->status, 404);
  rapidjson::Document missing = ParseOrDie(node->body);
  EXPECT_EQ(Str(missing, "reason"), "NotFound");
  EXPECT_EQ(Str(missing, "message"), R"(nodes "nope" not found)");
  EXPECT_EQ(Str(missing["details"], "kind"), "nodes");
  EXPECT_EQ(missing["code"].GetInt(), 404);
}

TEST_F(FakeApiServerTest, CreateUpdateAndDeleteThroughTheApi) {
  auto client = MakeClient(*server_);
  WatchStream w(*server_, absl::StrCat("/api/v1/namespaces/ns/pods?watch=1&resourceVersion=",
                                       server_->resource_version()));
  ASSERT_TRUE(server_->WaitForWatches(1, seconds(5)));
  const std::string pods = "/api/v1/namespaces/ns/pods";
  std::string pod_json = PodJson("ns", "p", "node-1");
  absl::StrReplaceAll({{R"(,"status":{"phase":"Pending"})", ""}}, &pod_json);
  httplib::Result created = client->Post(pods, pod_json, "application/json");
  ASSERT_TRUE(created);
  EXPECT_EQ(created->status, 201);
  rapidjson::Document pod = ParseOrDie(created->body);
  EXPECT_EQ(std::string(pod["status"]["phase"].GetString()), "Pending");  // defaulted
  EXPECT_FALSE(Meta(pod, "uid").empty());

  httplib::Result second = client->Post(pods, PodJson("ns", "q"), "application/json");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 201);
  pod["metadata"]["name"].SetString("r");
  httplib::Result rv_set = client->Post(pods, common::ToJson(pod), "application/json");
  ASSERT_TRUE(rv_set);
  EXPECT_EQ(rv_set->status, 500);  // "resourceVersion should not be set on objects to be created"

  // Pods allow unconditional updates: a PUT without resourceVersion goes through.
  pod["metadata"]["name"].SetString("p");
  pod["metadata"].RemoveMember("resourceVersion");
  pod["metadata"]["labels"]["app"].SetString("changed");
  httplib::Result put = client->Put(pods + "/p", common::ToJson(pod), "application/json");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 200);
  httplib::Result wrong_name =
      client->Put(pods + "/other", common::ToJson(pod), "application/json");
  ASSERT_TRUE(wrong_name);
  EXPECT_EQ(wrong_name->status, 400);

  // A bound pod goes MODIFIED (deletionTimestamp) then DELETED, as in watch-pods.raw.
  httplib::Result deleted = client->Delete(pods + "/p");
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->status, 200);
  httplib::Result again = client->Delete(pods + "/p");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 404);

  std::vector<std::string> seen;
  for (int i = 0; i < 5; ++i) {
    rapidjson::Document e = ParseOrDie(w.NextEvent());
    seen.push_back(absl::StrCat(Str(e, "type"), " ", Meta(e["object"], "name"),
                                Meta(e["object"], "deletionTimestamp").empty() ? "" : " deleting"));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED p", "ADDED q", "MODIFIED p",
                                            "MODIFIED p deleting", "DELETED p deleting"}));

  httplib::Result unknown = client->Get("/api/v1/services");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  httplib::Result collection = client->Delete(pods);
  ASSERT_TRUE(collection);
  EXPECT_EQ(collection->status, 405);
}

TEST_F(FakeApiServerTest, LeasesUseOptimisticConcurrency) {
  auto client = MakeClient(*server_);
  const std::string leases = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";
  const std::string lease =
      R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"gpu-tenancy",)"
      R"("namespace":"kube-system"},"spec":{"holderIdentity":"a","leaseDurationSeconds":15}})";
  httplib::Result created = client->Post(leases, lease, "application/json");
  ASSERT_TRUE(created);
  EXPECT_EQ(created->status, 201);
  rapidjson::Document stored = ParseOrDie(created->body);
  EXPECT_EQ(Str(stored, "kind"), "Lease");
  EXPECT_EQ(Str(stored, "apiVersion"), "coordination.k8s.io/v1");
  EXPECT_FALSE(Meta(stored, "uid").empty());
  EXPECT_FALSE(Meta(stored, "creationTimestamp").empty());
  std::string rv1 = Meta(stored, "resourceVersion");

  httplib::Result dup = client->Post(leases, lease, "application/json");
  ASSERT_TRUE(dup);
  EXPECT_EQ(dup->status, 409);
  rapidjson::Document exists = ParseOrDie(dup->body);
  EXPECT_EQ(Str(exists, "reason"), "AlreadyExists");
  EXPECT_EQ(Str(exists, "message"), R"(leases.coordination.k8s.io "gpu-tenancy" already exists)");
  EXPECT_EQ(Str(exists["details"], "group"), "coordination.k8s.io");
  EXPECT_EQ(Str(exists["details"], "kind"), "leases");

  httplib::Result got = client->Get(leases + "/gpu-tenancy");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 200);

  stored["spec"]["holderIdentity"].SetString("b");
  httplib::Result renewed =
      client->Put(leases + "/gpu-tenancy", common::ToJson(stored), "application/json");
  ASSERT_TRUE(renewed);
  EXPECT_EQ(renewed->status, 200);
  rapidjson::Document after = ParseOrDie(renewed->body);
  EXPECT_EQ(std::string(after["spec"]["holderIdentity"].GetString()), "b");
  EXPECT_NE(Meta(after, "resourceVersion"), rv1);
  EXPECT_EQ(Meta(after, "uid"), Meta(stored, "uid"));

  stored["spec"]["holderIdentity"].SetString("c");  // still carries rv1
  httplib::Result stale =
      client->Put(leases + "/gpu-tenancy", common::ToJson(stored), "application/json");
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, 409);
  rapidjson::Document conflict = ParseOrDie(stale->body);
  EXPECT_EQ(Str(conflict, "reason"), "Conflict");
  EXPECT_EQ(Str(conflict, "message"),
            "Operation cannot be fulfilled on leases.coordination.k8s.io \"gpu-tenancy\": the "
            "object has been modified; please apply your changes to the latest version and try "
            "again");

  stored["metadata"].RemoveMember("resourceVersion");
  httplib::Result unconditional =
      client->Put(leases + "/gpu-tenancy", common::ToJson(stored), "application/json");
  ASSERT_TRUE(unconditional);
  EXPECT_EQ(unconditional->status, 422);  // Lease does not allow unconditional updates

  httplib::Result missing = client->Get(leases + "/other");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(Str(ParseOrDie(missing->body), "message"),
            R"(leases.coordination.k8s.io "other" not found)");

  httplib::Result list = client->Get(leases);
  ASSERT_TRUE(list);
  rapidjson::Document l = ParseOrDie(list->body);
  EXPECT_EQ(Str(l, "kind"), "LeaseList");
  EXPECT_EQ(Str(l, "apiVersion"), "coordination.k8s.io/v1");
  EXPECT_EQ(ItemNames(l), std::vector<std::string>{"gpu-tenancy"});
}

TEST_F(FakeApiServerTest, PostedEventsAreRecorded) {
  auto client = MakeClient(*server_);
  httplib::Result core = client->Post(
      "/api/v1/namespaces/gpu-team/events",
      R"({"metadata":{"name":"pod-gpu.1"},"involvedObject":{"kind":"Pod","namespace":"gpu-team",)"
      R"("name":"pod-gpu"},"reason":"Scheduled","message":"assigned","type":"Normal"})",
      "application/json");
  ASSERT_TRUE(core);
  EXPECT_EQ(core->status, 201);
  httplib::Result modern = client->Post(
      "/apis/events.k8s.io/v1/namespaces/gpu-team/events",
      R"({"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"generateName":"pod-gpu."},)"
      R"("regarding":{"kind":"Pod","namespace":"gpu-team","name":"pod-gpu"},"reason":"GpuAssigned",)"
      R"("note":"mig-1g.10gb","type":"Normal","action":"Binding","reportingController":"gpu-tenancy",)"
      R"("reportingInstance":"x","eventTime":"2026-11-30T16:40:55.000000Z"})",
      "application/json");
  ASSERT_TRUE(modern);
  EXPECT_EQ(modern->status, 201);
  EXPECT_TRUE(absl::StartsWith(Meta(ParseOrDie(modern->body), "name"), "pod-gpu."));
  httplib::Result wrong_ns =
      client->Post("/api/v1/namespaces/gpu-team/events",
                   R"({"metadata":{"name":"x","namespace":"other"}})", "application/json");
  ASSERT_TRUE(wrong_ns);
  EXPECT_EQ(wrong_ns->status, 400);

  std::vector<std::string> events = server_->Events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(Str(ParseOrDie(events[0]), "reason"), "Scheduled");
  EXPECT_EQ(Str(ParseOrDie(events[1]), "reason"), "GpuAssigned");
  EXPECT_EQ(Str(ParseOrDie(events[1]), "apiVersion"), "events.k8s.io/v1");
}

TEST_F(FakeApiServerTest, DeleteSilentlyLeavesWatchersUnaware) {
  ASSERT_OK(server_->AddPod(PodJson("ns", "a")));
  ASSERT_OK(server_->AddPod(PodJson("ns", "b")));
  WatchStream w(*server_,
                absl::StrCat("/api/v1/pods?watch=1&resourceVersion=", server_->resource_version()));
  ASSERT_TRUE(server_->WaitForWatches(1, seconds(5)));
  EXPECT_TRUE(server_->DeleteSilently(Resource::kPods, "ns", "a"));
  EXPECT_FALSE(server_->DeleteSilently(Resource::kPods, "ns", "a"));
  ASSERT_OK(server_->DeletePod("ns", "b"));
  rapidjson::Document next = ParseOrDie(w.NextEvent());
  EXPECT_EQ(Meta(next["object"], "name"), "b");  // nothing about "a"
  EXPECT_TRUE(server_->GetObject(Resource::kPods, "ns", "a").empty());
  httplib::Result list = MakeClient(*server_)->Get("/api/v1/pods");
  ASSERT_TRUE(list);
  EXPECT_TRUE(ItemNames(ParseOrDie(list->body)).empty());
}

}  // namespace
}  // namespace testing_support::apiserver_test
