// Shared pieces of the live-cluster scenario tests: bounded waits, Node and Pod objects shaped
// like kube-apiserver's, and one "replica" (ApiClient + ClusterState + LiveSource + ApiBinder)
// pointed at the in-process API server emulation.
#ifndef GPU_TENANCY_TEST_KUBE_LIVE_TEST_UTIL_H_
#define GPU_TENANCY_TEST_KUBE_LIVE_TEST_UTIL_H_

#include <chrono>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "kube/api_client.h"
#include "kube/binder.h"
#include "kube/cluster_state.h"
#include "kube/config.h"
#include "kube/event_recorder.h"
#include "kube/live_source.h"
#include "test/support/fake_apiserver.h"
#include "test/support/serve_process.h"

namespace kube_test {

using namespace std::chrono_literals;
using testing_support::FakeApiServer;
using testing_support::Resource;

inline constexpr char kMig3g[] = "nvidia.com/mig-3g.40gb";

// Polls `done` every 10 ms until it holds or `limit` passes. Never a fixed long sleep: a
// scenario that converges fast finishes fast, and a loaded machine gets the whole budget.
template <typename Pred>
bool WaitFor(Pred done, std::chrono::milliseconds limit = 8s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

// A mixed-strategy MIG node offering `slices` 3g.40gb instances (and no 1g.10gb).
inline std::string MigNodeJson(const std::string& name, int slices) {
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")", name,
      R"(","labels":{"kubernetes.io/hostname":")", name,
      R"(","nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3","nvidia.com/mig.strategy":"mixed",)"
      R"("nvidia.com/mig.config.state":"success","nvidia.com/gpu.count":"2"}},"spec":{},)"
      R"("status":{"capacity":{"cpu":"32","memory":"128Gi","pods":"110","nvidia.com/mig-3g.40gb":")",
      slices,
      R"(","nvidia.com/mig-1g.10gb":"0"},"allocatable":{"cpu":"31","memory":"120Gi",)"
      R"("pods":"110","nvidia.com/mig-3g.40gb":")",
      slices, R"(","nvidia.com/mig-1g.10gb":"0"}}})");
}

// An API server emulation holding `namespaces` and a MigNodeJson(name, slices) node per name;
// null (with the failure recorded) when any of it cannot be set up.
inline std::unique_ptr<FakeApiServer> StartCluster(const std::vector<std::string>& namespaces,
                                                   const std::vector<std::string>& nodes,
                                                   int slices) {
  absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start({});
  EXPECT_TRUE(api.ok()) << api.status();
  if (!api.ok()) return nullptr;
  for (const std::string& ns : namespaces) {
    absl::Status added = (*api)->AddNamespace(ns);
    EXPECT_TRUE(added.ok()) << added;
    if (!added.ok()) return nullptr;
  }
  for (const std::string& node : nodes) {
    absl::Status added = (*api)->AddNode(MigNodeJson(node, slices));
    EXPECT_TRUE(added.ok()) << added;
    if (!added.ok()) return nullptr;
  }
  return *std::move(api);
}

// A pod asking for `slices` 3g.40gb instances; bound to `node` (Running) or pending.
inline std::string MigPodJson(const std::string& ns, const std::string& name,
                              const std::string& node = "", int slices = 1) {
  std::string resources = absl::StrCat(R"({"nvidia.com/mig-3g.40gb":")", slices, R"("})");
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", name, R"(","namespace":")", ns,
      R"(","uid":"uid-)", ns, "-", name, R"("},"spec":{"schedulerName":"default-scheduler",)",
      node.empty() ? "" : absl::StrCat(R"("nodeName":")", node, R"(",)"),
      R"("containers":[{"name":"main","image":"registry.example/cuda:12","resources":{"limits":)",
      resources, R"(,"requests":)", resources, R"(}}]},"status":{"phase":")",
      node.empty() ? "Pending" : "Running", R"("}})");
}

inline std::string UidOf(const std::string& ns, const std::string& name) {
  return absl::StrCat("uid-", ns, "-", name);
}

