// kube::ApiBinder's calls to kube-apiserver, over the in-memory Api: the pod GET when the watch
// cache lacks it (path, UID check, refusals, transport failures), the Binding POST (path, body,
// content type; 201 and 200 bind, 409 and 5xx refuse with the API's message, a transport
// failure is Unavailable) and the Event its Report() posts. binder_test.cc drives the same steps
// against the HTTPS emulation.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "kube/binder.h"
#include "kube/event_recorder.h"
#include "kube/objects.h"
#include "test/support/in_memory_api.h"
#include "wire/k8s_codec.h"

namespace {

using testing_support::InMemoryApi;
using namespace std::chrono_literals;

constexpr char kBinderPolicy[] = R"(
tiers:
  - {name: untrusted, modes: [exclusive, mig]}
tenants:
  - {name: acme, tier: untrusted, namespaces: [team]}
)";
constexpr char kPodPath[] = "/api/v1/namespaces/team/pods/p";
constexpr char kBindingPath[] = "/api/v1/namespaces/team/pods/p/binding";

std::string BinderPodJson(const std::string& uid) {
  return absl::StrCat(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p",)",
                      R"("namespace":"team","uid":")", uid,
                      R"("},"spec":{"containers":[{"name":"main","resources":{"limits":)",
                      R"({"nvidia.com/mig-3g.40gb":"1"}}}]},"status":{"phase":"Pending"}})");
}

wire::BindingArgs BinderArgs(const std::string& uid = "uid-p") {
  wire::BindingArgs a;
  a.pod_name = "p";
  a.pod_namespace = "team";
  a.pod_uid = uid;
  a.node = "gpu-7";
  return a;
}

class ApiBinderCallsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<topology::Policy> policy = common::LoadPolicy(kBinderPolicy);
    ASSERT_TRUE(policy.ok()) << policy.status();
    state_.SetPolicy(std::make_shared<const topology::Policy>(*std::move(policy)));
  }
  InMemoryApi api_;
  kube::ClusterState state_{common::BuiltinCatalog()};
};

TEST_F(ApiBinderCallsTest, APodTheCacheLacksIsOneGetWithItsUidChecked) {
  kube::ApiBinder binder(api_, state_, 30s);
  api_.SetObject(kPodPath, BinderPodJson("uid-p"));
  struct Row {
    const char* name;
    std::string uid;
    int status;  // 0: the store answers
    bool transport_failure;
    absl::StatusCode code;
    std::string message;
  };
  const Row rows[] = {
      {"found", "uid-p", 0, false, absl::StatusCode::kOk, ""},
      {"another pod under the name", "uid-old", 0, false, absl::StatusCode::kNotFound,
       "pod team/p has UID uid-p, not uid-old"},
      {"refused", "uid-p", 500, false, absl::StatusCode::kNotFound,
       "pod team/p: HTTP 500: scripted HTTP 500"},
      {"unreachable", "uid-p", 0, true, absl::StatusCode::kUnavailable, "connection refused"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    api_.ClearCalls();
    if (row.status) api_.Reply("GET", kPodPath, row.status);
    if (row.transport_failure) api_.Fail("GET", kPodPath);
    absl::StatusOr<topology::PodFacts> pod = binder.LookupPod(BinderArgs(row.uid));
    ASSERT_EQ(api_.Calls().size(), 1u);
    EXPECT_EQ(api_.Calls()[0].method, "GET");
    EXPECT_EQ(api_.Calls()[0].path, kPodPath);
    EXPECT_EQ(pod.status().code(), row.code) << pod.status();
    if (pod.ok()) {
      EXPECT_EQ(pod->name, "p");
      EXPECT_EQ(pod->namespace_name, "team");
      continue;
    }
    EXPECT_EQ(pod.status().message(), row.message);
  }
}

TEST_F(ApiBinderCallsTest, TheBindingPostCarriesTheBindingAndEachReplyHasItsOutcome) {
  kube::ApiBinder binder(api_, state_, 30s);
  struct Row {
    const char* name;
    int status;
    bool transport_failure;
    absl::StatusCode code;
    std::string message;
  };
  const Row rows[] = {
      {"created", 201, false, absl::StatusCode::kOk, ""},
      {"ok", 200, false, absl::StatusCode::kOk, ""},
      {"already bound", 409, false, absl::StatusCode::kFailedPrecondition,
       "Binding refused: HTTP 409: scripted HTTP 409"},
      {"server error", 503, false, absl::StatusCode::kFailedPrecondition,
       "Binding refused: HTTP 503: scripted HTTP 503"},
      {"unreachable", 0, true, absl::StatusCode::kUnavailable, "connection refused"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    api_.ClearCalls();
    if (row.status) api_.Reply("POST", kBindingPath, row.status, row.status < 300 ? "{}" : "");
    if (row.transport_failure) api_.Fail("POST", kBindingPath);
    absl::Status s = binder.PostBinding(BinderArgs(), {{"gpu-tenancy.io/tenant", "acme"}});
    EXPECT_EQ(s.code(), row.code) << s;
    if (!s.ok()) {
      EXPECT_EQ(s.message(), row.message);
    }

    std::vector<InMemoryApi::Call> calls = api_.Calls();
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].method, "POST");
    EXPECT_EQ(calls[0].path, kBindingPath);
    EXPECT_EQ(calls[0].content_type, "application/json");
    EXPECT_EQ(calls[0].body, kube::BindingJson(BinderArgs(), {{"gpu-tenancy.io/tenant", "acme"}}));
    absl::StatusOr<rapidjson::Document> body = common::ParseJson(calls[0].body);
    ASSERT_TRUE(body.ok()) << calls[0].body;
    EXPECT_EQ(common::StringOr(*body, "kind"), "Binding");
    const common::JsonValue* target = common::FindMember(*body, "target");
    ASSERT_NE(target, nullptr);
    EXPECT_EQ(common::StringOr(*target, "name"), "gpu-7");
  }
}

TEST_F(ApiBinderCallsTest, ReportPostsOneEventToThePodsNamespace) {
  {
    kube::EventRecorder events(api_);
    kube::ApiBinder binder(api_, state_, 30s, &events);
    topology::Placement placement{"gpu-7", "acme", "untrusted", "mig-a", 1, "3g.40gb"};
    binder.Report(BinderArgs(), &placement, "");
    binder.Report(BinderArgs(), nullptr, "node gpu-7 is full");
  }  // the recorder posts what is queued before it goes
  std::vector<InMemoryApi::Call> posted = api_.Calls("POST", "/api/v1/namespaces/team/events");
  ASSERT_EQ(posted.size(), 2u);
  const char* expected[][3] = {
      {"Normal", "GpuTenancyBound",
       "Bound to gpu-7 for tenant acme (tier untrusted) in pool mig-a, MIG 3g.40gb, GPU 1"},
      {"Warning", "GpuTenancyBindFailed", "node gpu-7 is full"}};
  for (size_t i = 0; i < posted.size(); ++i) {
    SCOPED_TRACE(i);
    absl::StatusOr<rapidjson::Document> event = common::ParseJson(posted[i].body);
    ASSERT_TRUE(event.ok()) << posted[i].body;
    EXPECT_EQ(common::StringOr(*event, "type"), expected[i][0]);
    EXPECT_EQ(common::StringOr(*event, "reason"), expected[i][1]);
    EXPECT_EQ(common::StringOr(*event, "message"), expected[i][2]);
    const common::JsonValue* involved = common::FindMember(*event, "involvedObject");
    ASSERT_NE(involved, nullptr);
    EXPECT_EQ(common::StringOr(*involved, "uid"), "uid-p");
  }
}

}  // namespace
