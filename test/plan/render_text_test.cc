// plan/render_text: the plan for people. Every line comes from the document: the fleet and
// summary, each workload's sizing and mechanism, each GPU's cut and holders in aligned columns,
// the commands, and the configuration snippets embedded as exactly the YAML -o yaml prints for
// the same branches; sections in a fixed order, Warnings only when there are any.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plan/quantity_text.h"
#include "plan/render.h"
#include "test/plan/render_test_util.h"

namespace plan {
namespace {

using ::testing::HasSubstr;
using testing::Model;
using ::testing::Not;

std::string Text(const PlanDocument& doc) {
  absl::StatusOr<std::string> text = RenderText(doc);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

std::string Yaml(const Tree& tree) {
  absl::StatusOr<std::string> yaml = RenderYamlTree(tree);
  EXPECT_TRUE(yaml.ok()) << yaml.status();
  return yaml.ok() ? *yaml : "(no yaml)";
}

const topology::MigProfile* Profile(const std::string& name) {
  const topology::MigProfile* p = Model("H100-80GB").FindProfile(name);
  EXPECT_NE(p, nullptr) << name;
  return p;
}

TEST(RenderTextTest, CarriesTheSummaryAndEveryCommand) {
  PlanDocument doc = testing::ExampleDocument();
  ASSERT_FALSE(doc.nvidia_smi.empty());
  std::string people = Text(doc);
  EXPECT_THAT(people, HasSubstr(doc.summary.text));
  for (const NodeCommands& node : doc.nvidia_smi) {
    for (const std::string& command : node.commands) EXPECT_THAT(people, HasSubstr(command));
  }
}

TEST(RenderTextTest, SectionsInOrderAndWarningsOnlyWhenThereAreAny) {
  PlanDocument doc = testing::MixedDocument();
  doc.warnings = {"first warning", "second warning"};
  std::string people = Text(doc);
  EXPECT_TRUE(absl::StartsWith(people, "gpu-tenancy plan\n================\nFleet: ")) << people;
  size_t at = 0;
  for (const char* title :
       {"Workloads", "GPUs", "nvidia-smi commands", "mig-parted config (mig-manager ConfigMap)",
        "Device-plugin sharing config (time-slicing / MPS)",
        "Node labels (nvidia.com/mig.config, nvidia.com/device-plugin.config)",
        "Pod resources (per workload)", "ResourceClaims (DRA, NVIDIA k8s-dra-driver-gpu)",
        "Policy file: tenants section", "Warnings"}) {
    SCOPED_TRACE(title);
    const std::string heading =
        absl::StrCat("\n", title, "\n", std::string(std::string(title).size(), '-'), "\n");
    size_t found = people.find(heading, at);
    ASSERT_NE(found, std::string::npos);
    at = found + heading.size();
  }
  EXPECT_TRUE(absl::EndsWith(people, "\n- first warning\n- second warning\n")) << people;

  doc.warnings.clear();
  EXPECT_THAT(Text(doc), Not(HasSubstr("\nWarnings\n")));
}

TEST(RenderTextTest, FleetSummaryAndWorkloadsOfAMixedPlan) {
  PlanDocument doc = testing::MixedDocument();
  std::string people = Text(doc);
  EXPECT_THAT(people, HasSubstr("Fleet: 3 GPUs on 3 nodes (h100-a: 1 x H100-80GB, zone a; "
                                "h100-b: 1 x H100-80GB, zone b; l4: 1 x L4)\n\n"));
  EXPECT_THAT(people, HasSubstr(absl::StrCat("Summary: ", doc.summary.text,
                                             ".\n  Baseline: ", doc.summary.baseline, "\n")));
  EXPECT_THAT(people, HasSubstr("chat  tenant acme (untrusted, sla), 2 replicas, mirrored over "
                                "zones a, b\n  memory from high-water mark:\n"));
  EXPECT_THAT(people, HasSubstr("\n  mechanism: MIG 1g.10gb on H100-80GB\n"));
  EXPECT_THAT(people, HasSubstr("notebook  tenant lab (trusted, best-effort), 1 replica\n"));
  EXPECT_THAT(people, HasSubstr("\n  mechanism: time-sliced L4\n"));
  EXPECT_THAT(people, HasSubstr("\n  mechanism: VM boundary: not placed by this plan\n"));
  for (const WorkloadPlan& w : doc.plan.workloads) {
    for (const std::string& r : w.reasons) EXPECT_THAT(people, HasSubstr("  why: " + r + "\n"));
    for (const std::string& r : w.warnings) {
      EXPECT_THAT(people, HasSubstr("  WARNING: " + r + "\n"));
    }
  }

  for (bool optimal : {true, false}) {
    doc.summary.optimal = optimal;
    doc.summary.lower_bound = 2;
    EXPECT_THAT(Text(doc),
                HasSubstr(optimal ? "fewer than 2 GPUs (memory and compute slices, shared "
                                    "memory), so this one is optimal.\n"
                                  : "fewer than 2 GPUs (memory and compute slices, shared "
                                    "memory); this first-fit packing uses more.\n"));
  }
}

TEST(RenderTextTest, EmbedsTheSameYamlAsTheTreeForEachSnippet) {
  for (const auto& [name, doc] : {std::pair{"worked example", testing::ExampleDocument()},
                                  std::pair{"mixed plan", testing::MixedDocument()}}) {
    SCOPED_TRACE(name);
    std::string people = Text(doc);
    EXPECT_THAT(people, HasSubstr(Yaml(MigPartedTree(doc.mig_configs))));
    EXPECT_THAT(people, HasSubstr(Yaml(PodsTree(doc.pods))));
    EXPECT_THAT(people, HasSubstr(Yaml(PolicyTree(doc.policy))));
    for (const ClaimSnippet& claim : doc.claims) {
      EXPECT_THAT(people, HasSubstr(Yaml(ClaimTree(claim))));
    }
    // Claims are separate YAML documents; a "---" line appears nowhere else.
    ASSERT_GE(doc.claims.size(), 2u);
    size_t separators = 0;
    for (size_t at = people.find("\n---\n"); at != std::string::npos;
         at = people.find("\n---\n", at + 1)) {
      ++separators;
    }
    EXPECT_EQ(separators, doc.claims.size() - 1);
    if (!doc.device_plugin_configs.empty()) {
      EXPECT_THAT(people, HasSubstr(Yaml(DevicePluginConfigsTree(doc.device_plugin_configs))));
    }
    for (const NodeLabels& node : doc.node_labels) {
      for (const std::string& c : node.commands) EXPECT_THAT(people, HasSubstr(c + "\n"));
    }
  }
}

TEST(RenderTextTest, SaysWhenThereIsNothingToConfigure) {
  std::string people = Text(PlanDocument{});
  EXPECT_THAT(people, HasSubstr("Fleet: 0 GPUs on 0 nodes ()\n"));
  EXPECT_THAT(people, HasSubstr("none: no workload shares a full GPU in this plan\n"));
  EXPECT_THAT(people, HasSubstr("(no node needs a label)\n"));
  EXPECT_THAT(people, Not(HasSubstr("\n---\n"))) << "no claims to separate";
}

GpuPlan Gpu(const std::string& node, const std::string& zone, int index, const std::string& type,
            const topology::GpuModel* model, GpuUse use) {
  GpuPlan g;
  g.node = node;
  g.zone = zone;
  g.index = index;
  g.gpu_type = type;
  g.model = model;
  g.memory_mib = model ? 81559 : 23034;
  g.use = use;
  return g;
}

NodePlan NodeOf(const std::string& name, const std::string& zone, std::vector<int> gpus) {
  NodePlan n;
  n.name = name;
  n.zone = zone;
  n.gpus = std::move(gpus);
  return n;
}

// A hand-made plan: every kind of GPU line, replica numbering, canaries and column widths.
class HandMadePlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Plan& p = doc_.plan;
    WorkloadPlan chat, train, nb;
    chat.spec.name = "chat";
    chat.replicas = 2;
    chat.mechanism = Mechanism::kMig;
    chat.profile = Profile("3g.40gb");
    chat.gpu_type = "H100-80GB";
    train.spec.name = "train";
    train.spec.training = true;
    train.gpus_per_replica = 1;
    train.gpu_type = "H100-80GB";
    nb.spec.name = "nb";
    nb.mechanism = Mechanism::kTimeslice;
    nb.gpu_type = "L4";
    p.workloads = {chat, train, nb};
    GpuPlan mig = Gpu("n1", "a", 0, "H100-80GB", &Model("H100-80GB"), GpuUse::kMig);
    mig.instances = {{Profile("3g.40gb"), 0, {0, 1}}, {Profile("1g.10gb"), 6, {}}};
    GpuPlan whole = Gpu("n1", "a", 1, "H100-80GB", &Model("H100-80GB"), GpuUse::kExclusive);
    whole.clients = {{1, 0}};
    GpuPlan shared = Gpu("n2", "", 0, "L4", nullptr, GpuUse::kTimeslice);
    shared.clients = {{2, 0}, {0, 0}};
    shared.shared_memory_mib = 4506;
    GpuPlan idle = Gpu("n2", "", 1, "L4", nullptr, GpuUse::kIdle);
    p.gpus = {mig, whole, shared, idle};
    p.nodes = {NodeOf("n1", "a", {0, 1}), NodeOf("n2", "", {2, 3})};
  }

