// The deployable artefacts: kustomize renders of manifests/ (base, the second scheduler, both
// overlays), the openssl scripts in certs/, the control-plane scheduler config and the
// Dockerfile. Everything runs offline with the kubectl on PATH (or $KUBECTL): `kubectl
// kustomize` of Debian's kubectl 1.20 (kustomize v2) and of current ones (v5) must both work.
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "common/yaml_json.h"
#include "gtest/gtest.h"
#include "rapidjson/pointer.h"
#include "test/support/serve_process.h"
#include "test/support/shell.h"

namespace {

namespace fs = std::filesystem;
using rapidjson::Value;
using testing_support::CommandResult;
using testing_support::RunShell;
using testing_support::ShellQuote;

constexpr char kNamespace[] = "gpu-tenancy-system";
constexpr char kService[] = "gpu-tenancy";
constexpr char kServiceHost[] = "gpu-tenancy.gpu-tenancy-system.svc";

std::string Source(const std::string& relative) {
  return std::string(GT_SOURCE_DIR) + "/" + relative;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string Kubectl() {
  const char* from_env = std::getenv("KUBECTL");
  return from_env && *from_env ? from_env : "kubectl";
}

// One `kubectl kustomize` render, parsed.
struct Render {
  std::string dir;
  std::string error;  // empty when the render parsed
  std::vector<rapidjson::Document> docs;

  const Value* Find(const std::string& kind, const std::string& name) const {
    for (const rapidjson::Document& d : docs) {
      if (common::StringOr(d, "kind") == kind &&
          common::StringOr(*common::FindMember(d, "metadata"), "name") == name) {
        return &d;
      }
    }
    return nullptr;
  }
  std::vector<const Value*> All(const std::string& kind) const {
    std::vector<const Value*> out;
    for (const rapidjson::Document& d : docs) {
      if (common::StringOr(d, "kind") == kind) out.push_back(&d);
    }
    return out;
  }
};

Render Kustomize(const std::string& dir) {
  Render r;
  r.dir = dir;
  CommandResult result = RunShell(absl::StrCat(Kubectl(), " kustomize ", ShellQuote(dir)));
  if (result.exit_code != 0) {
    r.error = absl::StrCat("`kubectl kustomize ", dir, "` failed (exit ", result.exit_code,
                           "): ", result.err,
                           result.exit_code == 127 ? " -- install kubectl (.ci/install-deps)" : "");
    return r;
  }
  absl::StatusOr<std::vector<rapidjson::Document>> docs = common::YamlDocumentsToJson(result.out);
  if (!docs.ok()) {
    r.error = absl::StrCat("render of ", dir, " is not YAML: ", docs.status().ToString());
    return r;
  }
  r.docs = *std::move(docs);
  return r;
}

// JSON-pointer lookups ("/spec/replicas") that never assert.
const Value* At(const Value* root, const char* pointer) {
  if (!root) return nullptr;
  return rapidjson::Pointer(pointer).Get(*root);
}
std::string Str(const Value* root, const char* pointer) {
  const Value* v = At(root, pointer);
  return v && v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : "";
}
std::vector<std::string> Strings(const Value* root, const char* pointer) {
  std::vector<std::string> out;
  const Value* v = At(root, pointer);
  if (!v || !v->IsArray()) return out;
  for (const Value& item : v->GetArray()) {
    if (item.IsString()) out.emplace_back(item.GetString(), item.GetStringLength());
  }
  return out;
}
std::string Json(const Value* v) { return v ? common::ToJson(*v) : "<missing>"; }

// The renders every test reads, made once: the base, the second scheduler, the cert-manager
// overlay, and the static-certs overlay after running certs/make-certs.sh and
// certs/render-ca-bundle.sh against a copy of manifests/ in a temporary directory.
class DeployTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char templ[] = "/tmp/gpu-tenancy-deploy-XXXXXX";
    work_ = new std::string(mkdtemp(templ) ? templ : "");
    ASSERT_FALSE(work_->empty());
    renders_ = new std::map<std::string, Render>();
    (*renders_)["base"] = Kustomize(Source("manifests/base"));
    (*renders_)["scheduler"] = Kustomize(Source("manifests/scheduler"));
    (*renders_)["cert-manager"] = Kustomize(Source("manifests/overlays/cert-manager"));
    (*renders_)["monitoring"] = Kustomize(Source("manifests/monitoring"));
    (*renders_)["network-policy"] = Kustomize(Source("manifests/network-policy"));

    // The static-certs overlay is rendered from a copy, so the source tree gets no keys.
    std::error_code ec;
    fs::copy(Source("manifests"), Manifests(), fs::copy_options::recursive, ec);
    ASSERT_FALSE(ec) << ec.message();
    fs::remove_all(Manifests() + "/overlays/static-certs/generated", ec);
    CommandResult make = RunShell(
        absl::StrCat("bash ", ShellQuote(Source("certs/make-certs.sh")), " ", ShellQuote(Certs())));
    ASSERT_EQ(make.exit_code, 0) << make.out << make.err;
    CommandResult render = RunShell(
        absl::StrCat("EXTENDER_URL=https://10.96.0.42:8443/extender bash ",
                     ShellQuote(Source("certs/render-ca-bundle.sh")), " ", ShellQuote(Certs()), " ",
                     ShellQuote(Manifests() + "/overlays/static-certs")));
    ASSERT_EQ(render.exit_code, 0) << render.out << render.err;
    (*renders_)["static-certs"] = Kustomize(Manifests() + "/overlays/static-certs");
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    if (work_ && !work_->empty()) fs::remove_all(*work_, ec);
    delete work_;
    work_ = nullptr;
    delete renders_;
    renders_ = nullptr;
  }

