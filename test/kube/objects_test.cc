// kube/objects: the Lease and ConfigMap bodies (the Binding and the pod's Event have their own
// tests beside their writers): optional fields are left out, a resource version is the
// precondition. And the reconfiguration gate's bodies: the Event about a Node, the Eviction, the
// smoke Pod and the Node merge patches, each parsed back for the fields kube-apiserver reads.
#include "kube/objects.h"

#include <string>

#include "absl/time/time.h"
#include "common/json.h"
#include "gtest/gtest.h"

namespace {

const common::JsonValue& At(const common::JsonValue& v, const char* key) {
  const common::JsonValue* found = common::FindMember(v, key);
  EXPECT_NE(found, nullptr) << key;
  static const common::JsonValue kNull;
  return found ? *found : kNull;
}

TEST(ObjectsTest, ALeaseCarriesItsHolderAndLeavesOutWhatIsUnset) {
  kube::LeaseObject lease;
  lease.namespace_name = "gpu-tenancy";
  lease.name = "gpu-tenancy-extender";
  lease.holder = "replica-a";
  lease.duration_seconds = 15;
  lease.renew_time = "2026-12-04T10:00:00.000000Z";
  lease.transitions = 2;
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(kube::LeaseJson(lease));
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(common::StringOr(*doc, "apiVersion"), "coordination.k8s.io/v1");
  EXPECT_EQ(common::StringOr(*doc, "kind"), "Lease");
  EXPECT_EQ(common::StringOr(At(*doc, "metadata"), "namespace"), "gpu-tenancy");
  EXPECT_EQ(common::FindMember(At(*doc, "metadata"), "resourceVersion"), nullptr);
  const common::JsonValue& spec = At(*doc, "spec");
  EXPECT_EQ(common::StringOr(spec, "holderIdentity"), "replica-a");
  EXPECT_EQ(At(spec, "leaseDurationSeconds").GetInt64(), 15);
  EXPECT_EQ(At(spec, "leaseTransitions").GetInt64(), 2);
  EXPECT_EQ(common::FindMember(spec, "acquireTime"), nullptr);

  lease.resource_version = "41";
  doc = common::ParseJson(kube::LeaseJson(lease));
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(common::StringOr(At(*doc, "metadata"), "resourceVersion"), "41");
}

TEST(ObjectsTest, AConfigMapIsLabelledOursAndHoldsItsData) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(
      kube::ConfigMapJson("gpu-tenancy", "claim-quota", "7", {{"acme", "{\"gpus\":1}"}}));
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(common::StringOr(*doc, "kind"), "ConfigMap");
  const common::JsonValue& meta = At(*doc, "metadata");
  EXPECT_EQ(common::StringOr(meta, "resourceVersion"), "7");
  EXPECT_EQ(common::StringOr(At(meta, "labels"), "app.kubernetes.io/name"), "gpu-tenancy");
  EXPECT_EQ(common::StringOr(At(*doc, "data"), "acme"), "{\"gpus\":1}");
}

TEST(ObjectsTest, AnEventAboutANodeLivesInDefaultAndOnlyAPodsEventCarriesAnAction) {
  const absl::Time now = absl::FromUnixSeconds(1796205600);  // 2026-12-02T10:00:00Z
  absl::StatusOr<rapidjson::Document> node = common::ParseJson(kube::EventJson(
      kube::NodeEvent{"gpu-1", "uid-n", true, "MigReconfigureFailed", "say \"why\""}, now));
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(common::StringOr(*node, "kind"), "Event");
  EXPECT_EQ(common::StringOr(At(*node, "metadata"), "namespace"), "default");
  EXPECT_EQ(common::StringOr(At(*node, "metadata"), "generateName"), "gpu-1.");
  const common::JsonValue& about = At(*node, "involvedObject");
  EXPECT_EQ(common::StringOr(about, "kind"), "Node");
  EXPECT_EQ(common::StringOr(about, "name"), "gpu-1");
  EXPECT_EQ(common::StringOr(about, "uid"), "uid-n");
  EXPECT_EQ(common::FindMember(about, "namespace"), nullptr);
  EXPECT_EQ(common::StringOr(*node, "type"), "Warning");
  EXPECT_EQ(common::StringOr(*node, "reason"), "MigReconfigureFailed");
  EXPECT_EQ(common::StringOr(*node, "message"), "say \"why\"");
  EXPECT_EQ(common::StringOr(*node, "firstTimestamp"), "2026-12-02T10:00:00Z");
  EXPECT_EQ(common::StringOr(At(*node, "source"), "component"), "gpu-tenancy");
  // kube-apiserver refuses an eventTime without an action.
  EXPECT_EQ(common::FindMember(*node, "eventTime"), nullptr);
  EXPECT_EQ(common::FindMember(*node, "action"), nullptr);

  absl::StatusOr<rapidjson::Document> pod = common::ParseJson(
      kube::EventJson(kube::PodEvent{"team", "p", "uid-p", false, "GpuTenancyBound", "ok"}, now));
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(common::StringOr(At(*pod, "involvedObject"), "namespace"), "team");
  EXPECT_EQ(common::StringOr(*pod, "eventTime"), "2026-12-02T10:00:00.000000Z");
  EXPECT_EQ(common::StringOr(*pod, "action"), "Binding");
}

