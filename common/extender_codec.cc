#include "common/extender_codec.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace common {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void Key(Writer& w, absl::string_view key) {
  w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
}
void String(Writer& w, absl::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

void StringMap(Writer& w, absl::string_view key, const std::map<std::string, std::string>& m) {
  Key(w, key);
  w.StartObject();
  for (const auto& [k, v] : m) {
    Key(w, k);
    String(w, v);
  }
  w.EndObject();
}

std::string Take(rapidjson::StringBuffer& buffer) {
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace

absl::StatusOr<ExtenderArgs> ParseExtenderArgs(absl::string_view body) {
  ExtenderArgs args;
  args.doc = std::make_unique<rapidjson::Document>();
  {
    ASSIGN_OR_RETURN(rapidjson::Document parsed, ParseJson(body));
    args.doc->Swap(parsed);
  }
  const rapidjson::Document& doc = *args.doc;
  if (!doc.IsObject()) return absl::InvalidArgumentError("ExtenderArgs: expected a JSON object");
  const JsonValue* pod = FindMemberIgnoreCase(doc, "Pod");
  if (!pod || pod->IsNull()) return absl::InvalidArgumentError("ExtenderArgs.Pod: missing");
  if (!pod->IsObject()) return absl::InvalidArgumentError("ExtenderArgs.Pod: expected an object");
  args.pod = pod;

  const JsonValue* names = FindMemberIgnoreCase(doc, "NodeNames");
  const JsonValue* nodes = FindMemberIgnoreCase(doc, "Nodes");
  if (names && !names->IsNull()) {
    if (!names->IsArray()) return absl::InvalidArgumentError("ExtenderArgs.NodeNames: expected an array");
    args.names_only = true;
    args.node_names.reserve(names->Size());
    for (rapidjson::SizeType i = 0; i < names->Size(); ++i) {
      if (!(*names)[i].IsString()) {
        return absl::InvalidArgumentError(
            absl::StrCat("ExtenderArgs.NodeNames[", i, "]: expected a string"));
      }
      args.node_names.push_back(AsStringView((*names)[i]));
    }
    return args;
  }
  if (nodes && !nodes->IsNull()) {
    if (!nodes->IsObject()) return absl::InvalidArgumentError("ExtenderArgs.Nodes: expected a NodeList object");
    args.names_only = false;
    const JsonValue* items = FindMember(*nodes, "items");
    if (items && !items->IsNull()) {
      if (!items->IsArray()) return absl::InvalidArgumentError("ExtenderArgs.Nodes.items: expected an array");
      for (rapidjson::SizeType i = 0; i < items->Size(); ++i) {
        const JsonValue& item = (*items)[i];
        const JsonValue* meta = FindMember(item, "metadata");
        const JsonValue* name = meta ? FindMember(*meta, "name") : nullptr;
        if (!name || !name->IsString()) {
          return absl::InvalidArgumentError(
              absl::StrCat("ExtenderArgs.Nodes.items[", i, "].metadata.name: missing"));
        }
        args.node_names.push_back(AsStringView(*name));
        args.node_items.push_back(&item);
      }
    }
    return args;
  }
  return absl::InvalidArgumentError("ExtenderArgs: NodeNames and Nodes are both missing or null");
}

std::string EncodeFilterResult(const ExtenderArgs& args, const FilterReply& reply) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  if (args.names_only) {
    Key(w, "NodeNames");
    w.StartArray();
    for (size_t i : reply.kept) String(w, args.node_names[i]);
    w.EndArray();
  } else {
    Key(w, "Nodes");
    w.StartObject();
    Key(w, "metadata");
    w.StartObject();
    w.EndObject();
    Key(w, "items");
    w.StartArray();
    for (size_t i : reply.kept) args.node_items[i]->Accept(w);
    w.EndArray();
    w.EndObject();
  }
  StringMap(w, "FailedNodes", reply.failed);
  StringMap(w, "FailedAndUnresolvableNodes", reply.failed_unresolvable);
  Key(w, "Error");
  String(w, reply.error);
  w.EndObject();
  return Take(buffer);
}

std::string EncodeHostPriorityList(const std::vector<HostScore>& scores) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartArray();
  for (const HostScore& s : scores) {
    w.StartObject();
    Key(w, "Host");
    String(w, s.host);
    Key(w, "Score");
    w.Int64(s.score);
    w.EndObject();
  }
  w.EndArray();
  return Take(buffer);
}

std::string EncodeFilterError(absl::string_view error) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  Key(w, "NodeNames");
  w.Null();
  Key(w, "Nodes");
  w.Null();
  StringMap(w, "FailedNodes", {});
  StringMap(w, "FailedAndUnresolvableNodes", {});
  Key(w, "Error");
  String(w, error);
  w.EndObject();
  return Take(buffer);
}

std::string EncodeHttpError(absl::string_view message) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  Key(w, "error");
  String(w, message);
  w.EndObject();
  return Take(buffer);
}

absl::StatusOr<BindingArgs> ParseBindingArgs(absl::string_view body) {
  ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(body));
  if (!doc.IsObject()) return absl::InvalidArgumentError("ExtenderBindingArgs: expected a JSON object");
  BindingArgs args;
  struct Field {
    absl::string_view key;
    std::string* out;
  };
  for (const Field& f : {Field{"PodName", &args.pod_name}, Field{"PodNamespace", &args.pod_namespace},
                         Field{"PodUID", &args.pod_uid}, Field{"Node", &args.node}}) {
    const JsonValue* v = FindMemberIgnoreCase(doc, f.key);
    if (!v || !v->IsString() || v->GetStringLength() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("ExtenderBindingArgs.", f.key, ": missing or not a non-empty string"));
    }
    *f.out = std::string(AsStringView(*v));
  }
  return args;
}

std::string EncodeBindingResult(absl::string_view error) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  Key(w, "Error");
  String(w, error);
  w.EndObject();
  return Take(buffer);
}

}  // namespace common
