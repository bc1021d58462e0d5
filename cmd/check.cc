// gpu-tenancy check: the admission webhook's rules, offline, over manifest files. Each object goes
// through the mutating webhook, then (with the patch applied, as the API server does) through the
// validating webhook, and the outcome is printed the way kubectl would show it:
//
//   Warning: <text>                                          (stderr, one per warning)
//   Error from server (Forbidden): error when creating "FILE": admission webhook
//       "validate.gpu-tenancy.io" denied the request: <message>   (stderr, one line)
//   pod/NAME allowed                                         (stdout)
//
// Workloads (Deployment, StatefulSet, DaemonSet, ReplicaSet, ReplicationController, Job, CronJob)
// are checked through their pod template, as the pods they would create. Namespace objects in the
// manifests lend their labels to later objects (tenant selectors read them); --namespace-labels
// gives or overrides them. Exit code: 1 when anything is denied, 2 for usage or parse errors.
#include "cmd/check.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/inputs.h"
#include "common/config_loader.h"
#include "common/flag_table.h"
#include "common/json.h"
#include "common/yaml_json.h"
#include "webhook/json_patch.h"
#include "webhook/review.h"

namespace cmd {
namespace {

const common::FlagTable kCheckFlags{
    {"gpu-tenancy check (--policy FILE | --demo) [--namespace NS]\n"
     "                         [--namespace-labels NS=key=value,key=value ...]\n"
     "                         [--cluster-file FILE] MANIFEST..."},
    "Runs the admission webhook's rules over YAML/JSON manifests (multi-document; '-' is\n"
    "stdin) and prints what kubectl would show. Exit 1 if anything is denied.",
    {{"policy", "FILE", "the tenancy policy the webhook runs with"},
     {"demo", "", "the embedded demo policy"},
     {"namespace", "NS", "the namespace of manifests that name none (default \"default\")", 'n'},
     {"namespace-labels", "NS=k=v,...",
      "a namespace's labels, which tenant selectors match (repeatable)"},
     {"cluster-file", "FILE",
      "kubectl get namespaces,nodes,pods -A -o json: tenant quotas are\n"
      "checked against what each tenant holds there"}}};

// "team-a=gpu-tenancy.io/tenant=bank,env=prod"
absl::Status ParseNamespaceLabels(absl::string_view flag, NamespaceLabels& out) {
  size_t eq = flag.find('=');
  if (eq == absl::string_view::npos || eq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--namespace-labels ", flag, ": expected NS=key=value,..."));
  }
  topology::Labels& labels = out[std::string(flag.substr(0, eq))];
  for (absl::string_view pair : absl::StrSplit(flag.substr(eq + 1), ',', absl::SkipEmpty())) {
    size_t k = pair.find('=');
    if (k == absl::string_view::npos || k == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--namespace-labels ", flag, ": \"", pair, "\" is not key=value"));
    }
    labels.insert_or_assign(std::string(pair.substr(0, k)), std::string(pair.substr(k + 1)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<rapidjson::Document>> ReadManifests(const std::string& path) {
  std::string text;
  if (path == "-") {
    std::ostringstream buffer;
    buffer << std::cin.rdbuf();
    text = buffer.str();
  } else {
    ASSIGN_OR_RETURN(text, ReadFile(path));
  }
  absl::string_view trimmed = absl::StripLeadingAsciiWhitespace(text);
  std::vector<rapidjson::Document> docs;
  if (!trimmed.empty() && (trimmed[0] == '{' || trimmed[0] == '[')) {
    ASSIGN_OR_RETURN(rapidjson::Document doc, common::ParseJson(text));
    docs.push_back(std::move(doc));
  } else {
    ASSIGN_OR_RETURN(docs, common::YamlDocumentsToJson(text));
  }
  return docs;
}

// The pod template of a workload, or nullptr for kinds that have none.
const common::JsonValue* PodTemplate(const common::JsonValue& object, absl::string_view kind) {
  const common::JsonValue* spec = common::FindNonNull(object, "spec");
  if (!spec) return nullptr;
  if (kind == "CronJob") {
    const common::JsonValue* job = common::FindNonNull(*spec, "jobTemplate");
    spec = job ? common::FindNonNull(*job, "spec") : nullptr;
    if (!spec) return nullptr;
  }
  return common::FindNonNull(*spec, "template");
}

bool IsWorkload(absl::string_view kind) {
  return kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet" ||
         kind == "ReplicaSet" || kind == "ReplicationController" || kind == "Job" ||
         kind == "CronJob";
}

class Checker {
 public:
  // `cluster`: what tenants hold, for their quotas; null to leave quotas to the scheduler.
  Checker(const topology::Policy& policy, std::string default_namespace, NamespaceLabels labels,
          const topology::ClusterSnapshot* cluster)
      : policy_(policy),
        default_namespace_(std::move(default_namespace)),
        flag_labels_(std::move(labels)),
        cluster_(cluster) {}

  // Returns false for an object that could not be checked (reported on stderr).
  bool Check(const std::string& file, const common::JsonValue& object) {
    if (!object.IsObject()) return Error(file, "", "expected an object");
    absl::string_view kind = common::StringOr(object, "kind");
    const common::JsonValue* items = common::FindNonNull(object, "items");
    if (absl::EndsWith(kind, "List") && items && items->IsArray()) {
      bool ok = true;
      for (const common::JsonValue& item : items->GetArray()) ok = Check(file, item) && ok;
      return ok;
    }
    if (kind.empty()) return Error(file, "", "object has no kind");
    const common::JsonValue* meta = common::FindNonNull(object, "metadata");
    std::string name(meta ? common::StringOr(*meta, "name", common::StringOr(*meta, "generateName"))
                          : "");
    std::string ns(meta ? common::StringOr(*meta, "namespace") : "");
    if (ns.empty()) ns = default_namespace_;
    const std::string display = absl::StrCat(absl::AsciiStrToLower(kind), "/", name);

    if (kind == "Namespace") {
      topology::Labels labels;
      if (const common::JsonValue* l = meta ? common::FindNonNull(*meta, "labels") : nullptr;
          l && l->IsObject()) {
        for (auto it = l->MemberBegin(); it != l->MemberEnd(); ++it) {
          if (it->value.IsString()) {
            labels.insert_or_assign(std::string(common::AsStringView(it->name)),
                                    std::string(common::AsStringView(it->value)));
          }
        }
      }
      manifest_labels_[name] = std::move(labels);
      return Allowed(display);
    }

    // The object the webhook would see: the pod itself, or a workload's pod.
    rapidjson::Document target;
    webhook::ObjectRequest request;
    request.namespace_name = ns;
    if (IsWorkload(kind)) {
      const common::JsonValue* tmpl = PodTemplate(object, kind);
      if (!tmpl || !tmpl->IsObject())
        return Error(file, display, "no pod template (spec.template)");
      BuildPod(*tmpl, name, ns, target);
      request.group = "";
      request.version = "v1";
      request.kind = "Pod";
    } else {
      target.CopyFrom(object, target.GetAllocator());
      absl::string_view api_version = common::StringOr(object, "apiVersion");
      size_t slash = api_version.find('/');
      request.group =
          slash == absl::string_view::npos ? "" : std::string(api_version.substr(0, slash));
      request.version = std::string(
          slash == absl::string_view::npos ? api_version : api_version.substr(slash + 1));
      request.kind = std::string(kind);
      // A pod without a namespace lands in the default (or --namespace) one.
      auto m = target.FindMember("metadata");
      if (m != target.MemberEnd() && m->value.IsObject() &&
          !common::FindNonNull(m->value, "namespace")) {
        m->value.RemoveMember("namespace");  // a null one
        m->value.AddMember("namespace", rapidjson::Value(ns.c_str(), target.GetAllocator()),
                           target.GetAllocator());
      }
    }
    const topology::Labels& labels = LabelsOf(ns);

    request.object = &target;
    if (cluster_) {
      // What the live webhook reads besides the object: DRA classes and devices, the nodes.
      request.dra = &cluster_->dra();
      request.snapshot = cluster_;
    }
    absl::StatusOr<webhook::ObjectOutcome> mutated =
        webhook::ReviewObject(request, webhook::ReviewKind::kMutate, policy_, labels);
    if (!mutated.ok()) return Error(file, display, mutated.status().message());
    std::vector<std::string> warnings = mutated->warnings;
    if (!mutated->patch.empty()) {
      absl::Status applied = webhook::ApplyPatch(mutated->patch.ops(), target);
      if (!applied.ok()) {
        return Error(file, display, absl::StrCat("applying the mutation: ", applied.message()));
      }
    }
    request.object = &target;
    topology::QuotaUsage held;
    if (topology::TenantRef tenant = topology::ResolveTenant(policy_, ns, labels);
        cluster_ && tenant.tenant && !tenant.tenant->quota.empty()) {
      held = topology::TenantUsage(*cluster_, policy_, tenant.name);
      request.tenant_held = &held;
    }
    absl::StatusOr<webhook::ObjectOutcome> validated =
        webhook::ReviewObject(request, webhook::ReviewKind::kValidate, policy_, labels);
    if (!validated.ok()) return Error(file, display, validated.status().message());
    for (const std::string& w : validated->warnings) {
      if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
    }
    for (const std::string& w : warnings) std::cerr << "Warning: " << w << std::endl;
    if (!validated->allowed) {
      ++denied_;
      std::cerr << "Error from server (Forbidden): error when creating \"" << file
                << "\": admission webhook \"" << webhook::kValidatingWebhookName
                << "\" denied the request: " << validated->message << std::endl;
      return true;
    }
    return Allowed(display);
  }

  int denied() const { return denied_; }

 private:
  bool Allowed(const std::string& display) {
    std::cout << display << " allowed" << std::endl;
    return true;
  }

  bool Error(const std::string& file, absl::string_view display, absl::string_view message) {
    std::cerr << "error: " << file << ": " << (display.empty() ? "" : absl::StrCat(display, ": "))
              << message << std::endl;
    return false;
  }

  const topology::Labels& LabelsOf(const std::string& ns) {
    auto flag = flag_labels_.find(ns);
    if (flag != flag_labels_.end()) return flag->second;
    auto manifest = manifest_labels_.find(ns);
    if (manifest != manifest_labels_.end()) return manifest->second;
    return empty_;
  }

  // A Pod as a workload controller would create it from its template.
  static void BuildPod(const common::JsonValue& tmpl, const std::string& name,
                       const std::string& ns, rapidjson::Document& pod) {
    auto& alloc = pod.GetAllocator();
    pod.SetObject();
    pod.AddMember("apiVersion", "v1", alloc);
    pod.AddMember("kind", "Pod", alloc);
    rapidjson::Value meta(rapidjson::kObjectType);
    if (const common::JsonValue* m = common::FindNonNull(tmpl, "metadata"); m && m->IsObject()) {
      meta.CopyFrom(*m, alloc);
    }
    meta.RemoveMember("name");
    meta.RemoveMember("namespace");
    meta.AddMember("name", rapidjson::Value(name.c_str(), alloc), alloc);
    meta.AddMember("namespace", rapidjson::Value(ns.c_str(), alloc), alloc);
    pod.AddMember("metadata", meta, alloc);
    rapidjson::Value spec(rapidjson::kObjectType);
    if (const common::JsonValue* s = common::FindNonNull(tmpl, "spec"); s && s->IsObject()) {
      spec.CopyFrom(*s, alloc);
    }
    pod.AddMember("spec", spec, alloc);
  }

  const topology::Policy& policy_;
  std::string default_namespace_;
  NamespaceLabels flag_labels_;
  NamespaceLabels manifest_labels_;
  topology::Labels empty_;
  const topology::ClusterSnapshot* cluster_;
  int denied_ = 0;
};

}  // namespace

const common::FlagTable& CheckFlags() { return kCheckFlags; }

absl::StatusOr<CheckOptions> ParseCheckOptions(const ParsedFlags& flags) {
  CheckOptions out;
  ASSIGN_OR_RETURN(out.inputs, ParseInputOptions(flags));
  if (out.inputs.policy_file.empty() && !out.inputs.demo) {
    return absl::InvalidArgumentError("--policy FILE (or --demo) is required");
  }
  out.manifests = flags.positional;
  if (out.manifests.empty()) return absl::InvalidArgumentError("give at least one MANIFEST");
  if (auto it = flags.values.find("namespace-labels"); it != flags.values.end()) {
    for (const std::string& value : it->second) {
      RETURN_IF_ERROR(ParseNamespaceLabels(value, out.namespace_labels));
    }
  }
  if (flags.Has("namespace")) {
    ASSIGN_OR_RETURN(out.default_namespace, NonEmptyFlag(flags, "namespace", "a namespace"));
  }
  return out;
}

int RunCheck(const std::vector<std::string>& args) {
  ParsedFlags flags;
  if (std::optional<int> exit_code = kCheckFlags.ParseOrExit(args, flags)) return *exit_code;
  absl::StatusOr<CheckOptions> options = ParseCheckOptions(flags);
  if (!options.ok()) return kCheckFlags.Refuse(options.status());
  absl::StatusOr<topology::Policy> policy = ReadPolicy(options->inputs);
  if (!policy.ok()) return Fail(policy.status());
  std::optional<topology::ClusterSnapshot> cluster;
  if (!options->inputs.cluster_file.empty()) {
    absl::StatusOr<topology::ClusterData> data = ReadCluster(options->inputs);
    if (!data.ok()) return kCheckFlags.Refuse(data.status());
    cluster = topology::BuildSnapshot(*data, common::BuiltinCatalog(), *policy);
  }
  Checker checker(*policy, options->default_namespace, std::move(options->namespace_labels),
                  cluster ? &*cluster : nullptr);
  bool ok = true;
  for (const std::string& file : options->manifests) {
    absl::StatusOr<std::vector<rapidjson::Document>> docs = ReadManifests(file);
    if (!docs.ok()) {
      std::cerr << "error: " << file << ": " << docs.status().message() << std::endl;
      ok = false;
      continue;
    }
    for (const rapidjson::Document& doc : *docs) {
      if (doc.IsNull()) continue;
      ok = checker.Check(file, doc) && ok;
    }
  }
  if (!ok) return 2;
  return checker.denied() > 0 ? 1 : 0;
}

}  // namespace cmd