TEST(ObjectsTest, AnEvictionNamesThePod) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(kube::EvictionJson("team", "p"));
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(common::StringOr(*doc, "apiVersion"), "policy/v1");
  EXPECT_EQ(common::StringOr(*doc, "kind"), "Eviction");
  EXPECT_EQ(common::StringOr(At(*doc, "metadata"), "name"), "p");
  EXPECT_EQ(common::StringOr(At(*doc, "metadata"), "namespace"), "team");
}

TEST(ObjectsTest, TheSmokePodIsPinnedToleratesEverythingAndAsksForOneDevice) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(
      kube::SmokePodJson("gpu-1", "registry.example/cuda:12", "nvidia.com/mig-1g.10gb"));
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(common::StringOr(*doc, "kind"), "Pod");
  EXPECT_EQ(common::StringOr(At(*doc, "metadata"), "generateName"), "gpu-tenancy-smoke-");
  const common::JsonValue& spec = At(*doc, "spec");
  EXPECT_EQ(common::StringOr(spec, "nodeName"), "gpu-1");
  EXPECT_EQ(common::StringOr(spec, "restartPolicy"), "Never");
  const common::JsonValue& tolerations = At(spec, "tolerations");
  ASSERT_TRUE(tolerations.IsArray() && tolerations.Size() == 1);
  EXPECT_EQ(common::StringOr(tolerations[0], "operator"), "Exists");
  const common::JsonValue& containers = At(spec, "containers");
  ASSERT_TRUE(containers.IsArray() && containers.Size() == 1);
  EXPECT_EQ(common::StringOr(containers[0], "image"), "registry.example/cuda:12");
  for (const char* part : {"limits", "requests"}) {
    const common::JsonValue& m = At(At(containers[0], "resources"), part);
    EXPECT_EQ(m.MemberCount(), 1u) << part;
    EXPECT_EQ(common::StringOr(m, "nvidia.com/mig-1g.10gb"), "1") << part;
  }
}

TEST(ObjectsTest, MergePatchesSetOrRemoveLabelsAnnotationsAndTheCordon) {
  absl::StatusOr<rapidjson::Document> labels = common::ParseJson(
      kube::LabelsPatchJson({{"nvidia.com/mig.config", "all-1g"}, {"gone", std::nullopt}}));
  ASSERT_TRUE(labels.ok()) << labels.status();
  const common::JsonValue& set = At(At(*labels, "metadata"), "labels");
  EXPECT_EQ(common::StringOr(set, "nvidia.com/mig.config"), "all-1g");
  EXPECT_TRUE(At(set, "gone").IsNull());
  EXPECT_EQ(common::FindMember(*labels, "kind"), nullptr);
  // A value that is itself JSON stays one string.
  absl::StatusOr<rapidjson::Document> annotations = common::ParseJson(
      kube::AnnotationsPatchJson({{"gpu-tenancy.io/devices", R"({"node":"a"})"}}));
  ASSERT_TRUE(annotations.ok()) << annotations.status();
  EXPECT_EQ(
      common::StringOr(At(At(*annotations, "metadata"), "annotations"), "gpu-tenancy.io/devices"),
      R"({"node":"a"})");
  EXPECT_EQ(common::FindMember(At(*annotations, "metadata"), "labels"), nullptr);

  absl::StatusOr<rapidjson::Document> cordon =
      common::ParseJson(kube::UnschedulablePatchJson(true));
  ASSERT_TRUE(cordon.ok());
  EXPECT_TRUE(At(At(*cordon, "spec"), "unschedulable").IsTrue());
  absl::StatusOr<rapidjson::Document> uncordon =
      common::ParseJson(kube::UnschedulablePatchJson(false));
  ASSERT_TRUE(uncordon.ok());
  EXPECT_TRUE(At(At(*uncordon, "spec"), "unschedulable").IsNull());
}

}  // namespace
