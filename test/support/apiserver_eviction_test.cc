// pods/eviction: a PodDisruptionBudget that allows no disruption answers 429 with the
// DisruptionBudget cause and keeps the pod; one that allows it deletes the pod and counts the
// disruption; and the kinds reconfigure reads (ConfigMaps, ReplicaSets, budgets) are served.
#include <httplib.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/fake_apiserver.h"
#include "test/support/fake_apiserver_test_util.h"

namespace testing_support::apiserver_test {
namespace {

std::string ReadyPod(const std::string& name) {
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", name,
      R"(","namespace":"team","labels":{"app":"llm"}},"spec":{"containers":[]},)",
      R"("status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}})");
}

std::string EvictionJson(const std::string& name) {
  return absl::StrCat(R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":")", name,
                      R"(","namespace":"team"}})");
}

int64_t DisruptionsAllowed(FakeApiServer& server) {
  rapidjson::Document pdb =
      ParseOrDie(server.GetObject(Resource::kPodDisruptionBudgets, "team", "llm"));
  return pdb["status"]["disruptionsAllowed"].GetInt64();
}

TEST_F(FakeApiServerTest, EvictionHonoursTheDisruptionBudget) {
  ASSERT_OK(server_->AddPod(ReadyPod("llm-0")));
  ASSERT_OK(server_->Load(R"({"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{)"
                          R"("name":"llm","namespace":"team"},"spec":{"selector":{"matchLabels":)"
                          R"({"app":"llm"}}},"status":{"disruptionsAllowed":0}})"));
  auto client = MakeClient(*server_);
  const std::string path = "/api/v1/namespaces/team/pods/llm-0/eviction";

  httplib::Result refused = client->Post(path, EvictionJson("llm-0"), "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 429);
  rapidjson::Document status = ParseOrDie(refused->body);
  EXPECT_EQ(Str(status, "reason"), "TooManyRequests");
  EXPECT_EQ(Str(status, "message"),
            "Cannot evict pod as it would violate the pod's disruption budget.");
  EXPECT_EQ(Str(status["details"]["causes"][0], "reason"), "DisruptionBudget");
  EXPECT_NE(server_->GetObject(Resource::kPods, "team", "llm-0"), "");

  ASSERT_OK(server_->MergePatch(Resource::kPodDisruptionBudgets, "team", "llm",
                                R"({"status":{"disruptionsAllowed":1}})"));
  httplib::Result evicted = client->Post(path, EvictionJson("llm-0"), "application/json");
  ASSERT_TRUE(evicted);
  EXPECT_EQ(evicted->status, 201) << evicted->body;
  EXPECT_EQ(Str(ParseOrDie(evicted->body), "status"), "Success");
  EXPECT_EQ(server_->GetObject(Resource::kPods, "team", "llm-0"), "");
  EXPECT_EQ(DisruptionsAllowed(*server_), 0);

  httplib::Result gone = client->Post(path, EvictionJson("llm-0"), "application/json");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 404);
  httplib::Result mismatch = client->Post(path, EvictionJson("other"), "application/json");
  ASSERT_TRUE(mismatch);
  EXPECT_EQ(mismatch->status, 400);
}

TEST_F(FakeApiServerTest, EvictionWithoutBudgetStatusCountsReadyPodsAgainstMinAvailable) {
  ASSERT_OK(server_->AddPod(ReadyPod("llm-0")));
  ASSERT_OK(server_->AddPod(ReadyPod("llm-1")));
  ASSERT_OK(server_->Load(R"({"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{)"
                          R"("name":"llm","namespace":"team"},"spec":{"minAvailable":1,)"
                          R"("selector":{"matchLabels":{"app":"llm"}}}})"));
  auto client = MakeClient(*server_);
  httplib::Result first = client->Post("/api/v1/namespaces/team/pods/llm-0/eviction",
                                       EvictionJson("llm-0"), "application/json");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 201);
  httplib::Result second = client->Post("/api/v1/namespaces/team/pods/llm-1/eviction",
                                        EvictionJson("llm-1"), "application/json");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 429);
  EXPECT_NE(server_->GetObject(Resource::kPods, "team", "llm-1"), "");
}

TEST_F(FakeApiServerTest, ServesConfigMapsReplicaSetsAndBudgets) {
  ASSERT_OK(server_->Load(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"mig",)"
                          R"("namespace":"gpu-operator"},"data":{"config.yaml":"version: v1"}})"));
  ASSERT_OK(server_->Load(R"({"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{)"
                          R"("name":"llm","namespace":"team"},"spec":{"replicas":3}})"));
  auto client = MakeClient(*server_);
  httplib::Result cm = client->Get("/api/v1/namespaces/gpu-operator/configmaps/mig");
  ASSERT_TRUE(cm);
  EXPECT_EQ(cm->status, 200);
  EXPECT_EQ(Str(ParseOrDie(cm->body)["data"], "config.yaml"), "version: v1");
  httplib::Result rs = client->Get("/apis/apps/v1/namespaces/team/replicasets/llm");
  ASSERT_TRUE(rs);
  EXPECT_EQ(rs->status, 200);
  rapidjson::Document set = ParseOrDie(rs->body);
  EXPECT_EQ(Str(set, "apiVersion"), "apps/v1");
  EXPECT_EQ(set["spec"]["replicas"].GetInt(), 3);
  httplib::Result none = client->Get("/apis/policy/v1/namespaces/team/poddisruptionbudgets");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 200);
  EXPECT_EQ(Str(ParseOrDie(none->body), "kind"), "PodDisruptionBudgetList");
  httplib::Result sts = client->Get("/apis/apps/v1/namespaces/team/statefulsets/nope");
  ASSERT_TRUE(sts);
  EXPECT_EQ(sts->status, 404);
}

}  // namespace
}  // namespace testing_support::apiserver_test
