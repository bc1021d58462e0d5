#include "kube/objects.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace kube {
namespace {

// The shape every object shares: apiVersion and kind first, then nested objects of string
// fields.
class ObjectWriter {
 public:
  ObjectWriter(absl::string_view api_version, absl::string_view kind) {
    w_.StartObject();
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
  void Begin(absl::string_view key) {
    Key(key);
    w_.StartObject();
  }
  void End() { w_.EndObject(); }
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

std::string BindingJson(const common::BindingArgs& args, const topology::Labels& annotations) {
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

std::string EventJson(const PodEvent& e, absl::Time now) {
  const std::string seconds = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", now, absl::UTCTimeZone());
  const std::string micro = absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", now, absl::UTCTimeZone());
  ObjectWriter o("v1", "Event");
  o.Begin("metadata");
  o.Field("generateName", absl::StrCat(e.pod_name, "."));
  o.Field("namespace", e.pod_namespace);
  o.End();
  o.Begin("involvedObject");
  o.Field("apiVersion", "v1");
  o.Field("kind", "Pod");
  o.Field("namespace", e.pod_namespace);
  o.Field("name", e.pod_name);
  o.Field("uid", e.pod_uid);
  o.End();
  o.Field("reason", e.reason);
  o.Field("message", e.message);
  o.Field("type", e.warning ? "Warning" : "Normal");
  o.Begin("source");
  o.Field("component", "gpu-tenancy");
  o.End();
  o.Field("firstTimestamp", seconds);
  o.Field("lastTimestamp", seconds);
  o.Field("eventTime", micro);
  o.Field("action", "Binding");
  o.Field("reportingComponent", "gpu-tenancy");
  o.Field("reportingInstance", "gpu-tenancy");
  o.Int("count", 1);
  return o.Done();
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

}  // namespace kube