  static std::string Certs() { return *work_ + "/certs"; }
  static std::string Manifests() { return *work_ + "/manifests"; }
  static std::string CaBase64() { return absl::Base64Escape(ReadFile(Certs() + "/ca.crt")); }

  // The render, or a failed test naming why it is missing.
  static const Render& Get(const std::string& name) {
    const Render& r = renders_->at(name);
    EXPECT_EQ(r.error, "") << name;
    return r;
  }

  static std::string* work_;
  static std::map<std::string, Render>* renders_;
};

std::string* DeployTest::work_ = nullptr;
std::map<std::string, Render>* DeployTest::renders_ = nullptr;

TEST_F(DeployTest, EveryKustomizationRendersOffline) {
  for (const auto& [name, render] : *renders_) {
    SCOPED_TRACE(name);
    EXPECT_EQ(render.error, "");
    EXPECT_FALSE(render.docs.empty());
    for (const rapidjson::Document& d : render.docs) {
      EXPECT_FALSE(Str(&d, "/apiVersion").empty()) << Json(&d).substr(0, 200);
      EXPECT_FALSE(Str(&d, "/kind").empty()) << Json(&d).substr(0, 200);
      EXPECT_FALSE(Str(&d, "/metadata/name").empty()) << Json(&d).substr(0, 200);
    }
  }
}

