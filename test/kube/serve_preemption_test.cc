// Preemption end to end: the real binary live against the kube-apiserver emulation, driven by a
// stand-in for kube-scheduler's preemption (its in-tree view: a node whose 3g.40gb is taken is
// a candidate, with every lower-priority pod holding it as a victim; the extender's preempt
// verb then keeps, changes or drops each node; the victims of the first node left are evicted).
// The situation: tenant acme holds its quota of one 3g.40gb on node-a; bank holds node-b's only
// 3g.40gb at priority 10; acme creates a second 3g.40gb pod at priority 1000.
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/kube/live_test_util.h"
#include "test/support/fake_apiserver.h"
#include "test/support/serve_process.h"
#include "test/support/test_inputs.h"

namespace serve_preemption_test {
namespace {

using namespace std::chrono_literals;
using testing_support::FakeApiServer;
using testing_support::ParseOrDie;
using testing_support::Resource;
using testing_support::ServeProcess;
using testing_support::TempDir;

std::string MigNode(const std::string& name) {
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")", name,
      R"(","labels":{"gpu-tenancy.io/pool":"gpu-mig","nvidia.com/gpu.product":)"
      R"("NVIDIA-H100-80GB-HBM3","nvidia.com/mig.strategy":"mixed",)"
      R"("nvidia.com/mig.config.state":"success"}},"status":{"allocatable":{"cpu":"31",)"
      R"("nvidia.com/mig-3g.40gb":"1"}}})");
}

// The pod as the API server and ExtenderArgs carry it.
std::string PodObject(const std::string& ns, const std::string& name, int priority,
                      const std::string& node) {
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", name, R"(","namespace":")", ns,
      R"(","uid":"uid-)", ns, "-", name, R"("},"spec":{)",
      node.empty() ? "" : absl::StrCat(R"("nodeName":")", node, R"(",)"), R"("priority":)",
      priority,
      R"(,"containers":[{"name":"main","image":"x","resources":{"limits":{)"
      R"("nvidia.com/mig-3g.40gb":"1"},"requests":{"nvidia.com/mig-3g.40gb":"1"}}}]},)"
      R"("status":{"phase":")",
      node.empty() ? "Pending" : "Running", R"("}})");
}

struct BoundPod {
  std::string name;
  int priority = 0;
};

class ServePreemptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start({});
    ASSERT_TRUE(api.ok()) << api.status();
    api_ = *std::move(api);
    for (const char* ns : {"acme", "bank", "dev"}) ASSERT_TRUE(api_->AddNamespace(ns).ok());
    for (const char* n : {"node-a", "node-b"}) ASSERT_TRUE(api_->AddNode(MigNode(n)).ok());
  }

  void StartServe() {
    std::ofstream(dir_.File("kubeconfig")) << api_->Kubeconfig("    token: test-token");
    absl::StatusOr<std::unique_ptr<ServeProcess>> s =
        ServeProcess::Start({"--kubeconfig", dir_.File("kubeconfig"), "--policy",
                             std::string(GT_TESTDATA_DIR) + "/preemption/policy.yaml",
                             "--leader-elect", "false", "--audit-log", dir_.File("audit.log")},
                            dir_.File("serve.log"));
    ASSERT_TRUE(s.ok()) << s.status();
    serve_ = *std::move(s);
    ASSERT_TRUE(kube_test::WaitFor([&] { return serve_->Get("/readyz").status == 200; }))
        << testing_support::ReadFile(dir_.File("serve.log"));
  }

  // Pods bound to `node`, from the API server.
  std::vector<BoundPod> BoundTo(const std::string& node) {
    std::vector<BoundPod> out;
    for (const std::string& json : api_->ListObjects(Resource::kPods)) {
      rapidjson::Document pod = ParseOrDie(json);
      if (common::StringOr(pod["spec"], "nodeName") != node) continue;
      out.push_back({std::string(common::StringOr(pod["metadata"], "namespace")) + "/" +
                         std::string(common::StringOr(pod["metadata"], "name")),
                     pod["spec"].HasMember("priority") ? pod["spec"]["priority"].GetInt() : 0});
    }
    return out;
  }

  // One scheduling cycle of kube-scheduler for `pod` (a pending pod's object): filter, and
  // bind to the first node kept; else preemption over the nodes the in-tree fit rejects (a
  // full node) or the extender left in FailedNodes, with the in-tree victims, through the
  // preempt verb; the victims of the first node it keeps are deleted. Returns what happened.
  std::string ScheduleOnce(const std::string& pod, int priority) {
    rapidjson::Document doc = ParseOrDie(pod);
    const std::string ns(common::StringOr(doc["metadata"], "namespace"));
    const std::string name(common::StringOr(doc["metadata"], "name"));
    std::vector<std::string> fits_in_tree;
    std::map<std::string, std::vector<BoundPod>> candidates;
    for (const char* node : {"node-a", "node-b"}) {
      std::vector<BoundPod> on = BoundTo(node);
      if (on.empty()) {
        fits_in_tree.push_back(node);
        continue;
      }
      std::vector<BoundPod> lower;
      for (const BoundPod& p : on) {
        if (p.priority < priority) lower.push_back(p);
      }
      if (!lower.empty()) candidates[node] = lower;
    }
    if (!fits_in_tree.empty()) {
      std::string names;
      for (const std::string& n : fits_in_tree)
        absl::StrAppend(&names, names.empty() ? "" : ",", "\"", n, "\"");
      ServeProcess::Response f = serve_->Post(
          "/extender/filter",
          absl::StrCat(R"({"Pod":)", pod, R"(,"Nodes":null,"NodeNames":[)", names, "]}"));
      rapidjson::Document reply = ParseOrDie(f.body);
      if (reply["NodeNames"].Size() > 0) {
        std::string node = reply["NodeNames"][0].GetString();
        ServeProcess::Response b = serve_->Post(
            "/extender/bind",
            absl::StrCat(R"({"PodName":")", name, R"(","PodNamespace":")", ns,
                         R"(","PodUID":"uid-)", ns, "-", name, R"(","Node":")", node, R"("})"));
        std::string error(common::StringOr(ParseOrDie(b.body), "Error"));
        return error.empty() ? "bound to " + node : "bind failed: " + error;
      }
      for (auto it = reply["FailedNodes"].MemberBegin(); it != reply["FailedNodes"].MemberEnd();
           ++it) {
        candidates[it->name.GetString()];  // no in-tree victims: the extender's own rejection
      }
    }
    if (candidates.empty()) return "pending: preemption not helpful";
    std::string victims;
    for (const auto& [node, pods] : candidates) {
      std::string uids;
      for (const BoundPod& p : pods) {
        std::string uid =
            "uid-" + p.name.substr(0, p.name.find('/')) + "-" + p.name.substr(p.name.find('/') + 1);
        absl::StrAppend(&uids, uids.empty() ? "" : ",", R"({"UID":")", uid, R"("})");
      }
      absl::StrAppend(&victims, victims.empty() ? "" : ",", "\"", node, R"(":{"Pods":[)", uids,
                      R"(],"NumPDBViolations":0})");
    }
    ServeProcess::Response r = serve_->Post(
        "/extender/preempt",
        absl::StrCat(R"({"Pod":)", pod, R"(,"NodeNameToVictims":null,"NodeNameToMetaVictims":{)",
                     victims, "}}"));
    rapidjson::Document answer = ParseOrDie(r.body);
    const rapidjson::Value& nodes = answer["NodeNameToMetaVictims"];
    if (nodes.MemberCount() == 0) return "pending: the extender dropped every candidate";
    std::string node = nodes.MemberBegin()->name.GetString();
    for (const BoundPod& p : BoundTo(node)) {
      for (const auto& v : nodes.MemberBegin()->value["Pods"].GetArray()) {
        std::string uid = v["UID"].GetString();
        if (uid == "uid-" + p.name.substr(0, p.name.find('/')) + "-" +
                       p.name.substr(p.name.find('/') + 1)) {
          EXPECT_TRUE(api_->DeletePod(p.name.substr(0, p.name.find('/')),
                                      p.name.substr(p.name.find('/') + 1))
                          .ok());
        }
      }
    }
    return "preempted on " + node;
  }

  TempDir dir_;
  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<ServeProcess> serve_;
};

