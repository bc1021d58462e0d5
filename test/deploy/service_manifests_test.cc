// The service's own objects in the renders: RBAC, the hardened Deployment, the optional
// NetworkPolicy and the policy ConfigMap.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/deploy/deploy_fixture.h"
#include "test/support/serve_process.h"

namespace {

using deploy_test::At;
using deploy_test::DeployTest;
using deploy_test::Json;
using deploy_test::kNamespace;
using deploy_test::Render;
using deploy_test::Str;
using deploy_test::Strings;
using rapidjson::Value;

TEST_F(DeployTest, RbacGrantsWhatTheServiceDoes) {
  const Render& r = Get("base");
  const Value* role = r.Find("ClusterRole", "gpu-tenancy");
  ASSERT_NE(role, nullptr);
  const Value* lease_role = r.Find("Role", "gpu-tenancy-leader-election");
  ASSERT_NE(lease_role, nullptr);
  auto allows = [](const Value* role, const std::string& group, const std::string& resource,
                   const std::string& verb) {
    const Value* rules = At(role, "/rules");
    if (!rules || !rules->IsArray()) return false;
    for (const Value& rule : rules->GetArray()) {
      auto has = [&](const char* key, const std::string& want) {
        for (const std::string& s : Strings(&rule, key)) {
          if (s == want || s == "*") return true;
        }
        return false;
      };
      if (has("/apiGroups", group) && has("/resources", resource) && has("/verbs", verb))
        return true;
    }
    return false;
  };
  struct Case {
    std::string group, resource, verb;
  };
  const std::vector<Case> cluster_wide = {
      {"", "nodes", "list"},       {"", "nodes", "watch"},
      {"", "pods", "list"},        {"", "pods", "watch"},
      {"", "pods", "patch"},       {"", "namespaces", "list"},
      {"", "namespaces", "watch"}, {"", "pods/binding", "create"},
      {"", "events", "create"},    {"events.k8s.io", "events", "create"},
  };
  // What kube/dra_source.cc lists and watches in resource.k8s.io: one reflector per resource
  // named in its `plurals` table, read from the source so a kind added there needs its rule.
  const std::string source = testing_support::ReadSource("kube/dra_source.cc");
  const size_t table = source.find("plurals[kKinds] = {");
  ASSERT_NE(table, std::string::npos) << "kube/dra_source.cc has no plurals table";
  std::vector<std::string> dra_resources;
  for (size_t at = source.find('"', table), end = source.find('}', table);
       at != std::string::npos && at < end; at = source.find('"', at + 1)) {
    size_t close = source.find('"', at + 1);
    dra_resources.push_back(source.substr(at + 1, close - at - 1));
    at = close;
  }
  EXPECT_EQ(dra_resources, (std::vector<std::string>{"resourceslices", "resourceclaims",
                                                     "deviceclasses", "resourceclaimtemplates"}));
  for (const std::string& resource : dra_resources) {
    for (const char* verb : {"get", "list", "watch"}) {
      EXPECT_TRUE(allows(role, "resource.k8s.io", resource, verb))
          << verb << " " << resource << " (group resource.k8s.io)";
    }
    // Read only: claims are allocated by kube-scheduler, slices published by the driver.
    for (const char* verb : {"create", "update", "patch", "delete"}) {
      EXPECT_FALSE(allows(role, "resource.k8s.io", resource, verb)) << verb << " " << resource;
    }
  }
  for (const Case& c : cluster_wide) {
    EXPECT_TRUE(allows(role, c.group, c.resource, c.verb))
        << c.verb << " " << c.resource << " (group \"" << c.group << "\")";
  }
  for (const char* verb : {"get", "create", "update"}) {
    EXPECT_TRUE(allows(lease_role, "coordination.k8s.io", "leases", verb)) << verb << " leases";
  }
  // Claim quota records (kube/usage_record.h): read, created, updated; only in the namespace.
  const Value* record_role = r.Find("Role", "gpu-tenancy-usage-records");
  ASSERT_NE(record_role, nullptr);
  EXPECT_EQ(Str(record_role, "/metadata/namespace"), kNamespace);
  for (const char* verb : {"get", "create", "update"}) {
    EXPECT_TRUE(allows(record_role, "", "configmaps", verb)) << verb << " configmaps";
  }
  EXPECT_FALSE(allows(record_role, "", "configmaps", "delete"));
  EXPECT_FALSE(allows(role, "", "configmaps", "update")) << "only in the service's namespace";
  // Least privilege: nothing writes nodes or deletes anything.
  EXPECT_FALSE(allows(role, "", "nodes", "update"));
  EXPECT_FALSE(allows(role, "", "pods", "delete"));
  EXPECT_FALSE(allows(role, "", "secrets", "get"));
}

// serve's stale-condition check (cmd/webhook_guard.h) GETs its own two webhook configurations,
// named as rendered; the rule names those and grants nothing else on them.
TEST_F(DeployTest, RbacReadsOnlyTheOwnWebhookConfigurations) {
  const Render& r = Get("base");
  const Value* role = r.Find("ClusterRole", "gpu-tenancy");
  ASSERT_NE(role, nullptr);
  for (const char* kind : {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}) {
    EXPECT_NE(r.Find(kind, "gpu-tenancy"), nullptr) << kind;
  }
  const Value* rules = At(role, "/rules");
  ASSERT_TRUE(rules && rules->IsArray());
  int found = 0;
  for (const Value& rule : rules->GetArray()) {
    const std::vector<std::string> groups = Strings(&rule, "/apiGroups");
    if (std::find(groups.begin(), groups.end(), "admissionregistration.k8s.io") == groups.end() &&
        std::find(groups.begin(), groups.end(), "*") == groups.end()) {
      continue;
    }
    ++found;
    EXPECT_EQ(groups, std::vector<std::string>{"admissionregistration.k8s.io"});
    EXPECT_EQ(Strings(&rule, "/resources"),
              (std::vector<std::string>{"validatingwebhookconfigurations",
                                        "mutatingwebhookconfigurations"}));
    EXPECT_EQ(Strings(&rule, "/resourceNames"), std::vector<std::string>{"gpu-tenancy"});
    EXPECT_EQ(Strings(&rule, "/verbs"), std::vector<std::string>{"get"});
  }
  EXPECT_EQ(found, 1);
}

TEST_F(DeployTest, DeploymentIsHardened) {
  const Render& r = Get("base");
  const Value* d = r.Find("Deployment", "gpu-tenancy");
  ASSERT_NE(d, nullptr);
  struct Case {
    const char* pointer;
    std::string want;  // compact JSON of the value
  };
  const std::vector<Case> cases = {
      {"/spec/replicas", "2"},
      {"/spec/template/spec/serviceAccountName", "\"gpu-tenancy\""},
      {"/spec/template/spec/affinity/podAntiAffinity/"
       "preferredDuringSchedulingIgnoredDuringExecution/0/podAffinityTerm/topologyKey",
       "\"kubernetes.io/hostname\""},
      {"/spec/template/spec/securityContext/runAsNonRoot", "true"},
      {"/spec/template/spec/securityContext/seccompProfile/type", "\"RuntimeDefault\""},
      {"/spec/template/spec/containers/0/image", "\"gpu-tenancy:latest\""},
      {"/spec/template/spec/containers/0/imagePullPolicy", "\"IfNotPresent\""},
      {"/spec/template/spec/containers/0/securityContext/readOnlyRootFilesystem", "true"},
      {"/spec/template/spec/containers/0/securityContext/allowPrivilegeEscalation", "false"},
      {"/spec/template/spec/containers/0/securityContext/privileged", "false"},
      {"/spec/template/spec/containers/0/securityContext/runAsNonRoot", "true"},
      {"/spec/template/spec/containers/0/securityContext/capabilities/drop", "[\"ALL\"]"},
      {"/spec/template/spec/containers/0/readinessProbe/httpGet/path", "\"/readyz\""},
      {"/spec/template/spec/containers/0/readinessProbe/httpGet/port", "\"metrics\""},
      {"/spec/template/spec/containers/0/livenessProbe/httpGet/path", "\"/healthz\""},
      {"/spec/template/spec/containers/0/livenessProbe/httpGet/port", "\"metrics\""},
      {"/spec/template/spec/containers/0/resources/requests/cpu", "\"100m\""},
      {"/spec/template/spec/containers/0/resources/requests/memory", "\"128Mi\""},
      {"/spec/template/spec/containers/0/resources/limits/memory", "\"1Gi\""},
      {"/spec/template/spec/containers/0/volumeMounts/0/mountPath", "\"/etc/gpu-tenancy\""},
      {"/spec/template/spec/volumes/0/projected/defaultMode", "288"},   // 0440
      {"/spec/template/spec/containers/0/env/0/name", "\"POD_NAME\""},  // lease identity
      {"/spec/template/spec/containers/0/env/0/valueFrom/fieldRef/fieldPath", "\"metadata.name\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pointer);
    EXPECT_EQ(Json(At(d, c.pointer)), c.want);
  }
  std::vector<std::string> args = Strings(d, "/spec/template/spec/containers/0/args");
  const std::vector<std::string> wanted_args = {"serve",
                                                "--policy=/etc/gpu-tenancy/policy.yaml",
                                                "--tls-cert=/etc/gpu-tenancy/tls/tls.crt",
                                                "--tls-key=/etc/gpu-tenancy/tls/tls.key",
                                                "--listen=0.0.0.0:8443",
                                                "--metrics-listen=0.0.0.0:8080",
                                                "--shutdown-delay=15s"};
  EXPECT_EQ(args, wanted_args);
  EXPECT_EQ(Str(d, "/spec/template/spec/containers/0/ports/0/name"), "https");
  EXPECT_EQ(Json(At(d, "/spec/template/spec/containers/0/ports/0/containerPort")), "8443");

  // The projected volume puts the policy and the pair exactly where the flags point, without
  // subPath (which would never see the kubelet's updates).
  std::set<std::string> paths;
  const Value* sources = At(d, "/spec/template/spec/volumes/0/projected/sources");
  ASSERT_TRUE(sources && sources->IsArray());
  for (const Value& source : sources->GetArray()) {
    for (const char* kind : {"/configMap/items", "/secret/items"}) {
      const Value* items = At(&source, kind);
      if (!items || !items->IsArray()) continue;
      for (const Value& item : items->GetArray()) paths.insert(Str(&item, "/path"));
    }
  }
  EXPECT_EQ(paths,
            (std::set<std::string>{"policy.yaml", "tls/tls.crt", "tls/tls.key", "tls/ca.crt"}));
  EXPECT_EQ(At(d, "/spec/template/spec/containers/0/volumeMounts/0/subPath"), nullptr);

  const Value* pdb = r.Find("PodDisruptionBudget", "gpu-tenancy");
  EXPECT_EQ(Json(At(pdb, "/spec/minAvailable")), "1");
  EXPECT_EQ(Json(At(pdb, "/spec/selector/matchLabels")), Json(At(d, "/spec/selector/matchLabels")));

  const Value* svc = r.Find("Service", "gpu-tenancy");
  ASSERT_NE(svc, nullptr);
  EXPECT_EQ(Json(At(svc, "/spec/selector")), Json(At(d, "/spec/selector/matchLabels")));
  std::map<std::string, std::string> ports;
  for (const char* i : {"/spec/ports/0", "/spec/ports/1"}) {
    const Value* p = At(svc, i);
    ports[Str(p, "/name")] = absl::StrCat(Json(At(p, "/port")), "->", Json(At(p, "/targetPort")));
  }
  EXPECT_EQ(ports, (std::map<std::string, std::string>{{"https", "8443->\"https\""},
                                                       {"metrics", "8080->\"metrics\""}}));
}

// A rolling update or a node drain stops a replica while kube-apiserver and kube-scheduler still
// hold connections to it. The rendered Deployment must drain, and the drain must fit: serve
// keeps answering for --shutdown-delay after SIGTERM (with /readyz failing, so the readiness
// probe sees it go within the delay), then lets requests in flight finish within
// --request-deadline, all before the kubelet's SIGKILL at terminationGracePeriodSeconds (after
// any preStop hook, which the grace period also covers).
TEST_F(DeployTest, DeploymentDrainsWithinItsGracePeriod) {
  const Value* d = Get("base").Find("Deployment", "gpu-tenancy");
  ASSERT_NE(d, nullptr);
  const Value* pod = At(d, "/spec/template/spec");
  const Value* c = At(pod, "/containers/0");
  auto seconds_flag = [&](absl::string_view name, absl::Duration fallback) {
    for (const std::string& arg : Strings(c, "/args")) {
      const std::string prefix = absl::StrCat("--", name, "=");
      if (!absl::StartsWith(arg, prefix)) continue;
      absl::Duration d;
      EXPECT_TRUE(absl::ParseDuration(arg.substr(prefix.size()), &d)) << arg;
      return d;
    }
    return fallback;
  };
  const absl::Duration delay = seconds_flag("shutdown-delay", absl::ZeroDuration());
  const absl::Duration deadline = seconds_flag("request-deadline", absl::Seconds(10));
  EXPECT_GT(delay, absl::ZeroDuration()) << "serve is not given --shutdown-delay: it closes its "
                                            "listeners the moment SIGTERM arrives";
  auto int_at = [](const Value* root, const char* pointer, int fallback) {
    const Value* v = At(root, pointer);
    return v && v->IsInt() ? v->GetInt() : fallback;
  };
  // Kubernetes' defaults where a field is absent.
  const absl::Duration noticed = absl::Seconds(int_at(c, "/readinessProbe/periodSeconds", 10) *
                                               int_at(c, "/readinessProbe/failureThreshold", 3));
  EXPECT_EQ(Str(c, "/readinessProbe/httpGet/path"), "/readyz");
  EXPECT_GE(delay, noticed) << "the listeners close before the readiness probe can fail";
  absl::Duration pre_stop = absl::ZeroDuration();
  if (const Value* hook = At(c, "/lifecycle/preStop")) {
    std::vector<std::string> command = Strings(hook, "/exec/command");
    int seconds = 0;
    ASSERT_TRUE(command.size() == 2 && command[0] == "sleep" &&
                absl::SimpleAtoi(command[1], &seconds))
        << "a preStop hook this test cannot time: " << Json(hook);
    pre_stop = absl::Seconds(seconds);
  }
  const absl::Duration grace = absl::Seconds(int_at(pod, "/terminationGracePeriodSeconds", 30));
  EXPECT_LE(pre_stop + delay + deadline, grace)
      << "preStop " << pre_stop << " + --shutdown-delay " << delay << " + --request-deadline "
      << deadline << " exceed terminationGracePeriodSeconds " << grace;
}

// The optional NetworkPolicy: the service's pods, ingress only; https open to every source (the
// control plane may sit outside the pod network), the plain metrics port (which names tenants'
// pods) only to labelled namespaces; both by the Deployment's own port names.
TEST_F(DeployTest, NetworkPolicyKeepsTheMetricsPortFromTenants) {
  const Value* policy = Get("network-policy").Find("NetworkPolicy", "gpu-tenancy");
  ASSERT_NE(policy, nullptr);
  EXPECT_EQ(Str(policy, "/metadata/namespace"), kNamespace);
  const Value* deployment = Get("base").Find("Deployment", "gpu-tenancy");
  ASSERT_NE(deployment, nullptr);

  const Value* selector = At(policy, "/spec/podSelector/matchLabels");
  ASSERT_NE(selector, nullptr);
  ASSERT_TRUE(selector->IsObject());
  EXPECT_FALSE(selector->ObjectEmpty());
  for (auto it = selector->MemberBegin(); it != selector->MemberEnd(); ++it) {
    std::string pointer =
        absl::StrCat("/spec/template/metadata/labels/",
                     absl::StrReplaceAll(it->name.GetString(), {{"~", "~0"}, {"/", "~1"}}));
    EXPECT_EQ(Str(deployment, pointer.c_str()), it->value.GetString()) << it->name.GetString();
  }
  EXPECT_EQ(Json(At(policy, "/spec/policyTypes")), "[\"Ingress\"]");

  std::set<std::string> container_ports;
  if (const Value* ports = At(deployment, "/spec/template/spec/containers/0/ports")) {
    for (const Value& p : ports->GetArray()) container_ports.insert(Str(&p, "/name"));
  }
  // port name -> the sources allowed ("*" for every source)
  std::map<std::string, std::set<std::string>> allowed;
  const Value* rules = At(policy, "/spec/ingress");
  ASSERT_NE(rules, nullptr);
  for (const Value& rule : rules->GetArray()) {
    std::set<std::string> from;
    if (const Value* peers = At(&rule, "/from")) {
      for (const Value& peer : peers->GetArray()) from.insert(Json(&peer));
    } else {
      from.insert("*");
    }
    const Value* ports = At(&rule, "/ports");
    ASSERT_NE(ports, nullptr) << "a rule without ports opens every port: " << Json(&rule);
    for (const Value& p : ports->GetArray()) {
      std::string name = Str(&p, "/port");
      EXPECT_TRUE(container_ports.count(name)) << name << " is not a container port name";
      allowed[name].insert(from.begin(), from.end());
    }
  }
  EXPECT_EQ(allowed["https"], std::set<std::string>{"*"});
  EXPECT_EQ(allowed["metrics"],
            std::set<std::string>{"{\"namespaceSelector\":{\"matchLabels\":{\"gpu-tenancy.io/"
                                  "metrics-reader\":\"true\"}}}"});
  EXPECT_EQ(allowed.size(), 2u);
}

TEST_F(DeployTest, PolicyConfigMapIsAValidCommentedPolicy) {
  const Value* cm = Get("base").Find("ConfigMap", "gpu-tenancy-policy");
  ASSERT_NE(cm, nullptr);
  std::string policy = Str(cm, "/data/policy.yaml");
  ASSERT_FALSE(policy.empty());
  absl::StatusOr<topology::Policy> loaded = common::LoadPolicy(policy);
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(absl::StrContains(policy, "\n# ")) << "the example policy should explain itself";
}

}  // namespace
