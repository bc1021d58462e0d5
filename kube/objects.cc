#include "kube/objects.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace kube {
namespace {

// The shape every object shares: apiVersion and kind first, then nested objects of string
// fields. Patches have neither.
class ObjectWriter {
 public:
  ObjectWriter() { w_.StartObject(); }
  ObjectWriter(absl::string_view api_version, absl::string_view kind) : ObjectWriter() {
    Field("apiVersion", api_version);
    Field("kind", kind);
  }
  void Field(absl::string_view key, absl::string_view value) {
    Key(key);
    w_.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
  }
  // Left out when empty.
  void OptionalField(absl::string_view key, absl::string_view value) {
    if (!value.empty()) Field(key, value);
  }
  void Int(absl::string_view key, int64_t value) {
    Key(key);
    w_.Int64(value);
  }
  void Bool(absl::string_view key, bool value) {
    Key(key);
    w_.Bool(value);
  }
  void Null(absl::string_view key) {
    Key(key);
    w_.Null();
  }
  void Begin(absl::string_view key) {
    Key(key);
    w_.StartObject();
  }
  void End() { w_.EndObject(); }
  // An array of objects: BeginArray(key), then Element() ... End() per object, EndArray().
  void BeginArray(absl::string_view key) {
    Key(key);
    w_.StartArray();
  }
  void Element() { w_.StartObject(); }
  void EndArray() { w_.EndArray(); }
  void Map(absl::string_view key, const auto& entries) {
    Begin(key);
    for (const auto& [k, v] : entries) Field(k, v);
    End();
  }
  std::string Done() {
    w_.EndObject();
    return std::string(buffer_.GetString(), buffer_.GetSize());
  }

 private:
  void Key(absl::string_view key) {
    w_.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
  }
  rapidjson::StringBuffer buffer_;
  rapidjson::Writer<rapidjson::StringBuffer> w_{buffer_};
};

}  // namespace

std::string BindingJson(const wire::BindingArgs& args, const topology::Labels& annotations) {
  ObjectWriter o("v1", "Binding");
  o.Begin("metadata");
  o.Field("name", args.pod_name);
  o.Field("namespace", args.pod_namespace);
  o.Field("uid", args.pod_uid);
  o.Map("annotations", annotations);
  o.End();
  o.Begin("target");
  o.Field("apiVersion", "v1");
  o.Field("kind", "Node");
  o.Field("name", args.node);
  o.End();
  return o.Done();
}

std::string LeaseJson(const LeaseObject& lease) {
  ObjectWriter o("coordination.k8s.io/v1", "Lease");
  o.Begin("metadata");
  o.Field("name", lease.name);
  o.Field("namespace", lease.namespace_name);
  o.OptionalField("resourceVersion", lease.resource_version);
  o.End();
  o.Begin("spec");
  o.Field("holderIdentity", lease.holder);
  o.Int("leaseDurationSeconds", lease.duration_seconds);
  o.OptionalField("acquireTime", lease.acquire_time);
  o.OptionalField("renewTime", lease.renew_time);
  o.Int("leaseTransitions", lease.transitions);
  o.End();
  return o.Done();
}

