// `gpu-tenancy serve --kubeconfig FILE` end to end: the real binary lists and watches the
// kube-apiserver emulation over HTTPS, reports ready once synced, filters from live state, binds
// through the Binding API, and sees capacity come back when a pod is deleted.
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/fake_apiserver.h"
#include "test/support/serve_process.h"

namespace {

using namespace std::chrono_literals;
using testing_support::FakeApiServer;
using testing_support::ParseOrDie;
using testing_support::PromtoolProblems;
using testing_support::Resource;
using testing_support::SampleValue;
using testing_support::ServeProcess;
using testing_support::TempDir;

template <typename Pred>
bool WaitFor(Pred done, std::chrono::milliseconds limit = 10s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string MigNode(const std::string& name, int slices) {
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")", name,
      R"(","labels":{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3","nvidia.com/mig.strategy":"mixed",)"
      R"("nvidia.com/mig.config.state":"success"}},"status":{"allocatable":{"cpu":"31",)"
      R"("nvidia.com/mig-3g.40gb":")",
      slices, R"(","nvidia.com/mig-1g.10gb":"0"}}})");
}

constexpr char kCpuNode[] =
    R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"cpu-1"},"status":{"allocatable":{"cpu":"31"}}})";

std::string PodJson(const std::string& name) {
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", name,
      R"(","namespace":"acme","uid":"uid-)", name,
      R"("},"spec":{"containers":[{"name":"main","image":"x","resources":{"limits":{"nvidia.com/mig-3g.40gb":"1"},)"
      R"("requests":{"nvidia.com/mig-3g.40gb":"1"}}}]},"status":{"phase":"Pending"}})");
}

std::string FilterRequest(const std::string& name) {
  return absl::StrCat(
      R"({"Pod":{"metadata":{"name":")", name, R"(","namespace":"acme","uid":"uid-)", name,
      R"("},"spec":{"containers":[{"name":"main","resources":{"limits":{"nvidia.com/mig-3g.40gb":"1"},)"
      R"("requests":{"nvidia.com/mig-3g.40gb":"1"}}}]},"status":{"phase":"Pending"}},)"
      R"("Nodes":null,"NodeNames":["mig-1","cpu-1"]})");
}

struct FilterView {
  int status = 0;
  std::set<std::string> kept;
  std::string failed_mig;  // reason for mig-1 when it failed (either kind)
  std::string error;
};

FilterView Filter(ServeProcess& serve, const std::string& pod) {
  ServeProcess::Response r = serve.Post("/extender/filter", FilterRequest(pod));
  FilterView v;
  v.status = r.status;
  if (r.status != 200) return v;
  rapidjson::Document doc = ParseOrDie(r.body);
  if (const common::JsonValue* names = common::FindNonNull(doc, "NodeNames");
      names && names->IsArray()) {
    for (const auto& n : names->GetArray()) v.kept.insert(n.GetString());
  }
  for (const char* kind : {"FailedNodes", "FailedAndUnresolvableNodes"}) {
    if (const common::JsonValue* failed = common::FindNonNull(doc, kind)) {
      if (v.failed_mig.empty()) v.failed_mig = std::string(common::StringOr(*failed, "mig-1"));
    }
  }
  v.error = std::string(common::StringOr(doc, "Error"));
  return v;
}

std::string BindError(ServeProcess& serve, const std::string& pod, const std::string& node) {
  ServeProcess::Response r =
      serve.Post("/extender/bind",
                 absl::StrCat(R"({"PodName":")", pod, R"(","PodNamespace":"acme","PodUID":"uid-)",
                              pod, R"(","Node":")", node, R"("})"));
  if (r.status != 200) return absl::StrCat("HTTP ", r.status, ": ", r.body);
  return std::string(common::StringOr(ParseOrDie(r.body), "Error"));
}

class ServeLiveTest : public ::testing::Test {
 protected:
  void StartApi(testing_support::FakeApiServerOptions options = {}) {
    absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start(options);
    ASSERT_TRUE(api.ok()) << api.status();
    api_ = *std::move(api);
    ASSERT_TRUE(api_->AddNamespace("acme").ok());
    ASSERT_TRUE(api_->AddNode(MigNode("mig-1", 2)).ok());
    ASSERT_TRUE(api_->AddNode(kCpuNode).ok());
    for (const char* p : {"p1", "p2", "p3"}) ASSERT_TRUE(api_->AddPod(PodJson(p)).ok());
  }
  void StartServe(const std::string& user, const std::vector<std::string>& extra = {}) {
    std::string kubeconfig = dir_.File("kubeconfig");
    std::ofstream(kubeconfig) << api_->Kubeconfig(user);
    std::vector<std::string> args = {
        "--kubeconfig",   kubeconfig,
        "--policy",       std::string(GT_SOURCE_DIR) + "/cmd/demo/policy.yaml",
        "--leader-elect", "false",
        "--resync",       "2s",
        "--assume-ttl",   "10s"};
    args.insert(args.end(), extra.begin(), extra.end());
    absl::StatusOr<std::unique_ptr<ServeProcess>> s =
        ServeProcess::Start(args, dir_.File("serve.log"));
    ASSERT_TRUE(s.ok()) << s.status();
    serve_ = *std::move(s);
  }
  std::string Log() { return ReadWhole(dir_.File("serve.log")); }

  TempDir dir_;
  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<ServeProcess> serve_;
};

TEST_F(ServeLiveTest, SyncsFiltersBindsAndFreesCapacity) {
  StartApi();
  // The pod list fails for a while: the binary must not report ready nor decide meanwhile.
  api_->InjectFailure("GET", "/api/v1/pods", 503, 4);
  StartServe("    token: test-token");
  ServeProcess::Response early = serve_->Get("/readyz");
  FilterView early_filter = Filter(*serve_, "p1");
  bool pods_listed = false;
  for (const testing_support::RequestRecord& r : api_->Requests()) {
    pods_listed |= r.path == "/api/v1/pods" && r.status == 200;
  }
  if (!pods_listed) {
    EXPECT_NE(early.status, 200) << early.body;
    EXPECT_EQ(early_filter.error, "gpu-tenancy: cache not synced");
  }
  ASSERT_TRUE(WaitFor([&] { return serve_->Get("/readyz").status == 200; })) << Log();
  EXPECT_EQ(serve_->Get("/readyz/extender").status, 200);  // no election: always the extender
  EXPECT_TRUE(absl::StrContains(serve_->Get("/metrics").body, "gpu_tenancy_cache_synced 1"));
  EXPECT_TRUE(WaitFor([&] { return api_->CountRequests("GET", "/api/v1/pods", "watch=1") >= 1; }));

  FilterView f = Filter(*serve_, "p1");
  EXPECT_EQ(f.error, "");
  EXPECT_EQ(f.kept, std::set<std::string>{"mig-1"});

  ASSERT_EQ(BindError(*serve_, "p1", "mig-1"), "") << Log();
  rapidjson::Document pod = ParseOrDie(api_->GetObject(Resource::kPods, "acme", "p1"));
  EXPECT_EQ(common::StringOr(*common::FindMember(pod, "spec"), "nodeName"), "mig-1");
  const common::JsonValue* annotations =
      common::FindMember(*common::FindMember(pod, "metadata"), "annotations");
  ASSERT_NE(annotations, nullptr);
  EXPECT_EQ(common::StringOr(*annotations, "gpu-tenancy.io/tenant"), "acme");
  EXPECT_EQ(common::StringOr(*annotations, "gpu-tenancy.io/tier"), "untrusted");
  EXPECT_EQ(common::StringOr(*annotations, "gpu-tenancy.io/mig-profile"), "3g.40gb");
  EXPECT_FALSE(common::StringOr(*annotations, "gpu-tenancy.io/pool").empty());

  ASSERT_EQ(BindError(*serve_, "p2", "mig-1"), "");
  // Both slices are taken: the third pod waits, and a bind for it is refused.
  FilterView full = Filter(*serve_, "p3");
  EXPECT_TRUE(full.kept.empty());
  // p1 and p2 have p3's priority: evicting them is no option.
  EXPECT_EQ(full.failed_mig,
            "nvidia.com/mig-3g.40gb: requested 1, free 0 of 2; no pod here that it may preempt "
            "would free enough");
  EXPECT_NE(BindError(*serve_, "p3", "mig-1"), "");

  // A deleted pod frees its slice for the next filter.
  ASSERT_TRUE(api_->DeletePod("acme", "p1").ok());
  EXPECT_TRUE(
      WaitFor([&] { return Filter(*serve_, "p3").kept == std::set<std::string>{"mig-1"}; }));
  EXPECT_EQ(BindError(*serve_, "p3", "mig-1"), "");
  EXPECT_TRUE(WaitFor([&] {
    int bound_events = 0;
    for (const std::string& e : api_->Events())
      bound_events += absl::StrContains(e, "GpuTenancyBound");
    return bound_events == 3;
  }));
  EXPECT_EQ(serve_->Terminate(), 0);
}

// What an operator reads: per-tenant gauges, the allocation inventory and the audit log, after
// scripted binds and deletes against the kube-apiserver emulation.
TEST_F(ServeLiveTest, TenantMetricsAllocationsAndAuditFollowBindsAndDeletes) {
  StartApi();
  const std::string audit = dir_.File("audit.jsonl");
  StartServe("    token: test-token", {"--audit-log", audit});
  ASSERT_TRUE(WaitFor([&] { return serve_->Get("/readyz").status == 200; })) << Log();
  const std::string held =
      R"(gpu_tenancy_tenant_mig_instances_held{tenant="acme",tier="untrusted",profile="3g.40gb"})";
  const std::string free_slices =
      R"(gpu_tenancy_node_resource_free{node="mig-1",pool="mig",resource="nvidia.com/mig-3g.40gb",kind="mig"})";
  auto metrics = [&] { return serve_->Get("/metrics").body; };
  EXPECT_EQ(SampleValue(metrics(), held), 0);

  ASSERT_EQ(BindError(*serve_, "p1", "mig-1"), "") << Log();
  ASSERT_EQ(BindError(*serve_, "p2", "mig-1"), "");
  EXPECT_NE(BindError(*serve_, "p3", "mig-1"), "");  // both slices taken
  std::string text = metrics();
  EXPECT_EQ(PromtoolProblems(text), "");
  EXPECT_EQ(SampleValue(text, held), 2) << text;
  EXPECT_EQ(SampleValue(text, free_slices), 0) << text;
  EXPECT_EQ(SampleValue(text, R"(gpu_tenancy_tenant_pods{tenant="acme",tier="untrusted"})"), 2);
  EXPECT_EQ(SampleValue(text, R"(gpu_tenancy_binds_total{result="bound"})"), 2);
  EXPECT_EQ(SampleValue(text, "gpu_tenancy_audit_records_total"), 3);

  // The inventory lists exactly the pods the occupancy counts.
  auto acme_pods_on_mig1 = [&] {
    std::set<std::string> uids;
    ServeProcess::Response r = serve_->Get("/debug/allocations");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.content_type, "application/json");
    rapidjson::Document doc = ParseOrDie(r.body);
    for (const auto& t : common::FindMember(doc, "tenants")->GetArray()) {
      if (common::StringOr(t, "tenant") != "acme") continue;
      EXPECT_EQ(common::StringOr(t, "tier"), "untrusted");
      for (const auto& n : common::FindMember(t, "nodes")->GetArray()) {
        if (common::StringOr(n, "node") != "mig-1") continue;
        for (const auto& p : common::FindMember(n, "pods")->GetArray()) {
          uids.insert(std::string(common::StringOr(p, "uid")));
          EXPECT_EQ(common::FindMember(p, "devices")
                        ->FindMember("nvidia.com/mig-3g.40gb")
                        ->value.GetInt(),
                    1);
        }
      }
    }
    return uids;
  };
  EXPECT_EQ(acme_pods_on_mig1(), (std::set<std::string>{"uid-p1", "uid-p2"}));

  // A deleted pod leaves the gauges, the free count and the inventory.
  ASSERT_TRUE(api_->DeletePod("acme", "p1").ok());
  EXPECT_TRUE(WaitFor([&] { return SampleValue(metrics(), held) == 1; })) << metrics();
  text = metrics();
  EXPECT_EQ(SampleValue(text, free_slices), 1);
  EXPECT_EQ(PromtoolProblems(text), "");
  EXPECT_EQ(acme_pods_on_mig1(), std::set<std::string>{"uid-p2"});

  // The audit log: one JSON line per bind, placed or failed.
  std::vector<std::string> lines = absl::StrSplit(ReadWhole(audit), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << ReadWhole(audit);
  std::map<std::string, std::string> decisions;
  for (const std::string& line : lines) {
    rapidjson::Document a = ParseOrDie(line);
    EXPECT_EQ(common::StringOr(a, "action"), "bind");
    EXPECT_EQ(common::StringOr(a, "tenant"), "acme");
    EXPECT_EQ(common::StringOr(a, "tier"), "untrusted");
    EXPECT_EQ(common::StringOr(a, "node"), "mig-1");
    EXPECT_FALSE(common::StringOr(a, "time").empty());
    decisions[std::string(common::StringOr(a, "pod"))] =
        std::string(common::StringOr(a, "decision"));
    if (common::StringOr(a, "decision") == "bound") {
      EXPECT_EQ(common::StringOr(a, "migProfile"), "3g.40gb");
      EXPECT_EQ(common::StringOr(a, "uid"), absl::StrCat("uid-", common::StringOr(a, "pod")));
    } else {
      EXPECT_TRUE(absl::StrContains(common::StringOr(a, "reason"), "free 0 of 2")) << line;
    }
  }
  EXPECT_EQ(decisions, (std::map<std::string, std::string>{
                           {"p1", "bound"}, {"p2", "bound"}, {"p3", "failed"}}));
  EXPECT_EQ(serve_->Terminate(), 0);
}

// docs/metrics.md is the metrics reference: every family a live replica exports (after binds,
// a refusal and an audit record) has its row there, so a metric added in code is documented.
TEST_F(ServeLiveTest, EveryExportedMetricFamilyIsInTheMetricsReference) {
  StartApi();
  StartServe("    token: test-token", {"--audit-log", dir_.File("audit.jsonl")});
  ASSERT_TRUE(WaitFor([&] { return serve_->Get("/readyz").status == 200; })) << Log();
  ASSERT_EQ(BindError(*serve_, "p1", "mig-1"), "") << Log();
  ASSERT_EQ(Filter(*serve_, "p2").status, 200);
  const std::string reference = ReadWhole(std::string(GT_SOURCE_DIR) + "/docs/metrics.md");
  ASSERT_FALSE(reference.empty());
  std::vector<std::string> undocumented;
  int families = 0;
  for (absl::string_view line : absl::StrSplit(serve_->Get("/metrics").body, '\n')) {
    if (!absl::ConsumePrefix(&line, "# HELP ")) continue;
    ++families;
    const std::string name(line.substr(0, line.find(' ')));
    if (!absl::StrContains(reference, absl::StrCat("`", name, "`"))) {
      undocumented.push_back(absl::StrCat("# HELP ", line));
    }
  }
  EXPECT_GT(families, 20);
  EXPECT_TRUE(undocumented.empty()) << "docs/metrics.md lacks:\n"
                                    << absl::StrJoin(undocumented, "\n");
  EXPECT_EQ(serve_->Terminate(), 0);
}

// Two replicas with leader election: one serves the extender, the other refuses binds; when the
// leader shuts down it releases the lease and the other takes over.
TEST_F(ServeLiveTest, OnlyTheLeaderBindsAndAShutdownHandsOver) {
  StartApi();
  std::string kubeconfig = dir_.File("kubeconfig");
  std::ofstream(kubeconfig) << api_->Kubeconfig("    token: test-token");
  auto start = [&](const std::string& identity) {
    absl::StatusOr<std::unique_ptr<ServeProcess>> s = ServeProcess::Start(
        {"--kubeconfig", kubeconfig, "--policy",
         std::string(GT_SOURCE_DIR) + "/cmd/demo/policy.yaml", "--leader-elect", "true",
         "--identity", identity, "--lease-namespace", "gpu-system", "--resync", "2s"},
        dir_.File("serve-" + identity + ".log"));
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : nullptr;
  };
  std::unique_ptr<ServeProcess> first = start("replica-1");
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(WaitFor([&] { return first->Get("/readyz/extender").status == 200; }));
  std::unique_ptr<ServeProcess> second = start("replica-2");
  ASSERT_NE(second, nullptr);
  // Ready once nodes, pods, namespaces and the four resource.k8s.io kinds are listed: under
  // ASan, beside another test, that can take longer than the default wait.
  ASSERT_TRUE(WaitFor([&] { return second->Get("/readyz").status == 200; }, 30s));
  EXPECT_NE(second->Get("/readyz/extender").status, 200);
  // A bind that reaches the follower (endpoints lag a change of leader) is refused.
  std::string refused = BindError(*second, "p1", "mig-1");
  EXPECT_TRUE(absl::StrContains(refused, "not the extender leader")) << refused;
  EXPECT_EQ(BindError(*first, "p1", "mig-1"), "");

  EXPECT_EQ(first->Terminate(), 0);  // releases the lease
  EXPECT_TRUE(WaitFor([&] { return second->Get("/readyz/extender").status == 200; }));
  EXPECT_EQ(BindError(*second, "p2", "mig-1"), "");
  // The new leader's cache has the old leader's bind: the node is full now.
  EXPECT_NE(BindError(*second, "p3", "mig-1"), "");
  int on_node = 0;
  for (const std::string& pod : api_->ListObjects(Resource::kPods, "acme")) {
    on_node += absl::StrContains(pod, R"("nodeName":"mig-1")");
  }
  EXPECT_EQ(on_node, 2);
}

TEST_F(ServeLiveTest, ClientCertificateFromKubeconfigData) {
  testing_support::FakeApiServerOptions options;
  options.require_client_cert = true;
  options.tokens = {"not-the-one-we-have"};  // only the certificate can authenticate us
  StartApi(options);
  StartServe(absl::StrCat(
      "    client-certificate-data: ", absl::Base64Escape(ReadWhole(api_->client_cert_file())),
      "\n    client-key-data: ", absl::Base64Escape(ReadWhole(api_->client_key_file()))));
  ASSERT_TRUE(WaitFor([&] { return serve_->Get("/readyz").status == 200; })) << Log();
  EXPECT_EQ(Filter(*serve_, "p1").kept, std::set<std::string>{"mig-1"});
  EXPECT_EQ(BindError(*serve_, "p1", "mig-1"), "");
  bool by_cert = false;
  for (const testing_support::RequestRecord& r : api_->Requests()) {
    EXPECT_NE(r.status, 401) << r.method << " " << r.target;
    by_cert |= r.client_cn == "client" && r.token.empty();
  }
  EXPECT_TRUE(by_cert);
}

}  // namespace
