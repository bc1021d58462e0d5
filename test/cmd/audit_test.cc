// `gpu-tenancy audit` through the built binary: the mixed fleet's text and JSON reports, the
// misconfigured fleet failing exactly its three mistakes with the objects named, the other
// formats, and usage mistakes.
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "test/support/fake_apiserver.h"
#include "test/support/serve_process.h"
#include "test/support/shell.h"

namespace {

using ::testing::HasSubstr;
using testing_support::CommandResult;

std::string Source(const std::string& relative) {
  return testing_support::ShellQuote(absl::StrCat(GT_SOURCE_DIR, "/", relative));
}

CommandResult Audit(const std::string& cluster, const std::string& more = "") {
  return testing_support::RunShell(absl::StrCat(
      testing_support::ShellQuote(GT_BINARY), " audit --cluster-file ",
      Source("test/testdata/audit/" + cluster), " --policy ", Source("cmd/demo/policy.yaml"),
      " --mig-parted-config ", Source("test/testdata/audit/mig-parted.yaml"),
      " --scheduler-config ", Source("manifests/scheduler/config.yaml"), " ", more));
}

const rapidjson::Value* FindDevice(const rapidjson::Document& doc, const std::string& tenant,
                                   const std::string& pod) {
  for (const auto& t : doc["tenants"].GetArray()) {
    if (t["tenant"].GetString() != tenant) continue;
    for (const auto& d : t["devices"].GetArray()) {
      if (absl::StrCat(d["namespace"].GetString(), "/", d["name"].GetString()) == pod) return &d;
    }
  }
  return nullptr;
}

std::map<std::string, std::string> Statuses(const rapidjson::Document& doc) {
  std::map<std::string, std::string> out;
  for (const auto& c : doc["checklist"].GetArray())
    out[c["id"].GetString()] = c["status"].GetString();
  return out;
}

std::vector<std::string> Findings(const rapidjson::Document& doc, const std::string& id) {
  std::vector<std::string> out;
  for (const auto& c : doc["checklist"].GetArray()) {
    if (c["id"].GetString() != id) continue;
    for (const auto& f : c["findings"].GetArray()) out.push_back(f["object"].GetString());
  }
  return out;
}

TEST(AuditCommandTest, MixedFleetTextNamesEachTenantsDeal) {
  CommandResult r = Audit("mixed-fleet.yaml");
  // mig-c is still being reconfigured: that item fails, so the exit code says so.
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.out, HasSubstr("checklist: 10 pass, 1 warn, 1 fail"));
  EXPECT_THAT(r.out, HasSubstr("\ntenant acme\n  tier: untrusted (may use exclusive, mig)\n"));
  EXPECT_THAT(r.out,
              HasSubstr("pod research/notebook-1 on ts-a: 1 x nvidia.com/gpu.shared (GPU 0)\n"
                        "    Time-sliced GPU: one memory heap and one fault domain"));
  EXPECT_THAT(r.out, HasSubstr("shared with gpu-platform."));
  EXPECT_THAT(r.out,
              HasSubstr("node mps-a: shares host kernel, NVIDIA driver and kernel modules, "
                        "container runtime and NVIDIA container toolkit, MPS control daemon"));
  EXPECT_THAT(r.out, HasSubstr("fail  Every MIG node settled"));
  EXPECT_THAT(r.out, HasSubstr("node/mig-c: nvidia.com/mig.config.state is pending, not success"));
  EXPECT_THAT(r.out, HasSubstr("\nNot checked\n  host patch level: "));
}