namespace {

// What a pod's and a node's Event share. `action` empty leaves out eventTime and action.
struct InvolvedObject {
  absl::string_view kind, namespace_name, name, uid;
  absl::string_view api_version = "v1";
};
std::string WriteEvent(absl::string_view event_namespace, const InvolvedObject& about, bool warning,
                       absl::string_view reason, absl::string_view message,
                       absl::string_view action, absl::Time now) {
  const std::string seconds = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", now, absl::UTCTimeZone());
  ObjectWriter o("v1", "Event");
  o.Begin("metadata");
  o.Field("generateName", absl::StrCat(about.name, "."));
  o.Field("namespace", event_namespace);
  o.End();
  o.Begin("involvedObject");
  o.Field("apiVersion", about.api_version);
  o.Field("kind", about.kind);
  o.OptionalField("namespace", about.namespace_name);
  o.Field("name", about.name);
  o.Field("uid", about.uid);
  o.End();
  o.Field("reason", reason);
  o.Field("message", message);
  o.Field("type", warning ? "Warning" : "Normal");
  o.Begin("source");
  o.Field("component", "gpu-tenancy");
  o.End();
  o.Field("firstTimestamp", seconds);
  o.Field("lastTimestamp", seconds);
  if (!action.empty()) {
    o.Field("eventTime", absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", now, absl::UTCTimeZone()));
    o.Field("action", action);
  }
  o.Field("reportingComponent", "gpu-tenancy");
  o.Field("reportingInstance", "gpu-tenancy");
  o.Int("count", 1);
  return o.Done();
}

}  // namespace

std::string EventJson(const PodEvent& e, absl::Time now) {
  // A cluster-scoped object (no namespace) has its events in namespace default, where kubectl
  // describe finds them.
  return WriteEvent(e.pod_namespace.empty() ? "default" : e.pod_namespace,
                    {e.kind, e.pod_namespace, e.pod_name, e.pod_uid, e.api_version}, e.warning,
                    e.reason, e.message, e.action, now);
}

std::string EventJson(const NodeEvent& e, absl::Time now) {
  return WriteEvent("default", {"Node", "", e.node, e.node_uid}, e.warning, e.reason, e.message, "",
                    now);
}

std::string ConfigMapJson(const std::string& namespace_name, const std::string& name,
                          const std::string& resource_version,
                          const std::map<std::string, std::string>& data) {
  ObjectWriter o("v1", "ConfigMap");
  o.Begin("metadata");
  o.Field("name", name);
  o.Field("namespace", namespace_name);
  o.Begin("labels");
  o.Field("app.kubernetes.io/name", "gpu-tenancy");
  o.End();
  o.OptionalField("resourceVersion", resource_version);
  o.End();
  o.Map("data", data);
  return o.Done();
}

std::string EvictionJson(const std::string& pod_namespace, const std::string& pod_name) {
  ObjectWriter o("policy/v1", "Eviction");
  o.Begin("metadata");
  o.Field("name", pod_name);
  o.Field("namespace", pod_namespace);
  o.End();
  return o.Done();
}

std::string SmokePodJson(const std::string& node, const std::string& image,
                         const std::string& resource) {
  const std::map<std::string, std::string> one = {{resource, "1"}};
  ObjectWriter o("v1", "Pod");
  o.Begin("metadata");
  o.Field("generateName", "gpu-tenancy-smoke-");
  o.Begin("labels");
  o.Field("app.kubernetes.io/name", "gpu-tenancy-smoke");
  o.End();
  o.End();
  o.Begin("spec");
  o.Field("nodeName", node);
  o.Field("restartPolicy", "Never");
  o.BeginArray("tolerations");
  o.Element();
  o.Field("operator", "Exists");
  o.End();
  o.EndArray();
  o.BeginArray("containers");
  o.Element();
  o.Field("name", "smoke");
  o.Field("image", image);
  o.Begin("resources");
  o.Map("limits", one);
  o.Map("requests", one);
  o.End();
  o.End();
  o.EndArray();
  o.End();
  return o.Done();
}

namespace {

// {"metadata":{"<field>":{...}}}: a value of nullopt removes the key.
std::string MetadataMapPatch(absl::string_view field, const LabelChanges& changes) {
  ObjectWriter o;
  o.Begin("metadata");
  o.Begin(field);
  for (const auto& [key, value] : changes) {
    if (value) {
      o.Field(key, *value);
    } else {
      o.Null(key);
    }
  }
  o.End();
  o.End();
  return o.Done();
}

}  // namespace

std::string LabelsPatchJson(const LabelChanges& labels) {
  return MetadataMapPatch("labels", labels);
}

std::string AnnotationsPatchJson(const LabelChanges& annotations) {
  return MetadataMapPatch("annotations", annotations);
}

std::string UnschedulablePatchJson(bool unschedulable) {
  ObjectWriter o;
  o.Begin("spec");
  if (unschedulable) {
    o.Bool("unschedulable", true);
  } else {
    o.Null("unschedulable");
  }
  o.End();
  return o.Done();
}

}  // namespace kube