TEST_F(DeployTest, OverlaysCarryTheWholeService) {
  // kind, name (namespace-scoped objects are all in gpu-tenancy-system)
  const std::vector<std::pair<std::string, std::string>> wanted = {
      {"Namespace", kNamespace},
      {"ServiceAccount", "gpu-tenancy"},
      {"ClusterRole", "gpu-tenancy"},
      {"ClusterRoleBinding", "gpu-tenancy"},
      {"Role", "gpu-tenancy-leader-election"},
      {"RoleBinding", "gpu-tenancy-leader-election"},
      {"Deployment", "gpu-tenancy"},
      {"PodDisruptionBudget", "gpu-tenancy"},
      {"Service", "gpu-tenancy"},
      {"ConfigMap", "gpu-tenancy-policy"},
      {"ValidatingWebhookConfiguration", "gpu-tenancy"},
      {"MutatingWebhookConfiguration", "gpu-tenancy"},
      {"ServiceAccount", "gpu-tenancy-scheduler"},
      {"Deployment", "gpu-tenancy-scheduler"},
  };
  for (const char* overlay : {"cert-manager", "static-certs"}) {
    SCOPED_TRACE(overlay);
    const Render& r = Get(overlay);
    for (const auto& [kind, name] : wanted) {
      const Value* obj = r.Find(kind, name);
      ASSERT_NE(obj, nullptr) << kind << " " << name;
      std::string ns = Str(obj, "/metadata/namespace");
      EXPECT_TRUE(ns.empty() || ns == kNamespace) << kind << " " << name << " in " << ns;
    }
    // Both overlays deliver the Secret the Deployment mounts: cert-manager through a
    // Certificate, static-certs as a Secret.
    bool secret = r.Find("Secret", "gpu-tenancy-tls") != nullptr;
    for (const Value* c : r.All("Certificate")) {
      secret |= Str(c, "/spec/secretName") == "gpu-tenancy-tls";
    }
    EXPECT_TRUE(secret) << "nothing provides Secret gpu-tenancy-tls";
  }
}

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
      {"", "nodes", "list"},
      {"", "nodes", "watch"},
      {"", "pods", "list"},
      {"", "pods", "watch"},
      {"", "pods", "patch"},
      {"", "namespaces", "list"},
      {"", "namespaces", "watch"},
      {"", "pods/binding", "create"},
      {"", "events", "create"},
      {"events.k8s.io", "events", "create"},
      {"resource.k8s.io", "resourceclaims", "list"},
      {"resource.k8s.io", "resourceclaims", "watch"},
  };
  for (const Case& c : cluster_wide) {
    EXPECT_TRUE(allows(role, c.group, c.resource, c.verb))
        << c.verb << " " << c.resource << " (group \"" << c.group << "\")";
  }
  for (const char* verb : {"get", "create", "update"}) {
    EXPECT_TRUE(allows(lease_role, "coordination.k8s.io", "leases", verb)) << verb << " leases";
  }
  // Least privilege: nothing writes nodes or deletes anything.
  EXPECT_FALSE(allows(role, "", "nodes", "update"));
  EXPECT_FALSE(allows(role, "", "pods", "delete"));
  EXPECT_FALSE(allows(role, "", "secrets", "get"));
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
                                                "--metrics-listen=0.0.0.0:8080"};
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

