// The KubeSchedulerConfigurations here (the second scheduler's and the control-plane example)
// wire the extender the same way, are the output of `gpu-tenancy scheduler-config`, and manage
// every resource name of the GPU catalog.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "common/yaml_json.h"
#include "gtest/gtest.h"
#include "test/deploy/deploy_fixture.h"
#include "test/support/shell.h"

namespace {

using deploy_test::At;
using deploy_test::DeployTest;
using deploy_test::Json;
using deploy_test::kServiceHost;
using deploy_test::ReadFile;
using deploy_test::Render;
using deploy_test::Source;
using deploy_test::Str;
using rapidjson::Value;

// What every KubeSchedulerConfiguration here must say about the extender.
void ExpectExtenderWiring(const Value* config, const std::string& url) {
  EXPECT_EQ(Str(config, "/apiVersion"), "kubescheduler.config.k8s.io/v1");
  EXPECT_EQ(Str(config, "/kind"), "KubeSchedulerConfiguration");
  const Value* extenders = At(config, "/extenders");
  ASSERT_TRUE(extenders && extenders->IsArray() && extenders->Size() == 2);
  // The second entry asks the same service about every preemption (kube-scheduler asks an
  // extender only about pods its managedResources name): preempt only, no managedResources,
  // so CPU-only pods and pods with claims reach the verb and nothing else changes for them.
  const Value* all = &(*extenders)[1];
  const std::vector<std::pair<const char*, std::string>> preempt_only = {
      {"/urlPrefix", absl::StrCat("\"", url, "\"")},
      {"/preemptVerb", "\"preempt\""},
      {"/filterVerb", "<missing>"},
      {"/prioritizeVerb", "<missing>"},
      {"/bindVerb", "<missing>"},
      {"/managedResources", "<missing>"},
      {"/enableHTTPS", "true"},
      {"/nodeCacheCapable", "true"},
      {"/ignorable", "false"},
      {"/tlsConfig/serverName", absl::StrCat("\"", kServiceHost, "\"")},
      {"/tlsConfig/insecure", "<missing>"},
  };
  for (const auto& [pointer, want] : preempt_only) {
    SCOPED_TRACE(absl::StrCat("preempt-only entry ", pointer));
    EXPECT_EQ(Json(At(all, pointer)), want);
  }
  const Value* e = &(*extenders)[0];
  struct Case {
    const char* pointer;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"/urlPrefix", absl::StrCat("\"", url, "\"")},
      {"/filterVerb", "\"filter\""},
      {"/prioritizeVerb", "\"prioritize\""},
      {"/bindVerb", "\"bind\""},
      {"/preemptVerb", "\"preempt\""},
      {"/enableHTTPS", "true"},
      {"/nodeCacheCapable", "true"},
      {"/ignorable", "false"},
      {"/tlsConfig/serverName", absl::StrCat("\"", kServiceHost, "\"")},
      {"/tlsConfig/insecure", "<missing>"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pointer);
    EXPECT_EQ(Json(At(e, c.pointer)), c.want);
  }
  const Value* weight = At(e, "/weight");
  EXPECT_TRUE(weight && weight->IsInt() && weight->GetInt() > 0) << "prioritize needs a weight";
  std::string timeout = Str(e, "/httpTimeout");
  EXPECT_TRUE(absl::EndsWith(timeout, "s") && !timeout.empty()) << timeout;

  // Device resources stay counted by kube-scheduler too; virtual memory resources only by us.
  std::map<std::string, bool> managed;
  const Value* resources = At(e, "/managedResources");
  ASSERT_TRUE(resources && resources->IsArray());
  for (const Value& m : resources->GetArray()) {
    std::string name = Str(&m, "/name");
    EXPECT_EQ(managed.count(name), 0u) << "duplicate " << name;
    const Value* ignored = At(&m, "/ignoredByScheduler");
    ASSERT_TRUE(ignored && ignored->IsBool()) << name;
    managed[name] = ignored->GetBool();
  }
  const std::vector<std::pair<std::string, bool>> wanted = {
      {"nvidia.com/gpu", false},         {"nvidia.com/gpu.shared", false},
      {"nvidia.com/mig-1g.5gb", false},  {"nvidia.com/mig-1g.10gb", false},
      {"nvidia.com/mig-2g.20gb", false}, {"nvidia.com/mig-3g.20gb", false},
      {"nvidia.com/mig-3g.40gb", false}, {"nvidia.com/mig-7g.80gb", false},
      {"nvidia.com/gpu.memory", true},   {"nvidia.com/gpumem", true},
  };
  for (const auto& [name, ignored] : wanted) {
    SCOPED_TRACE(name);
    ASSERT_EQ(managed.count(name), 1u) << "not managed";
    EXPECT_EQ(managed[name], ignored);
  }
  for (const auto& [name, ignored] : managed) {
    // Only virtual resources may be hidden from kube-scheduler's own count.
    if (ignored) {
      EXPECT_TRUE(name == "nvidia.com/gpu.memory" || name == "nvidia.com/gpumem") << name;
    }
    EXPECT_TRUE(absl::StartsWith(name, "nvidia.com/") ||
                absl::StartsWith(name, "deviceclass.resource.kubernetes.io/"))
        << name;
  }
}

