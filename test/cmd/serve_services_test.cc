// The parts `serve` is assembled from, each alone: the extender and webhook routes over a fixed
// cluster (their replies, counters and audit lines), and the cluster service, fixed (policy
// reloads republish) and live against an in-memory API server (leader election on or off, the
// Lease where the options say, and readiness that waits for the lease).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "cmd/inputs.h"
#include "cmd/serve_cluster.h"
#include "cmd/serve_extender.h"
#include "cmd/serve_webhook.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "common/mutex.h"
#include "gtest/gtest.h"
#include "test/support/in_memory_api.h"
#include "test/support/test_inputs.h"

namespace cmd {
namespace {

// An untrusted tenant's (acme's) MIG pod, names only, over the demo's nodes.
constexpr char kAcmeMigFilter[] =
    R"({"Pod":{"metadata":{"name":"llm-b","namespace":"acme","uid":"u-1"},)"
    R"("spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/mig-3g.40gb":"1"},)"
    R"("requests":{"nvidia.com/mig-3g.40gb":"1"}}}]},"status":{"phase":"Pending"}},)"
    R"("Nodes":null,"NodeNames":["mig-a","mig-b","mig-c","mig-1g","ts-a","excl-a","cpu-a"]})";

// acme asking for a time-slicing replica, which its tier does not allow.
std::string AcmeSharedReview() {
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{)"
         R"("uid":"r-1","kind":{"group":"","version":"v1","kind":"Pod"},)"
         R"("resource":{"group":"","version":"v1","resource":"pods"},)"
         R"("operation":"CREATE","namespace":"acme","name":"shared",)"
         R"("userInfo":{"username":"alice"},)"
         R"("object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"shared",)"
         R"("namespace":"acme"},"spec":{"containers":[{"name":"c","resources":{)"
         R"("limits":{"nvidia.com/gpu.shared":"1"}}}]}}}})";
}

std::unique_ptr<ServeCluster> DemoCluster() {
  InputOptions demo;
  demo.demo = true;
  absl::StatusOr<topology::ClusterData> data = ReadCluster(demo);
  absl::StatusOr<topology::Policy> policy = ReadPolicy(demo);
  EXPECT_TRUE(data.ok() && policy.ok());
  return ServeCluster::Fixed(*data, std::make_shared<const topology::Policy>(*policy));
}

std::string Collected(const std::function<void(common::MetricsText&)>& collect) {
  std::string text;
  common::MetricsText out(text);
  collect(out);
  return text;
}

const server::PostRoute& Route(const std::vector<server::PostRoute>& routes,
                               const std::string& path) {
  for (const server::PostRoute& r : routes) {
    if (r.path == path) return r;
  }
  ADD_FAILURE() << "no route " << path;
  return routes.front();
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(ExtenderServiceTest, FilterKeepsWhatThePolicyAllowsAndCountsTheRest) {
  std::unique_ptr<ServeCluster> cluster = DemoCluster();
  ExtenderService extender(cluster->state(), cluster->binder(), nullptr);
  std::vector<server::PostRoute> routes = extender.Routes();
  ASSERT_EQ(routes.size(), 4u);
  const server::PostRoute& filter = Route(routes, "/extender/filter");
  EXPECT_FALSE(filter.waits_on_io);  // pure: runs on the connection's loop
  server::Reply reply = filter.handler(kAcmeMigFilter);
  ASSERT_EQ(reply.status, 200) << reply.body;
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(reply.body);
  ASSERT_TRUE(doc.ok()) << reply.body;
  const rapidjson::Value& kept = (*doc)["NodeNames"];
  ASSERT_EQ(kept.Size(), 1u) << reply.body;
  EXPECT_STREQ(kept[0].GetString(), "mig-a");
  const size_t failed =
      (*doc)["FailedNodes"].MemberCount() + (*doc)["FailedAndUnresolvableNodes"].MemberCount();
  EXPECT_EQ(failed, 6u) << reply.body;
  // Every rejected node is counted once, under its verdict and rule.
  std::string metrics = Collected([&](common::MetricsText& out) { extender.Collect(out); });
  double counted = 0;
  for (absl::string_view line : absl::StrSplit(metrics, '\n')) {
    if (!absl::StartsWith(line, "gpu_tenancy_filter_rejections_total{")) continue;
    double n = 0;
    ASSERT_TRUE(absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &n)) << line;
    counted += n;
  }
  EXPECT_EQ(counted, static_cast<double>(failed)) << metrics;
  EXPECT_TRUE(absl::StrContains(metrics, "gpu_tenancy_pool_nodes")) << metrics;
}

TEST(ExtenderServiceTest, BindWithoutALiveClusterSaysSo) {
  std::unique_ptr<ServeCluster> cluster = DemoCluster();
  ASSERT_EQ(cluster->binder(), nullptr);
  ExtenderService extender(cluster->state(), nullptr, nullptr);
  std::vector<server::PostRoute> routes = extender.Routes();
  const server::PostRoute& bind = Route(routes, "/extender/bind");
  EXPECT_TRUE(bind.waits_on_io);
  server::Reply reply =
      bind.handler(R"({"PodName":"p","PodNamespace":"acme","PodUID":"u","Node":"mig-a"})");
  EXPECT_EQ(reply.status, 200);
  EXPECT_TRUE(absl::StrContains(reply.body, "bind needs a live cluster")) << reply.body;
}

TEST(WebhookServiceTest, ADenialIsCountedAndAudited) {
  std::unique_ptr<ServeCluster> cluster = DemoCluster();
  const std::string audit_path = ::testing::TempDir() + "/serve_services_audit.jsonl";
  std::remove(audit_path.c_str());
  absl::StatusOr<std::unique_ptr<common::AuditLog>> audit = common::AuditLog::Open(audit_path);
  ASSERT_TRUE(audit.ok()) << audit.status();
  WebhookService webhooks(cluster->state(), nullptr, audit->get(), [] { return int64_t{100}; });
  std::vector<server::PostRoute> routes = webhooks.Routes();
  ASSERT_EQ(routes.size(), 2u);
  const server::PostRoute& validate = Route(routes, "/webhook/validate");
  EXPECT_TRUE(validate.waits_on_io);  // an audit line may stall on the disk
  server::Reply reply = validate.handler(AcmeSharedReview());
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_TRUE(absl::StrContains(reply.body, R"("allowed":false)")) << reply.body;
  std::string metrics = Collected([&](common::MetricsText& out) { webhooks.Collect(out); });
  EXPECT_TRUE(absl::StrContains(
      metrics, R"(gpu_tenancy_admission_reviews_total{webhook="validate",allowed="false",)"))
      << metrics;
  std::string line = ReadAll(audit_path);
  EXPECT_TRUE(absl::StrContains(line, R"("tenant":"acme")")) << line;
  EXPECT_TRUE(absl::StrContains(line, R"("pod":"shared")")) << line;
  EXPECT_TRUE(absl::StrContains(line, R"("rule":"tier-shared")")) << line;
}

TEST(WebhookServiceTest, BeforeTheClusterIsKnownItFailsClosed) {
  kube::ClusterState unsynced(common::BuiltinCatalog());
  WebhookService webhooks(unsynced, nullptr, nullptr, [] { return int64_t{0}; });
  std::vector<server::PostRoute> routes = webhooks.Routes();
  EXPECT_FALSE(routes[0].waits_on_io);  // no audit, no records: pure
  server::Reply reply = routes[0].handler(AcmeSharedReview());
  EXPECT_EQ(reply.status, 503);
  EXPECT_TRUE(absl::StrContains(reply.body, "cache not synced")) << reply.body;
}

// kube-apiserver's review of a ResourceClaim CREATE asking one 1g.10gb MIG device.
std::string MigClaimReview(const std::string& ns, const std::string& name) {
  return absl::StrCat(
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{)", R"("uid":"u-)",
      name, R"(","kind":{"group":"resource.k8s.io","version":"v1",)",
      R"("kind":"ResourceClaim"},"resource":{"group":"resource.k8s.io","version":"v1",)",
      R"("resource":"resourceclaims"},"operation":"CREATE","namespace":")", ns, R"(",)",
      R"("name":")", name, R"(","userInfo":{"username":"alice"},"object":{)",
      R"("apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":")", name,
      R"(","namespace":")", ns, R"("},"spec":{"devices":{"requests":[{"name":"mig",)",
      R"("exactly":{"deviceClassName":"mig.nvidia.com","selectors":[{"cel":{"expression":)",
      R"("device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}],)",
      R"("allocationMode":"ExactCount","count":1}}]}}}}})");
}

