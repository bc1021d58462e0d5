#include "wire/preemption_codec.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace wire {

using common::AsStringView;
using common::FindMember;
using common::FindMemberIgnoreCase;
using common::JsonValue;
using common::ParseJsonInPlace;
namespace {

absl::StatusOr<absl::string_view> PodUid(const JsonValue& pod, const std::string& path) {
  const JsonValue* meta = FindMember(pod, "metadata");
  const JsonValue* uid = meta ? FindMember(*meta, "uid") : nullptr;
  if (!uid || !uid->IsString() || uid->GetStringLength() == 0) {
    return absl::InvalidArgumentError(path + ".metadata.uid: missing");
  }
  return AsStringView(*uid);
}

// One node's entry of either victim map: {"Pods": [...], "NumPDBViolations": n}.
absl::Status ParseNodeVictims(const JsonValue& entry, bool meta, const std::string& path,
                              PreemptionArgs::Node& node) {
  if (!entry.IsObject()) return absl::InvalidArgumentError(path + ": expected an object");
  if (const JsonValue* n = FindMemberIgnoreCase(entry, "NumPDBViolations"); n && !n->IsNull()) {
    if (!n->IsInt64())
      return absl::InvalidArgumentError(path + ".NumPDBViolations: expected an integer");
    node.pdb_violations = n->GetInt64();
  }
  const JsonValue* pods = FindMemberIgnoreCase(entry, "Pods");
  if (!pods || pods->IsNull()) return absl::OkStatus();
  if (!pods->IsArray()) return absl::InvalidArgumentError(path + ".Pods: expected an array");
  for (rapidjson::SizeType i = 0; i < pods->Size(); ++i) {
    const JsonValue& pod = (*pods)[i];
    std::string pod_path = absl::StrCat(path, ".Pods[", i, "]");
    if (!pod.IsObject()) return absl::InvalidArgumentError(pod_path + ": expected an object");
    if (meta) {
      const JsonValue* uid = FindMemberIgnoreCase(pod, "UID");
      if (!uid || !uid->IsString() || uid->GetStringLength() == 0) {
        return absl::InvalidArgumentError(pod_path + ".UID: missing");
      }
      node.uids.push_back(AsStringView(*uid));
    } else {
      ASSIGN_OR_RETURN(absl::string_view uid, PodUid(pod, pod_path));
      node.uids.push_back(uid);
      node.pods.push_back(&pod);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PreemptionArgs> ParsePreemptionArgs(absl::string_view body) {
  PreemptionArgs args;
  args.doc = std::make_unique<rapidjson::Document>();
  {
    ASSIGN_OR_RETURN(rapidjson::Document parsed, ParseJsonInPlace(body));
    args.doc->Swap(parsed);
  }
  const rapidjson::Document& doc = *args.doc;
  if (!doc.IsObject()) {
    return absl::InvalidArgumentError("ExtenderPreemptionArgs: expected a JSON object");
  }
  const JsonValue* pod = FindMemberIgnoreCase(doc, "Pod");
  if (!pod || !pod->IsObject()) {
    return absl::InvalidArgumentError("ExtenderPreemptionArgs.Pod: missing or not an object");
  }
  args.pod = pod;
  const JsonValue* victims = nullptr;
  absl::string_view key;
  for (absl::string_view candidate :
       {"NodeNameToMetaVictims", "NodeNameToVictims", "nodeToVictims"}) {
    const JsonValue* v = FindMemberIgnoreCase(doc, candidate);
    if (v && !v->IsNull()) {
      victims = v;
      key = candidate;
      break;
    }
  }
  if (!victims) {
    return absl::InvalidArgumentError(
        "ExtenderPreemptionArgs: NodeNameToMetaVictims and NodeNameToVictims are both missing or "
        "null");
  }
  args.meta = key == "NodeNameToMetaVictims";
  std::string path = absl::StrCat("ExtenderPreemptionArgs.", key);
  if (!victims->IsObject()) return absl::InvalidArgumentError(path + ": expected an object");
  for (auto it = victims->MemberBegin(); it != victims->MemberEnd(); ++it) {
    PreemptionArgs::Node node;
    node.name = AsStringView(it->name);
    if (!it->value.IsNull()) {
      RETURN_IF_ERROR(ParseNodeVictims(it->value, args.meta,
                                       absl::StrCat(path, "[\"", node.name, "\"]"), node));
    }
    args.nodes.push_back(std::move(node));
  }
  std::sort(args.nodes.begin(), args.nodes.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  // A JSON object with a repeated key would give one node two answers.
  for (size_t i = 1; i < args.nodes.size(); ++i) {
    if (args.nodes[i].name == args.nodes[i - 1].name) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": node \"", args.nodes[i].name, "\" appears twice"));
    }
  }
  return args;
}

std::string EncodePreemptionResult(const std::vector<NodeVictims>& nodes) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  auto str = [&](absl::string_view s) {
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  };
  w.StartObject();
  w.Key("NodeNameToMetaVictims");
  w.StartObject();
  for (const NodeVictims& n : nodes) {
    str(n.node);
    w.StartObject();
    w.Key("Pods");
    w.StartArray();
    for (const std::string& uid : n.uids) {
      w.StartObject();
      w.Key("UID");
      str(uid);
      w.EndObject();
    }
    w.EndArray();
    w.Key("NumPDBViolations");
    w.Int64(n.pdb_violations);
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace wire