// The extender entry without the CA and URL, which differ by design between the configs.
std::string ExtenderSansCa(const Value* config) {
  const Value* e = At(config, "/extenders/0");
  if (!e) return "<missing>";
  rapidjson::Document copy;
  copy.CopyFrom(*e, copy.GetAllocator());
  copy.RemoveMember("urlPrefix");
  if (copy.HasMember("tlsConfig")) {
    copy["tlsConfig"].RemoveMember("caFile");
    copy["tlsConfig"].RemoveMember("caData");
  }
  return common::ToJson(copy);
}

TEST_F(DeployTest, SchedulerConfigsWireTheExtender) {
  const std::string url = "https://gpu-tenancy-extender.gpu-tenancy-system.svc:8443/extender";
  std::map<std::string, rapidjson::Document> configs;

  // The second scheduler, as rendered (caFile from the serving Secret).
  const Render& scheduler = Get("scheduler");
  std::string text;
  for (const Value* cm : scheduler.All("ConfigMap")) text = Str(cm, "/data/config.yaml");
  absl::StatusOr<rapidjson::Document> second = common::YamlToJson(text);
  ASSERT_TRUE(second.ok()) << second.status();
  configs["second scheduler"] = *std::move(second);

  // The default scheduler's file, as committed and as rendered with the CA and a ClusterIP URL.
  absl::StatusOr<rapidjson::Document> committed = common::YamlToJson(
      ReadFile(Source("manifests/default-scheduler/kube-scheduler-config.yaml")));
  ASSERT_TRUE(committed.ok()) << committed.status();
  absl::StatusOr<rapidjson::Document> rendered =
      common::YamlToJson(ReadFile(Certs() + "/kube-scheduler-config.yaml"));
  ASSERT_TRUE(rendered.ok()) << rendered.status();

  {
    SCOPED_TRACE("second scheduler");
    ExpectExtenderWiring(&configs["second scheduler"], url);
    EXPECT_EQ(Str(&configs["second scheduler"], "/extenders/0/tlsConfig/caFile"),
              "/etc/gpu-tenancy-ca/ca.crt");
    EXPECT_EQ(Str(&configs["second scheduler"], "/extenders/1/tlsConfig/caFile"),
              "/etc/gpu-tenancy-ca/ca.crt");
    EXPECT_EQ(Str(&configs["second scheduler"], "/profiles/0/schedulerName"),
              "gpu-tenancy-scheduler");
    EXPECT_EQ(Str(&configs["second scheduler"], "/leaderElection/resourceName"),
              "gpu-tenancy-scheduler");
    // The Deployment mounts the CA the config names, from the Secret the service serves with.
    const Value* d = scheduler.Find("Deployment", "gpu-tenancy-scheduler");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(Str(d, "/spec/template/spec/containers/0/volumeMounts/1/mountPath"),
              "/etc/gpu-tenancy-ca");
    EXPECT_EQ(Str(d, "/spec/template/spec/volumes/1/secret/secretName"), "gpu-tenancy-tls");
    EXPECT_EQ(Json(At(d, "/spec/template/spec/volumes/1/secret/items")),
              R"([{"key":"ca.crt","path":"ca.crt"}])")
        << "mount only the CA, never the serving key";
  }
  {
    SCOPED_TRACE("default scheduler, committed");
    ExpectExtenderWiring(&*committed, url);
    EXPECT_EQ(Str(&*committed, "/profiles/0/schedulerName"), "default-scheduler");
  }
  {
    SCOPED_TRACE("default scheduler, rendered");
    ExpectExtenderWiring(&*rendered, "https://10.96.0.42:8443/extender");
    EXPECT_EQ(Str(&*rendered, "/extenders/0/tlsConfig/caData"), CaBase64());
    EXPECT_EQ(Str(&*rendered, "/extenders/1/tlsConfig/caData"), CaBase64());
  }
  // One wiring, three files: everything but the CA and the URL is the same.
  EXPECT_EQ(ExtenderSansCa(&configs["second scheduler"]), ExtenderSansCa(&*committed));
  EXPECT_EQ(ExtenderSansCa(&*rendered), ExtenderSansCa(&*committed));

  // The URL names the extender Service, which selects only the lease holder, on its https port.
  const Value* svc = Get("base").Find("Service", "gpu-tenancy-extender");
  ASSERT_NE(svc, nullptr);
  EXPECT_EQ(Json(At(svc, "/spec/ports/0/port")), "8443");
  EXPECT_EQ(Str(svc, "/spec/selector/gpu-tenancy.io~1extender-leader"), "true");
}