  PlanDocument doc_;
};

TEST_F(HandMadePlanTest, EachGpuLine) {
  std::string people = Text(doc_);
  EXPECT_THAT(people, HasSubstr("Fleet: 4 GPUs on 2 nodes (n1: 2 x H100-80GB, zone a; "
                                "n2: 2 x L4)\n"));
  EXPECT_THAT(people, HasSubstr("\nn1 GPU 0 (H100-80GB, zone a): mig, cut 3g.40gb + 1g.10gb\n"
                                "    slices 0-3  3g.40gb     chat #2\n"
                                "    slice  6    1g.10gb     canary\n"
                                "n1 GPU 1 (H100-80GB, zone a): exclusive: train\n"));
  EXPECT_THAT(people, HasSubstr(absl::StrCat("n2 GPU 0 (L4): timeslice: nb, chat #1 (",
                                             MibText(4506, true), " of ", MibText(23034, false),
                                             " declared)\nn2 GPU 1 (L4): idle\n")));
  EXPECT_THAT(people, HasSubstr("train  tenant  (trusted, training), 1 replica\n"));
  EXPECT_THAT(people, HasSubstr("\n  mechanism: whole GPU (1 x H100-80GB per replica)\n"));
}

TEST_F(HandMadePlanTest, MemoryTermsLineUpWithAtLeastOneSpace) {
  doc_.plan.workloads[0].sizing.source = "model";
  doc_.plan.workloads[0].sizing.terms = {{"weights", 2 * kGiB, "how a"},
                                         {"elevenchars", 3 * kGiB, "how b"}};
  doc_.plan.workloads[0].sizing.total_bytes = 5 * kGiB;
  std::string people = Text(doc_);
  EXPECT_THAT(people, HasSubstr(absl::StrCat("  memory from model:\n    weights    ",
                                             std::string(11 - GiBText(2 * kGiB, true).size(), ' '),
                                             GiBText(2 * kGiB, true), "  how a\n")));
  EXPECT_THAT(people, HasSubstr(absl::StrCat("\n    elevenchars ",
                                             std::string(11 - GiBText(3 * kGiB, true).size(), ' '),
                                             GiBText(3 * kGiB, true), "  how b\n")));
  EXPECT_THAT(people, HasSubstr(absl::StrCat("\n    total      ",
                                             std::string(11 - GiBText(5 * kGiB, true).size(), ' '),
                                             GiBText(5 * kGiB, true), "\n")));
}

// The planner's own term names are at most 9 characters; a wider one must not wrap the padding.
TEST_F(HandMadePlanTest, ATermNameWiderThanItsColumnStillGetsOneSpace) {
  doc_.plan.workloads[0].sizing.terms = {{"twelve-chars", 3 * kGiB, "how"}};
  std::string people;
  EXPECT_NO_THROW(people = Text(doc_));
  EXPECT_THAT(people, HasSubstr(absl::StrCat("\n    twelve-chars ",
                                             std::string(11 - GiBText(3 * kGiB, true).size(), ' '),
                                             GiBText(3 * kGiB, true), "  how\n")));
}

}  // namespace
}  // namespace plan