TEST_F(ServePreemptionTest, BanksPodIsUntouchedAndAcmeStaysPendingOnItsQuota) {
  ASSERT_TRUE(api_->AddPod(PodObject("acme", "train-old", 2000, "node-a")).ok());
  ASSERT_TRUE(api_->AddPod(PodObject("bank", "risk", 10, "node-b")).ok());
  const std::string urgent = PodObject("acme", "urgent", 1000, "");
  ASSERT_TRUE(api_->AddPod(urgent).ok());
  ASSERT_NO_FATAL_FAILURE(StartServe());

  EXPECT_EQ(ScheduleOnce(urgent, 1000), "pending: the extender dropped every candidate");
  EXPECT_EQ(BoundTo("node-b").size(), 1u);
  EXPECT_EQ(BoundTo("node-b")[0].name, "bank/risk");
  EXPECT_EQ(BoundTo("node-a")[0].name, "acme/train-old");
  // Why, where the operator sees it: the audit line of the dropped node, and the filter.
  EXPECT_NE(
      testing_support::ReadFile(dir_.File("audit.log"))
          .find(R"("reason":"tenant acme quota: nvidia.com/mig-3g.40gb 1 of 1 held, 1 requested")"),
      std::string::npos)
      << testing_support::ReadFile(dir_.File("audit.log"));
}

TEST_F(ServePreemptionTest, AcmePreemptsItsOwnLowerPriorityPodAndNothingElse) {
  ASSERT_TRUE(api_->AddPod(PodObject("acme", "train-old", 500, "node-a")).ok());
  ASSERT_TRUE(api_->AddPod(PodObject("bank", "risk", 10, "node-b")).ok());
  const std::string urgent = PodObject("acme", "urgent", 1000, "");
  ASSERT_TRUE(api_->AddPod(urgent).ok());
  ASSERT_NO_FATAL_FAILURE(StartServe());

  EXPECT_EQ(ScheduleOnce(urgent, 1000), "preempted on node-a");
  EXPECT_TRUE(BoundTo("node-a").empty());
  // The watch sees the eviction; the next cycle binds where acme's own pod was.
  std::string outcome;
  ASSERT_TRUE(kube_test::WaitFor([&] {
    outcome = ScheduleOnce(urgent, 1000);
    return outcome == "bound to node-a";
  })) << outcome;
  ASSERT_EQ(BoundTo("node-b").size(), 1u);
  EXPECT_EQ(BoundTo("node-b")[0].name, "bank/risk");
}

}  // namespace
}  // namespace serve_preemption_test