// The shipped configs, as `gpu-tenancy scheduler-config` prints them: one source for the
// wiring, so a GPU model added to the catalog fails here until the files are regenerated.
struct ShippedSchedulerConfig {
  const char* layout;
  const char* path;
};
constexpr ShippedSchedulerConfig kShippedSchedulerConfigs[] = {
    {"scheduler", "manifests/scheduler/config.yaml"},
    {"default-scheduler", "manifests/default-scheduler/kube-scheduler-config.yaml"},
};

// "" when the texts are equal, else the first line where they differ, from both.
std::string FirstDifferentLine(const std::string& shipped, const std::string& generated) {
  if (shipped == generated) return "";
  std::vector<std::string> a = absl::StrSplit(shipped, '\n');
  std::vector<std::string> b = absl::StrSplit(generated, '\n');
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return absl::StrCat("line ", i + 1, "\n  shipped:   ", i < a.size() ? a[i] : "<end of file>",
                      "\n  generated: ", i < b.size() ? b[i] : "<end of output>");
}

TEST(SchedulerConfigGeneratedTest, ShippedConfigsAreTheGeneratorsOutput) {
  for (const ShippedSchedulerConfig& shipped : kShippedSchedulerConfigs) {
    SCOPED_TRACE(shipped.path);
    testing_support::CommandResult r = testing_support::RunShell(absl::StrCat(
        testing_support::ShellQuote(GT_BINARY), " scheduler-config --layout ", shipped.layout));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(FirstDifferentLine(ReadFile(Source(shipped.path)), r.out), "")
        << "the file drifted from the generator; regenerate it with\n  gpu-tenancy "
           "scheduler-config --layout "
        << shipped.layout << " > " << shipped.path;
  }
}

// Independent of the generator: read as kube-scheduler reads them, both files name every MIG
// profile of every catalog model ("+" written ".") and its time-sliced ".shared" form.
TEST(SchedulerConfigGeneratedTest, EveryCatalogMigProfileIsManaged) {
  for (const ShippedSchedulerConfig& shipped : kShippedSchedulerConfigs) {
    SCOPED_TRACE(shipped.path);
    absl::StatusOr<rapidjson::Document> config = common::YamlToJson(ReadFile(Source(shipped.path)));
    ASSERT_TRUE(config.ok()) << config.status();
    std::map<std::string, std::string> managed;  // name -> ignoredByScheduler
    const Value* resources = At(&*config, "/extenders/0/managedResources");
    ASSERT_TRUE(resources && resources->IsArray());
    for (const Value& m : resources->GetArray()) {
      managed[Str(&m, "/name")] = Json(At(&m, "/ignoredByScheduler"));
    }
    size_t mig_names = 0;
    for (const auto& [name, ignored] : managed) {
      if (absl::StartsWith(name, "nvidia.com/mig-")) ++mig_names;
    }
    EXPECT_EQ(mig_names, 104u) << "52 profile names, each exclusive and shared";
    for (const topology::GpuModel& model : common::BuiltinCatalog().models()) {
      for (const topology::MigProfile& profile : model.profiles) {
        std::string suffix = profile.name;
        std::replace(suffix.begin(), suffix.end(), '+', '.');
        for (const std::string& name : {absl::StrCat("nvidia.com/mig-", suffix),
                                        absl::StrCat("nvidia.com/mig-", suffix, ".shared")}) {
          auto it = managed.find(name);
          EXPECT_TRUE(it != managed.end() && it->second == "false") << model.model << ": " << name;
        }
      }
    }
  }
}

}  // namespace