TEST(WebhookServiceTest, WithUsageRecordsOnlyAClaimThatNeedsItsRecordLeavesTheLoop) {
  InputOptions inputs;
  inputs.cluster_file = absl::StrCat(GT_TESTDATA_DIR, "/dra/cluster-with-claims.json");
  absl::StatusOr<topology::ClusterData> data = ReadCluster(inputs);
  ASSERT_TRUE(data.ok()) << data.status();
  // acme's quota leaves room for a budget; research has none.
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(
      "tiers: [{name: open, modes: [exclusive, mig]}]\n"
      "tenants:\n"
      "  - {name: acme, tier: open, namespaces: [acme], quota: {migInstances: {1g.10gb: 100}}}\n"
      "  - {name: research, tier: open, namespaces: [research]}\n");
  ASSERT_TRUE(policy.ok()) << policy.status();
  std::unique_ptr<ServeCluster> cluster =
      ServeCluster::Fixed(*data, std::make_shared<const topology::Policy>(*policy));
  // Written from the review's thread and from the budget refill thread.
  std::atomic<int> updates = 0;
  common::Mutex record_mu;
  webhook::RecordData record;
  webhook::RecordUpdate records = [&](const std::string&, const auto& decide, bool) {
    common::MutexLock lock(&record_mu);
    std::optional<webhook::RecordData> next = decide(record);
    if (next) record = *next;
    ++updates;
    return absl::OkStatus();
  };
  WebhookService webhooks(cluster->state(), records, nullptr, [] { return int64_t{0}; });
  std::vector<server::PostRoute> routes = webhooks.Routes();
  auto allowed = [](const std::optional<server::Reply>& reply) {
    return reply && reply->status == 200 && absl::StrContains(reply->body, R"("allowed":true)");
  };
  // Mutation never reserves quota: every review of it runs on the loop.
  const server::PostRoute& mutate = Route(routes, "/webhook/mutate");
  EXPECT_FALSE(mutate.waits_on_io);
  EXPECT_FALSE(mutate.on_loop_first);
  // Validation may write a record, so it is tried on the loop first: every review that needs
  // no record is answered there.
  const server::PostRoute& validate = Route(routes, "/webhook/validate");
  EXPECT_TRUE(validate.waits_on_io);
  ASSERT_TRUE(validate.on_loop_first);
  EXPECT_TRUE(allowed(validate.on_loop_first(MigClaimReview("research", "r-1"))));
  std::optional<server::Reply> unknown = validate.on_loop_first(MigClaimReview("team-a", "t-1"));
  ASSERT_TRUE(unknown);  // no tenant: denied without a record
  EXPECT_TRUE(absl::StrContains(unknown->body, R"("allowed":false)")) << unknown->body;
  EXPECT_TRUE(allowed(validate.on_loop_first(absl::StrReplaceAll(
      testing_support::Testdata("dra/05-mutate-Pod.CREATE.json"), {{"\"team-a\"", "\"acme\""}}))));
  EXPECT_EQ(updates, 0);
  // acme's first claim: no budget yet, so the loop declines and a worker writes the record,
  // which also grants this replica a budget.
  EXPECT_FALSE(validate.on_loop_first(MigClaimReview("acme", "a-1")));
  EXPECT_EQ(updates, 0);
  server::Reply first = validate.handler(MigClaimReview("acme", "a-1"));
  EXPECT_TRUE(allowed(first)) << first.body;
  EXPECT_EQ(updates, 1);
  // The next claims come out of the budget, on the loop, with no write.
  EXPECT_TRUE(allowed(validate.on_loop_first(MigClaimReview("acme", "a-2"))));
  EXPECT_TRUE(allowed(validate.on_loop_first(MigClaimReview("acme", "a-3"))));
  EXPECT_EQ(updates, 1);
  // The budget (min(99 / 4, 128) = 24 claims) is refilled by the service's own thread once
  // more than half of it is spent, off every claim's path. A claim that arrives while that
  // write is under way finds no budget open and goes to a worker, as the server would send it.
  for (int i = 4; i <= 16; ++i) {
    const std::string review = MigClaimReview("acme", absl::StrCat("a-", i));
    std::optional<server::Reply> reply = validate.on_loop_first(review);
    if (!reply) reply = validate.handler(review);
    EXPECT_TRUE(allowed(reply)) << i;
  }
  for (int i = 0; i < 500 && updates < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(updates, 2) << "no refill ahead";
  common::MutexLock lock(&record_mu);
  EXPECT_TRUE(record.count("acme.a-13")) << "the refill writes what the old budget admitted";
}

// A claim for a whole GPU from namespace `ns`.
std::string GpuClaimReview(const std::string& ns) {
  return absl::StrCat(
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{)"
      R"("uid":"c-1","kind":{"group":"resource.k8s.io","version":"v1","kind":"ResourceClaim"},)"
      R"("resource":{"group":"resource.k8s.io","version":"v1","resource":"resourceclaims"},)"
      R"("operation":"CREATE","namespace":")",
      ns,
      R"(","name":"c","userInfo":{"username":"alice"},)"
      R"("object":{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",)"
      R"("metadata":{"name":"c","namespace":")",
      ns,
      R"("},"spec":{"devices":{"requests":[{"name":"gpu",)"
      R"("exactly":{"deviceClassName":"gpu.nvidia.com"}}]}}}}})");
}

// The tenants' claim selectors are worked out once per policy: after a reload, the next claim
// gets the limits of the policy now in force.
TEST(WebhookServiceTest, AClaimGetsTheSelectorsOfThePolicyInForce) {
  std::unique_ptr<ServeCluster> cluster = DemoCluster();
  WebhookService webhooks(cluster->state(), nullptr, nullptr, [] { return int64_t{0}; });
  std::vector<server::PostRoute> routes = webhooks.Routes();
  const server::PostRoute& mutate = Route(routes, "/webhook/mutate");
  auto patch_under = [&](const std::string& memory_cap) {
    absl::StatusOr<topology::Policy> policy = common::LoadPolicy(absl::StrCat(
        "tiers: [{name: gold, modes: [exclusive]}]\n"
        "tenants: [{name: solo, tier: gold, namespaces: [solo], limits: {gpuMemoryPerPod: ",
        memory_cap, "}}]\n"));
    EXPECT_TRUE(policy.ok()) << policy.status();
    if (!policy.ok()) return std::string();
    cluster->SetPolicy(std::make_shared<const topology::Policy>(*policy));
    server::Reply reply = mutate.handler(GpuClaimReview("solo"));
    EXPECT_EQ(reply.status, 200) << reply.body;
    absl::StatusOr<rapidjson::Document> body = common::ParseJson(reply.body);
    EXPECT_TRUE(body.ok()) << reply.body;
    std::string patch;
    if (body.ok()) {
      const rapidjson::Value* response = common::FindMember(*body, "response");
      EXPECT_TRUE(response && absl::Base64Unescape(common::StringOr(*response, "patch"), &patch))
          << reply.body;
    }
    return patch;
  };
  std::string patch = patch_under("20Gi");
  EXPECT_TRUE(absl::StrContains(patch, R"(quantity(\"20480Mi\"))")) << patch;
  patch = patch_under("40Gi");
  EXPECT_TRUE(absl::StrContains(patch, R"(quantity(\"40960Mi\"))")) << patch;
  EXPECT_FALSE(absl::StrContains(patch, "20480Mi")) << patch;
}

TEST(ServeClusterTest, AFixedClusterIsReadyAndRepublishesAReloadedPolicy) {
  std::unique_ptr<ServeCluster> cluster = DemoCluster();
  EXPECT_TRUE(cluster->Synced());
  EXPECT_TRUE(cluster->ExtenderReady());  // nothing to elect
  EXPECT_EQ(cluster->usage_records(), nullptr);
  absl::StatusOr<topology::Policy> one = common::LoadPolicy(
      "tiers: [{name: gold, modes: [exclusive]}]\n"
      "tenants: [{name: solo, tier: gold, namespaces: [solo]}]\n");
  ASSERT_TRUE(one.ok()) << one.status();
  cluster->SetPolicy(std::make_shared<const topology::Policy>(*one));
  std::shared_ptr<const topology::ModelState> now = cluster->state().Current();
  ASSERT_NE(now, nullptr);
  ASSERT_EQ(now->policy->tenants.size(), 1u);
  EXPECT_EQ(now->policy->tenants[0].name, "solo");
  std::string metrics = Collected([&](common::MetricsText& out) { cluster->Collect(out); });
  EXPECT_TRUE(absl::StrContains(metrics, "gpu_tenancy_cache_synced 1")) << metrics;
  EXPECT_TRUE(absl::StrContains(metrics, "gpu_tenancy_leader 1")) << metrics;
}

// Polls `done` for up to five seconds.
bool Eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 500; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

TEST(ServeClusterTest, LiveWithLeaderElectionTakesTheLeaseWhereTheOptionsSay) {
  auto owned = std::make_unique<testing_support::InMemoryApi>();
  testing_support::InMemoryApi& api = *owned;
  ServeOptions options;
  options.lease_namespace = "gpu-system";
  options.identity = "replica-a";
  std::unique_ptr<ServeCluster> cluster = ServeCluster::Live(
      std::move(owned), "default", options,
      std::make_shared<const topology::Policy>(topology::Policy::AllowAll()), nullptr);
  ASSERT_NE(cluster->binder(), nullptr);
  ASSERT_NE(cluster->usage_records(), nullptr);
  cluster->Start();
  const std::string lease =
      "/apis/coordination.k8s.io/v1/namespaces/gpu-system/leases/gpu-tenancy-extender";
  ASSERT_TRUE(Eventually([&] { return api.Object(lease).has_value(); }));
  EXPECT_TRUE(absl::StrContains(*api.Object(lease), R"("holderIdentity":"replica-a")"));
  // Leading, but the cluster was never listed (the fake has no lists): not ready to bind.
  EXPECT_FALSE(cluster->Synced());
  EXPECT_FALSE(cluster->ExtenderReady());
  cluster->Stop();
  // A stopping leader hands the lease back at once.
  EXPECT_FALSE(api.Calls("PUT", lease).empty());
}

TEST(ServeClusterTest, LiveWithoutLeaderElectionNeverTouchesALease) {
  auto owned = std::make_unique<testing_support::InMemoryApi>();
  testing_support::InMemoryApi& api = *owned;
  ServeOptions options;
  options.leader_elect = false;
  std::unique_ptr<ServeCluster> cluster = ServeCluster::Live(
      std::move(owned), "default", options,
      std::make_shared<const topology::Policy>(topology::Policy::AllowAll()), nullptr);
  cluster->Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  cluster->Stop();
  EXPECT_TRUE(api.Calls("GET", "/apis/coordination.k8s.io").empty());
  EXPECT_TRUE(api.Calls("POST", "/apis/coordination.k8s.io").empty());
  std::string metrics = Collected([&](common::MetricsText& out) { cluster->Collect(out); });
  EXPECT_TRUE(absl::StrContains(metrics, "gpu_tenancy_leader 1")) << metrics;
  EXPECT_TRUE(absl::StrContains(metrics, "gpu_tenancy_cache_synced 0")) << metrics;
}

}  // namespace
}  // namespace cmd