inline std::string BindRequest(const std::string& ns, const std::string& name,
                               const std::string& node) {
  return absl::StrCat(R"({"PodName":")", name, R"(","PodNamespace":")", ns, R"(","PodUID":")",
                      UidOf(ns, name), R"(","Node":")", node, R"("})");
}

// The "Error" of an ExtenderBindingResult or ExtenderFilterResult ("" when empty or absent).
inline std::string ErrorOf(const std::string& body) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(body);
  if (!doc.ok()) return absl::StrCat("unparseable reply: ", body);
  return std::string(common::StringOr(*doc, "Error"));
}

// Used instances of `resource` on `node` in the published state; -1 when unknown.
inline int64_t Used(const kube::ClusterState& state, const std::string& node,
                    const std::string& resource = kMig3g) {
  std::shared_ptr<const topology::ModelState> s = state.Current();
  const topology::NodeState* n = s ? s->snapshot->FindNode(node) : nullptr;
  return n ? n->occupancy.Used(resource) : -1;
}

// What the API server says: pods bound to `node` (not finished).
inline int BoundInEmulator(const FakeApiServer& api, const std::string& node) {
  int n = 0;
  for (const std::string& json : api.ListObjects(Resource::kPods)) {
    absl::StatusOr<rapidjson::Document> doc = common::ParseJson(json);
    if (!doc.ok()) continue;
    const common::JsonValue* spec = common::FindMember(*doc, "spec");
    if (spec && common::StringOr(*spec, "nodeName") == node) ++n;
  }
  return n;
}

inline kube::ApiConfig ConfigFor(const FakeApiServer& api,
                                 const std::string& token = "test-token") {
  kube::ApiConfig c;
  c.host = api.host();
  c.port = api.port();
  std::ifstream in(api.ca_file());
  c.ca_pem.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  c.token = token;
  return c;
}

// Short timings so every scenario converges in a few seconds; page size 2 so every list is
// paginated. `clock` times the reflectors' resyncs and backoffs.
inline kube::LiveSourceOptions FastOptions(kube::Clock* clock = &kube::Clock::Real()) {
  kube::LiveSourceOptions o;
  o.reflector.clock = clock;
  o.reflector.page_size = 2;
  o.reflector.resync = 2s;
  o.reflector.backoff_initial = 50ms;
  o.reflector.backoff_max = 500ms;
  o.reflector.read_timeout_seconds = 10;
  o.expiry_poll = 50ms;
  return o;
}

// One gpu-tenancy replica's cluster-facing half, as cmd/serve_cluster.cc wires it.
struct Replica {
  explicit Replica(kube::ApiConfig config, kube::LiveSourceOptions options = FastOptions(),
                   std::chrono::milliseconds assume_ttl = 30s) {
    absl::StatusOr<std::unique_ptr<kube::ApiClient>> c = kube::ApiClient::Create(std::move(config));
    EXPECT_TRUE(c.ok()) << c.status();
    if (c.ok()) client = *std::move(c);
    state = std::make_unique<kube::ClusterState>(common::BuiltinCatalog());
    state->SetPolicy(std::make_shared<const topology::Policy>(topology::Policy::AllowAll()));
    if (!client) return;
    source = std::make_unique<kube::LiveSource>(*client, *state, options);
    events = std::make_unique<kube::EventRecorder>(*client);
    binder = std::make_unique<kube::ApiBinder>(*client, *state, assume_ttl, events.get());
  }
  ~Replica() {
    binder.reset();
    events.reset();
    if (source) source->Stop();
  }
  bool Start() {
    if (!source) return false;
    source->Start();
    // A source marks itself synced just after it publishes, so wait for both.
    return WaitFor([&] { return state->Current() != nullptr && source->synced(); });
  }

  std::unique_ptr<kube::ApiClient> client;
  std::unique_ptr<kube::ClusterState> state;
  std::unique_ptr<kube::LiveSource> source;
  std::unique_ptr<kube::EventRecorder> events;
  std::unique_ptr<kube::ApiBinder> binder;
};

}  // namespace kube_test

#endif  // GPU_TENANCY_TEST_KUBE_LIVE_TEST_UTIL_H_