TEST(AuditCommandTest, MixedFleetJsonClassifiesEveryHolding) {
  CommandResult r = Audit("mixed-fleet.yaml", "-o json");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  rapidjson::Document doc;
  doc.Parse(r.out.c_str());
  ASSERT_FALSE(doc.HasParseError()) << r.out;
  EXPECT_EQ(doc["summary"]["fail"].GetInt(), 1);
  struct Want {
    std::string tenant, pod, boundary;
    std::vector<std::string> co_tenants;
  };
  for (const Want& w : std::vector<Want>{
           {"acme", "acme/llm-a", "mig-instance", {"bank"}},
           {"bank", "bank-prod/risk-model", "mig-instance", {"acme"}},
           {"research", "research/notebook-1", "timesliced", {"gpu-platform"}},
           {"research", "research/notebook-2", "timesliced", {}},
           {"research", "research/trainer", "whole-gpu", {}},
           {"research", "research-dev/mps-infer", "mps", {}},
           {"gpu-platform", "gpu-ops/profiler", "timesliced", {"research"}},
       }) {
    SCOPED_TRACE(w.pod);
    const rapidjson::Value* d = FindDevice(doc, w.tenant, w.pod);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(std::string((*d)["boundary"].GetString()), w.boundary);
    std::vector<std::string> co;
    for (const auto& t : (*d)["coTenants"].GetArray()) co.push_back(t.GetString());
    EXPECT_EQ(co, w.co_tenants);
  }
  std::map<std::string, std::string> statuses = Statuses(doc);
  EXPECT_EQ(statuses["mig-config-applied"], "fail");
  EXPECT_EQ(statuses["scheduler-webhook-wiring"], "pass");
  EXPECT_EQ(statuses["gpu-metrics-attributable"], "warn");
  EXPECT_EQ(statuses["untrusted-isolation"], "pass");
}

// kube-scheduler asks an extender about victims only with preemptVerb, and only for pods that
// request one of its names: a configuration without the verb, or without an entry that answers
// every preemption, lets pods evict other tenants' GPU pods with no tenant in view.
TEST(AuditCommandTest, ASchedulerConfigWithoutPreemptVerbFailsTheWiring) {
  CommandResult r = testing_support::RunShell(absl::StrCat(
      testing_support::ShellQuote(GT_BINARY), " audit -o json --cluster-file ",
      Source("test/testdata/audit/mixed-fleet.yaml"), " --policy ", Source("cmd/demo/policy.yaml"),
      " --scheduler-config ", Source("test/testdata/audit/scheduler-without-preempt.yaml")));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  rapidjson::Document doc;
  doc.Parse(r.out.c_str());
  ASSERT_FALSE(doc.HasParseError()) << r.out;
  const rapidjson::Value* wiring = nullptr;
  for (const auto& c : doc["checklist"].GetArray()) {
    if (std::string(c["id"].GetString()) == "scheduler-webhook-wiring") wiring = &c;
  }
  ASSERT_NE(wiring, nullptr);
  EXPECT_EQ(std::string((*wiring)["status"].GetString()), "fail");
  std::map<std::string, std::string> findings;
  for (const auto& f : (*wiring)["findings"].GetArray()) {
    findings[f["object"].GetString()] = f["problem"].GetString();
  }
  ASSERT_EQ(findings.count("extenders/0"), 1u) << r.out;
  EXPECT_THAT(findings["extenders/0"],
              HasSubstr("manages 6 GPU resource names (nvidia.com/gpu, nvidia.com/gpu.shared, "
                        "nvidia.com/mig-1g.10gb, ...) without preemptVerb"));
  ASSERT_EQ(findings.count("extenders"), 1u) << r.out;
  EXPECT_THAT(findings["extenders"],
              HasSubstr("no entry has preemptVerb without managedResources"));
}