TEST_F(DeployTest, WebhooksFailClosedButNeverBlockTheControlPlane) {
  struct Hook {
    const char* kind;
    const char* name;
    const char* path;
  };
  const std::vector<Hook> hooks = {
      {"ValidatingWebhookConfiguration", "validate.gpu-tenancy.io", "/webhook/validate"},
      {"MutatingWebhookConfiguration", "mutate.gpu-tenancy.io", "/webhook/mutate"},
  };
  // Which namespaces the selector lets through, evaluated on each namespace's labels.
  struct Ns {
    std::string name;
    std::map<std::string, std::string> labels;
    bool called;
  };
  const std::vector<Ns> namespaces = {
      {"kube-system", {}, false},
      {kNamespace, {}, false},
      {"acme", {}, true},
      {"research", {{"gpu-tenancy.io/tenant", "bank"}}, true},
      {"legacy", {{"gpu-tenancy.io/webhook", "disabled"}}, false},
      {"kube-public", {}, true},
  };
  for (const char* render : {"base", "cert-manager", "static-certs"}) {
    for (const Hook& hook : hooks) {
      SCOPED_TRACE(absl::StrCat(render, " ", hook.kind));
      const Value* config = Get(render).Find(hook.kind, "gpu-tenancy");
      ASSERT_NE(config, nullptr);
      const Value* webhooks = At(config, "/webhooks");
      ASSERT_TRUE(webhooks && webhooks->IsArray() && webhooks->Size() == 1);
      const Value* w = &(*webhooks)[0];
      EXPECT_EQ(Str(w, "/name"), hook.name);
      EXPECT_EQ(Strings(w, "/admissionReviewVersions"), std::vector<std::string>{"v1"});
      EXPECT_EQ(Str(w, "/sideEffects"), "None");
      EXPECT_EQ(Str(w, "/failurePolicy"), "Fail");
      EXPECT_EQ(Str(w, "/matchPolicy"), "Equivalent");
      const Value* timeout = At(w, "/timeoutSeconds");
      ASSERT_TRUE(timeout && timeout->IsInt());
      EXPECT_GE(timeout->GetInt(), 1);
      EXPECT_LE(timeout->GetInt(), 10)
          << "a short timeout keeps a slow webhook from stalling writes";
      if (std::string(hook.kind) == "MutatingWebhookConfiguration") {
        EXPECT_EQ(Str(w, "/reinvocationPolicy"), "IfNeeded");
      }
      EXPECT_EQ(Str(w, "/clientConfig/service/namespace"), kNamespace);
      EXPECT_EQ(Str(w, "/clientConfig/service/name"), kService);
      EXPECT_EQ(Str(w, "/clientConfig/service/path"), hook.path);
      EXPECT_EQ(Json(At(w, "/clientConfig/service/port")), "8443");
      EXPECT_EQ(At(w, "/clientConfig/url"), nullptr);

      // Rules: pods (core v1) and DRA claims and claim templates, on CREATE at least.
      std::set<std::string> covered;
      const Value* rules = At(w, "/rules");
      ASSERT_TRUE(rules && rules->IsArray());
      for (const Value& rule : rules->GetArray()) {
        std::vector<std::string> ops = Strings(&rule, "/operations");
        if (std::find(ops.begin(), ops.end(), "CREATE") == ops.end()) continue;
        for (const std::string& group : Strings(&rule, "/apiGroups")) {
          for (const std::string& res : Strings(&rule, "/resources"))
            covered.insert(group + "/" + res);
        }
      }
      for (const char* want :
           {"/pods", "resource.k8s.io/resourceclaims", "resource.k8s.io/resourceclaimtemplates"}) {
        EXPECT_TRUE(covered.count(want))
            << want << " not covered; have " << absl::StrJoin(covered, ", ");
      }

      // namespaceSelector: matchExpressions only (matchLabels would opt namespaces in).
      const Value* selector = At(w, "/namespaceSelector");
      ASSERT_NE(selector, nullptr);
      EXPECT_EQ(At(selector, "/matchLabels"), nullptr);
      const Value* exprs = At(selector, "/matchExpressions");
      ASSERT_TRUE(exprs && exprs->IsArray());
      for (const Ns& ns : namespaces) {
        std::map<std::string, std::string> labels = ns.labels;
        labels["kubernetes.io/metadata.name"] = ns.name;  // set by kube-apiserver
        bool match = true;
        for (const Value& e : exprs->GetArray()) {
          std::string key = Str(&e, "/key"), op = Str(&e, "/operator");
          std::vector<std::string> values = Strings(&e, "/values");
          auto it = labels.find(key);
          bool in = it != labels.end() &&
                    std::find(values.begin(), values.end(), it->second) != values.end();
          if (op == "NotIn") {
            match &= !in;
          } else if (op == "In") {
            match &= in;
          } else if (op == "Exists") {
            match &= it != labels.end();
          } else if (op == "DoesNotExist") {
            match &= it == labels.end();
          } else {
            ADD_FAILURE() << "unknown operator " << op;
          }
        }
        EXPECT_EQ(match, ns.called) << "namespace " << ns.name;
      }
    }
  }
}