// A device report on a pod that its node's agent did not write (here rewritten to move a replica
// onto another GPU) is passed over by the model, and the audit names it.
TEST(AuditCommandTest, AForgedDeviceReportIsFlagged) {
  std::ifstream in(absl::StrCat(GT_SOURCE_DIR, "/cmd/demo/cluster.yaml"));
  std::string cluster((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string report =
      R"({"node":"ts-a","containers":[{"name":"main","devices":{"nvidia.com/gpu.shared":)"
      R"(["GPU-5a1f0021-7c3e-4b8a-9d21-0e6c4f2a0021::0")";
  const size_t at = cluster.find(report);
  ASSERT_NE(at, std::string::npos);
  cluster.replace(
      at, report.size(),
      R"({"node":"ts-a","containers":[{"name":"main","devices":{"nvidia.com/gpu.shared":)"
      R"(["GPU-5a1f0020-7c3e-4b8a-9d21-0e6c4f2a0020::3")");
  testing_support::TempDir dir;
  std::ofstream(dir.File("cluster.yaml")) << cluster;
  CommandResult r = testing_support::RunShell(
      absl::StrCat(testing_support::ShellQuote(GT_BINARY), " audit -o json --cluster-file ",
                   testing_support::ShellQuote(dir.File("cluster.yaml")), " --policy ",
                   Source("cmd/demo/policy.yaml")));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  rapidjson::Document doc;
  doc.Parse(r.out.c_str());
  ASSERT_FALSE(doc.HasParseError()) << r.out;
  EXPECT_EQ(Statuses(doc)["device-reports-from-agent"], "fail");
  EXPECT_EQ(Findings(doc, "device-reports-from-agent"),
            std::vector<std::string>{"pod/research/notebook-2"});
  // The model kept the agent's record: the pod is still on GPU 1, alone there.
  const rapidjson::Value* notebook = FindDevice(doc, "research", "research/notebook-2");
  ASSERT_NE(notebook, nullptr);
  EXPECT_EQ((*notebook)["coTenants"].Size(), 0u);
  // The shipped demo has none.
  CommandResult demo = testing_support::RunShell(
      absl::StrCat(testing_support::ShellQuote(GT_BINARY), " audit -o json --demo"));
  rapidjson::Document clean;
  clean.Parse(demo.out.c_str());
  ASSERT_FALSE(clean.HasParseError()) << demo.out;
  EXPECT_EQ(Statuses(clean)["device-reports-from-agent"], "pass");
}

TEST(AuditCommandTest, MisconfiguredFleetFailsExactlyItsMistakes) {
  CommandResult r = Audit("misconfigured.yaml", "-o json");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  rapidjson::Document doc;
  doc.Parse(r.out.c_str());
  ASSERT_FALSE(doc.HasParseError()) << r.out;
  std::map<std::string, std::vector<std::string>> failed;  // id -> objects
  for (const auto& c : doc["checklist"].GetArray()) {
    if (std::string(c["status"].GetString()) != "fail") continue;
    auto& objects = failed[c["id"].GetString()];
    for (const auto& f : c["findings"].GetArray()) objects.push_back(f["object"].GetString());
  }
  EXPECT_EQ(failed, (std::map<std::string, std::vector<std::string>>{
                        {"untrusted-isolation", {"pod/acme/chat"}},
                        {"separate-resource-names", {"node/ts-plain"}},
                        {"mig-config-applied", {"node/mig-drift"}},
                        // Past admission, the contract guard finds the pod too, and the node,
                        // reading its config through the same mig-parted file.
                        {"contract-held", {"node/mig-drift", "pod/acme/chat"}},
                    }));
  for (const auto& c : doc["checklist"].GetArray()) {
    if (std::string(c["id"].GetString()) != "contract-held") continue;
    // A node is no tenant's: its finding names the rule first.
    EXPECT_THAT(std::string(c["findings"][0]["problem"].GetString()),
                ::testing::StartsWith("[mig-drift] node \"mig-drift\": MIG geometry differs from "
                                      "nvidia.com/mig.config=tenancy-3-2-1-1"));
  }
  // The deal says the same: acme's chat pod shares a fault domain with research.
  const rapidjson::Value* chat = FindDevice(doc, "acme", "acme/chat");
  ASSERT_NE(chat, nullptr);
  EXPECT_EQ(std::string((*chat)["boundary"].GetString()), "timesliced");
}

// Without a mig-parted config the geometry item still compares nodes labelled with NVIDIA's
// default config names, and fails the one whose geometry drifted; a name only a mig-parted file
// defines is compared once the file is given.
TEST(AuditCommandTest, NvidiasDefaultConfigsAreComparedWithoutAMigPartedConfig) {
  auto audit = [](const std::string& more) {
    return testing_support::RunShell(
        absl::StrCat(testing_support::ShellQuote(GT_BINARY), " audit --cluster-file ",
                     Source("test/testdata/audit/mig-defaults.yaml"), " --policy ",
                     Source("cmd/demo/policy.yaml"), " ", more));
  };
  CommandResult text = audit("");
  EXPECT_EQ(text.exit_code, 1) << text.err;
  EXPECT_THAT(text.out,
              HasSubstr("node/mig-balanced: geometry differs from config all-balanced (NVIDIA's "
                        "default): nvidia.com/mig-1g.10gb: expected 2, node shows 7; "
                        "nvidia.com/mig-2g.20gb: expected 1, node shows 0; "
                        "nvidia.com/mig-3g.40gb: expected 1, node shows 0"));
  EXPECT_THAT(text.out, ::testing::Not(HasSubstr("node/mig-1g: geometry")));

  CommandResult json = audit("-o json");
  rapidjson::Document doc;
  doc.Parse(json.out.c_str());
  ASSERT_FALSE(doc.HasParseError()) << json.out;
  EXPECT_EQ(Statuses(doc)["mig-config-applied"], "fail");
  EXPECT_EQ(Findings(doc, "mig-config-applied"), std::vector<std::string>{"node/mig-balanced"});

  // The file defines tenancy-3-2-1-1 but not all-balanced, for which NVIDIA's default still holds.
  CommandResult with_file =
      audit("-o json --mig-parted-config " + Source("test/testdata/audit/mig-parted.yaml"));
  rapidjson::Document compared;
  compared.Parse(with_file.out.c_str());
  ASSERT_FALSE(compared.HasParseError()) << with_file.out;
  EXPECT_EQ(Findings(compared, "mig-config-applied"),
            std::vector<std::string>{"node/mig-balanced"});
}

TEST(AuditCommandTest, MarkdownAndHtmlCarryTheSameReport) {
  CommandResult md = Audit("misconfigured.yaml", "-o markdown");
  EXPECT_EQ(md.exit_code, 1);
  EXPECT_THAT(md.out, HasSubstr("## Go-live checklist"));
  EXPECT_THAT(md.out, HasSubstr("- **fail** Untrusted tiers only on MIG or whole-GPU pools"));
  EXPECT_THAT(md.out, HasSubstr("`node/mig-drift`: geometry differs from config tenancy-3-2-1-1"));
  CommandResult html = Audit("misconfigured.yaml", "-o html");
  EXPECT_EQ(html.exit_code, 1);
  EXPECT_THAT(html.out, HasSubstr("<!DOCTYPE html>"));
  EXPECT_THAT(html.out, HasSubstr("data-check=\"separate-resource-names\" data-status=\"fail\""));
}

TEST(AuditCommandTest, BadInputIsAClearErrorNotACrash) {
  struct Case {
    std::string args, says;
  };
  const std::string bin = testing_support::ShellQuote(GT_BINARY);
  for (const Case& c : std::vector<Case>{
           {"audit --demo -o yaml", "-o"},
           {"audit --cluster-file /nonexistent.yaml", "/nonexistent.yaml"},
           {"audit --demo --mig-parted-config " + Source("cmd/demo/policy.yaml"),
            "--mig-parted-config"},
           {"audit --demo --scheduler-config " + Source("cmd/demo/policy.yaml"),
            "no extenders list"},
           {"audit --demo stray", "unexpected argument \"stray\""},
           {"audit --demo --kubeconfig /nonexistent/kubeconfig",
            "error: --kubeconfig and --demo exclude each other"},
           {"audit --context prod", "error: --context needs --kubeconfig"},
           {"audit --demo --scheduler-config=", "error: --scheduler-config takes a file"},
       }) {
    SCOPED_TRACE(c.args);
    CommandResult r = testing_support::RunShell(absl::StrCat(bin, " ", c.args));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr(c.says));
  }
}

// Without a cluster file the cluster is listed once from kube-apiserver, as serve lists it.
TEST(AuditCommandTest, ListsALiveClusterOnce) {
  absl::StatusOr<std::unique_ptr<testing_support::FakeApiServer>> api =
      testing_support::FakeApiServer::Start({});
  ASSERT_TRUE(api.ok()) << api.status();
  ASSERT_TRUE((*api)->AddNamespace("acme").ok());
  ASSERT_TRUE(
      (*api)
          ->AddNode(
              R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"mig-1","labels":{)"
              R"("nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3","nvidia.com/gpu.count":"1",)"
              R"("nvidia.com/mig.strategy":"mixed","nvidia.com/mig.config.state":"pending"}},)"
              R"("status":{"allocatable":{"cpu":"31","nvidia.com/mig-3g.40gb":"2"}}})")
          .ok());
  ASSERT_TRUE(
      (*api)
          ->AddPod(
              R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"llm","namespace":"acme","uid":"u1"},)"
              R"("spec":{"nodeName":"mig-1","containers":[{"name":"main","image":"x","resources":{)"
              R"("limits":{"nvidia.com/mig-3g.40gb":"1"},"requests":{"nvidia.com/mig-3g.40gb":"1"}}}]},)"
              R"("status":{"phase":"Running"}})")
          .ok());
  // What the model keeps no trace of, listed again: a privileged pod of an untrusted tenant, and
  // the service's webhook configurations.
  ASSERT_TRUE(
      (*api)
          ->AddPod(
              R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"debug","namespace":"acme"},)"
              R"("spec":{"nodeName":"mig-1","containers":[{"name":"main","image":"x",)"
              R"("securityContext":{"privileged":true}}]},"status":{"phase":"Running"}})")
          .ok());
  ASSERT_TRUE((*api)
                  ->Add(testing_support::Resource::kValidatingWebhookConfigurations,
                        R"({"metadata":{"name":"gpu-tenancy"},)"
                        R"("webhooks":[{"name":"validate.gpu-tenancy.io"}]})")
                  .ok());
  ASSERT_TRUE((*api)
                  ->Add(testing_support::Resource::kMutatingWebhookConfigurations,
                        R"({"metadata":{"name":"gpu-tenancy"},)"
                        R"("webhooks":[{"name":"mutate.gpu-tenancy.io"}]})")
                  .ok());
  testing_support::TempDir dir;
  const std::string kubeconfig = dir.File("kubeconfig");
  std::ofstream(kubeconfig) << (*api)->Kubeconfig("    token: test-token");
  auto audit = [&] {
    CommandResult r = testing_support::RunShell(absl::StrCat(
        testing_support::ShellQuote(GT_BINARY), " audit -o json --kubeconfig ",
        testing_support::ShellQuote(kubeconfig), " --policy ", Source("cmd/demo/policy.yaml"),
        " --scheduler-config ", Source("manifests/scheduler/config.yaml")));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    rapidjson::Document doc;
    doc.Parse(r.out.c_str());
    EXPECT_FALSE(doc.HasParseError()) << r.out << r.err;
    return doc;
  };
  rapidjson::Document doc = audit();
  ASSERT_TRUE(doc.IsObject());
  const rapidjson::Value* llm = FindDevice(doc, "acme", "acme/llm");
  ASSERT_NE(llm, nullptr);
  EXPECT_EQ(std::string((*llm)["boundary"].GetString()), "mig-instance");
  std::map<std::string, std::string> statuses = Statuses(doc);
  EXPECT_EQ(statuses["mig-config-applied"], "fail");
  // Every item inspected: the pod specs listed from kube-apiserver, the webhooks found.
  EXPECT_EQ(statuses["device-escape-hatches"], "fail");
  EXPECT_EQ(Findings(doc, "device-escape-hatches"), std::vector<std::string>{"pod/acme/debug"});
  EXPECT_EQ(statuses["scheduler-webhook-wiring"], "pass");

  // A missing webhook is then a finding, not an unknown.
  ASSERT_TRUE(
      (*api)
          ->Delete(testing_support::Resource::kMutatingWebhookConfigurations, "", "gpu-tenancy")
          .ok());
  rapidjson::Document without = audit();
  ASSERT_TRUE(without.IsObject());
  EXPECT_EQ(Statuses(without)["scheduler-webhook-wiring"], "fail");
  EXPECT_EQ(Findings(without, "scheduler-webhook-wiring"),
            std::vector<std::string>{"mutatingwebhookconfiguration"});
}

}  // namespace