TEST_F(DeployTest, CertManagerOverlayIssuesAndInjects) {
  const Render& r = Get("cert-manager");
  const Value* serving = r.Find("Certificate", "gpu-tenancy-serving");
  ASSERT_NE(serving, nullptr);
  EXPECT_EQ(Str(serving, "/metadata/namespace"), kNamespace);
  EXPECT_EQ(Str(serving, "/spec/secretName"), "gpu-tenancy-tls");
  EXPECT_EQ(Str(serving, "/spec/privateKey/algorithm"), "ECDSA");
  std::vector<std::string> names = Strings(serving, "/spec/dnsNames");
  for (const std::string& want :
       {std::string(kService), absl::StrCat(kService, ".", kNamespace), std::string(kServiceHost),
        absl::StrCat(kServiceHost, ".cluster.local")}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  // The serving Issuer is a CA issuer (so the Secret carries ca.crt) backed by a CA Certificate.
  std::string issuer = Str(serving, "/spec/issuerRef/name");
  const Value* ca_issuer = r.Find("Issuer", issuer);
  ASSERT_NE(ca_issuer, nullptr) << issuer;
  std::string ca_secret = Str(ca_issuer, "/spec/ca/secretName");
  bool ca_cert = false;
  for (const Value* c : r.All("Certificate")) {
    ca_cert |= Str(c, "/spec/secretName") == ca_secret && Json(At(c, "/spec/isCA")) == "true";
  }
  EXPECT_TRUE(ca_cert) << "no isCA Certificate writes " << ca_secret;

  for (const char* kind : {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}) {
    SCOPED_TRACE(kind);
    const Value* config = r.Find(kind, "gpu-tenancy");
    ASSERT_NE(config, nullptr);
    const Value* annotations = At(config, "/metadata/annotations");
    ASSERT_NE(annotations, nullptr);
    EXPECT_EQ(common::StringOr(*annotations, "cert-manager.io/inject-ca-from"),
              absl::StrCat(kNamespace, "/gpu-tenancy-serving"));
    // cainjector owns caBundle: an applied value would fight it on every apply.
    EXPECT_EQ(At(config, "/webhooks/0/clientConfig/caBundle"), nullptr);
  }
}

TEST_F(DeployTest, CertScriptMakesAVerifiableServingCertificate) {
  CommandResult verify = RunShell(
      absl::StrCat("openssl verify -CAfile ", ShellQuote(Certs() + "/ca.crt"), " ",
                   ShellQuote(Certs() + "/tls.crt"), " ", ShellQuote(Certs() + "/client.crt")));
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;

  CommandResult sans = RunShell(absl::StrCat("openssl x509 -noout -ext subjectAltName -in ",
                                             ShellQuote(Certs() + "/tls.crt")));
  ASSERT_EQ(sans.exit_code, 0) << sans.err;
  std::set<std::string> got;
  for (absl::string_view line : absl::StrSplit(sans.out, '\n')) {
    for (absl::string_view entry : absl::StrSplit(line, ',')) {
      entry = absl::StripAsciiWhitespace(entry);
      if (absl::StartsWith(entry, "DNS:") || absl::StartsWith(entry, "IP Address:")) {
        got.insert(std::string(entry));
      }
    }
  }
  const std::set<std::string> want = {
      "DNS:gpu-tenancy",
      "DNS:gpu-tenancy.gpu-tenancy-system",
      "DNS:gpu-tenancy.gpu-tenancy-system.svc",
      "DNS:gpu-tenancy.gpu-tenancy-system.svc.cluster.local",
      "DNS:localhost",
      "IP Address:127.0.0.1",
      "IP Address:0:0:0:0:0:0:0:1",
  };
  EXPECT_EQ(got, want) << sans.out;

  // ECDSA P-256 for the CA and the serving key; the CA really is a CA.
  for (const char* cert : {"ca.crt", "tls.crt"}) {
    CommandResult text =
        RunShell(absl::StrCat("openssl x509 -noout -text -in ", ShellQuote(Certs() + "/" + cert)));
    EXPECT_TRUE(absl::StrContains(text.out, "NIST CURVE: P-256") ||
                absl::StrContains(text.out, "prime256v1"))
        << cert;
  }
  CommandResult ca = RunShell(absl::StrCat(
      "openssl x509 -noout -ext basicConstraints,keyUsage -in ", ShellQuote(Certs() + "/ca.crt")));
  EXPECT_TRUE(absl::StrContains(ca.out, "CA:TRUE")) << ca.out;
  CommandResult leaf = RunShell(absl::StrCat("openssl x509 -noout -ext extendedKeyUsage -in ",
                                             ShellQuote(Certs() + "/tls.crt")));
  EXPECT_TRUE(absl::StrContains(leaf.out, "TLS Web Server Authentication")) << leaf.out;

  // Keys are private to their owner.
  for (const char* key : {"ca.key", "tls.key", "client.key"}) {
    fs::perms p = fs::status(Certs() + "/" + key).permissions();
    EXPECT_EQ(p & (fs::perms::group_all | fs::perms::others_all), fs::perms::none) << key;
  }
}

TEST_F(DeployTest, RerunningTheCertScriptRotatesUnderTheSameCa) {
  char templ[] = "/tmp/gpu-tenancy-rotate-XXXXXX";
  ASSERT_NE(mkdtemp(templ), nullptr);
  std::string dir = templ;
  std::string script =
      absl::StrCat("bash ", ShellQuote(Source("certs/make-certs.sh")), " ", ShellQuote(dir));
  ASSERT_EQ(RunShell(script).exit_code, 0);
  std::string ca = ReadFile(dir + "/ca.crt");
  std::string serving = ReadFile(dir + "/tls.crt");
  ASSERT_EQ(RunShell(script).exit_code, 0);
  EXPECT_EQ(ReadFile(dir + "/ca.crt"), ca)
      << "the CA must survive a rotation (caBundle stays valid)";
  EXPECT_NE(ReadFile(dir + "/tls.crt"), serving);
  EXPECT_EQ(RunShell(absl::StrCat("openssl verify -CAfile ", ShellQuote(dir + "/ca.crt"), " ",
                                  ShellQuote(dir + "/tls.crt")))
                .exit_code,
            0);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_F(DeployTest, StaticCertsOverlayCarriesTheCaBundleAfterRendering) {
  const Render& r = Get("static-certs");
  std::string ca = CaBase64();
  ASSERT_FALSE(ca.empty());
  for (const char* kind : {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}) {
    SCOPED_TRACE(kind);
    const Value* config = r.Find(kind, "gpu-tenancy");
    ASSERT_NE(config, nullptr);
    EXPECT_EQ(Str(config, "/webhooks/0/clientConfig/caBundle"), ca);
    // The patch merged into the webhook by name instead of replacing it.
    EXPECT_EQ(Str(config, "/webhooks/0/failurePolicy"), "Fail");
    EXPECT_EQ(Str(config, "/webhooks/0/clientConfig/service/name"), kService);
  }
  const Value* secret = r.Find("Secret", "gpu-tenancy-tls");
  ASSERT_NE(secret, nullptr);
  EXPECT_EQ(Str(secret, "/type"), "kubernetes.io/tls");
  EXPECT_EQ(Str(secret, "/metadata/namespace"), kNamespace);
  for (const char* file : {"tls.crt", "tls.key", "ca.crt"}) {
    std::string pointer = absl::StrCat("/data/", file);
    // kustomize v5 folds long base64 values over lines; the API server's decoder skips them.
    EXPECT_EQ(absl::StrReplaceAll(Str(secret, pointer.c_str()), {{"\n", ""}}),
              absl::Base64Escape(ReadFile(Certs() + "/" + file)))
        << file;
  }
  // The second scheduler's config carries the same CA as caData.
  std::string config_text;
  for (const Value* cm : r.All("ConfigMap")) {
    if (absl::StartsWith(Str(cm, "/metadata/name"), "gpu-tenancy-scheduler-config")) {
      config_text = Str(cm, "/data/config.yaml");
    }
  }
  absl::StatusOr<rapidjson::Document> config = common::YamlToJson(config_text);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(Str(&*config, "/extenders/0/tlsConfig/caData"), ca);
  EXPECT_EQ(At(&*config, "/extenders/0/tlsConfig/caFile"), nullptr);

  // Private keys never reach git: the generated overlay and certs/out are ignored.
  if (RunShell(absl::StrCat("git -C ", ShellQuote(GT_SOURCE_DIR), " rev-parse")).exit_code == 0) {
    for (const char* path : {"manifests/overlays/static-certs/generated/tls.key",
                             "manifests/overlays/static-certs/generated/ca-bundle.yaml",
                             "certs/out/ca.key", "certs/out/tls.crt", "anywhere/else.key"}) {
      EXPECT_EQ(RunShell(absl::StrCat("git -C ", ShellQuote(GT_SOURCE_DIR), " check-ignore -q ",
                                      ShellQuote(path)))
                    .exit_code,
                0)
          << path << " is not ignored by git";
    }
  }
}

// What every KubeSchedulerConfiguration here must say about the extender.
void ExpectExtenderWiring(const Value* config, const std::string& url) {
  EXPECT_EQ(Str(config, "/apiVersion"), "kubescheduler.config.k8s.io/v1");
  EXPECT_EQ(Str(config, "/kind"), "KubeSchedulerConfiguration");
  const Value* extenders = At(config, "/extenders");
  ASSERT_TRUE(extenders && extenders->IsArray() && extenders->Size() == 1);
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
    EXPECT_TRUE(absl::StartsWith(name, "nvidia.com/")) << name;
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

TEST_F(DeployTest, DockerfileRunsTheBinaryAsNonRootWithItsLibraries) {
  std::string dockerfile = ReadFile(Source("Dockerfile"));
  ASSERT_FALSE(dockerfile.empty());
  EXPECT_TRUE(absl::StrContains(dockerfile, "FROM debian:bookworm AS build"));
  size_t runtime = dockerfile.find("FROM debian:bookworm-slim");
  ASSERT_NE(runtime, std::string::npos) << "multi-stage: a slim runtime stage";
  std::string runtime_stage = dockerfile.substr(runtime);
  EXPECT_TRUE(absl::StrContains(runtime_stage, "USER 65532:65532"));
  EXPECT_TRUE(absl::StrContains(runtime_stage, "COPY --from=build"));

  // Every shared library the binary links directly comes from a package the runtime stage
  // installs (or that bookworm-slim already has), so the image starts.
  // One dpkg query for all of them (each query reads the whole package database).
  CommandResult packages = RunShell(absl::StrCat(
      "bin=", ShellQuote(GT_BINARY), "; libs=$(ldd \"$bin\"); paths=(); ",
      "for so in $(readelf -d \"$bin\" | sed -n 's/.*Shared library: \\[\\(.*\\)\\]/\\1/p'); do ",
      "  real=$(readlink -f \"$(awk -v s=\"$so\" '$1==s {print $3}' <<<\"$libs\")\"); ",
      "  paths+=(\"$real\" \"${real#/usr}\"); ", "done; ",
      "found=$(dpkg -S \"${paths[@]}\" 2>/dev/null || true); ",
      "for ((i = 0; i < ${#paths[@]}; i += 2)); do ",
      "  grep -qF -e \"${paths[i]}\" -e \": ${paths[i+1]}\" <<<\"$found\" || echo "
      "\"unknown:${paths[i]}\"; ",
      "done; ", "cut -d: -f1 <<<\"$found\" | sort -u"));
  if (packages.exit_code != 0 || packages.out.empty()) {
    GTEST_SKIP() << "cannot map libraries to Debian packages here: " << packages.err;
  }
  const std::set<std::string> in_slim = {"libc6", "libstdc++6", "libgcc-s1"};
  for (absl::string_view package : absl::StrSplit(packages.out, '\n', absl::SkipEmpty())) {
    std::string p(package);
    EXPECT_NE(p, "unknown") << packages.out;
    if (in_slim.count(p)) continue;
    EXPECT_TRUE(absl::StrContains(runtime_stage, absl::StrCat(" ", p, " ")) ||
                absl::StrContains(runtime_stage, absl::StrCat(" ", p, "\n")))
        << "the runtime stage does not install " << p;
  }
}

// The Grafana dashboard: a ConfigMap Grafana's sidecar picks up, whose every query reads
// metrics (and labels) that a running gpu-tenancy really exports.
TEST_F(DeployTest, DashboardQueriesReadMetricsTheServiceExports) {
  const Value* map = Get("monitoring").Find("ConfigMap", "gpu-tenancy-dashboard");
  ASSERT_NE(map, nullptr);
  EXPECT_EQ(Str(map, "/metadata/labels/grafana_dashboard"), "1");
  EXPECT_EQ(Str(map, "/metadata/namespace"), kNamespace);
  absl::StatusOr<rapidjson::Document> dashboard =
      common::ParseJson(Str(map, "/data/gpu-tenancy-dashboard.json"));
  ASSERT_TRUE(dashboard.ok()) << dashboard.status();

  testing_support::TempDir dir;
  absl::StatusOr<std::unique_ptr<testing_support::ServeProcess>> serve =
      testing_support::ServeProcess::Start({"--demo", "--audit-log", dir.File("audit.jsonl")});
  ASSERT_TRUE(serve.ok()) << serve.status();
  std::string scrape = (*serve)->Get("/metrics").body;
  ASSERT_NE(scrape.find("gpu_tenancy_tenant_pods"), std::string::npos);

  const std::regex metric_re("gpu_tenancy_[a-z_]+");
  const std::regex grouped_re(R"(by \(([a-z_, ]+)\) \((?:rate\(|increase\()?(gpu_tenancy_[a-z_]+))");
  std::set<std::string> titles;
  bool per_tenant = false, per_pool = false;
  for (const Value& panel : At(&*dashboard, "/panels")->GetArray()) {
    if (Str(&panel, "/type") == "row") continue;
    std::string title = Str(&panel, "/title");
    SCOPED_TRACE(title);
    EXPECT_FALSE(title.empty());
    EXPECT_TRUE(titles.insert(title).second) << "duplicate panel title";
    EXPECT_EQ(Str(&panel, "/datasource/uid"), "${datasource}");
    const Value* targets = At(&panel, "/targets");
    ASSERT_TRUE(targets && targets->IsArray() && !targets->Empty());
    for (const Value& target : targets->GetArray()) {
      std::string expr = Str(&target, "/expr");
      per_tenant |= absl::StrContains(expr, "by (tenant");
      per_pool |= absl::StrContains(expr, "by (pool");
      for (std::sregex_iterator it(expr.begin(), expr.end(), metric_re), end; it != end; ++it) {
        std::string name = it->str();
        for (const char* suffix : {"_bucket", "_sum", "_count"}) {
          if (absl::EndsWith(name, suffix) &&
              absl::StrContains(scrape, absl::StrCat("# TYPE ", absl::StripSuffix(name, suffix), " histogram"))) {
            name = std::string(absl::StripSuffix(name, suffix));
          }
        }
        EXPECT_TRUE(absl::StrContains(scrape, absl::StrCat("# TYPE ", name, " ")))
            << expr << ": " << name << " is not exported";
      }
      // Grouping labels exist on the series they group (checked where the demo has samples).
      for (std::sregex_iterator it(expr.begin(), expr.end(), grouped_re), end; it != end; ++it) {
        std::string metric = (*it)[2].str();
        std::vector<std::string> samples;
        for (absl::string_view line : absl::StrSplit(scrape, '\n')) {
          if (absl::StartsWith(line, absl::StrCat(metric, "{"))) samples.emplace_back(line);
        }
        if (samples.empty()) continue;
        for (absl::string_view label : absl::StrSplit((*it)[1].str(), ", ")) {
          EXPECT_TRUE(absl::StrContains(samples.front(), absl::StrCat(label, "=\"")))
              << expr << ": " << metric << " has no label " << label << ": " << samples.front();
        }
      }
    }
  }
  EXPECT_TRUE(per_tenant);
  EXPECT_TRUE(per_pool);
  for (const char* variable : {"datasource", "tenant", "pool"}) {
    bool found = false;
    for (const Value& v : At(&*dashboard, "/templating/list")->GetArray()) found |= Str(&v, "/name") == variable;
    EXPECT_TRUE(found) << variable;
  }
}

}  // namespace
