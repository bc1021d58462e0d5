// The plan input parser beyond the schema walk-through in test/cmd/plan_test.cc: parameter
// counts at their edges, the documented defaults of every optional field, how `defaults:`
// reaches the model and high-water paths, and errors naming the YAML path of each field.
#include "common/plan_input.h"

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace common {
namespace {

using ::testing::HasSubstr;

constexpr char kFleet[] = "fleet: [{node: a, gpu: H100-80GB}]\n";
constexpr char kModel[] = "{parameters: 7B, layers: 32, kvHeads: 8, headDim: 128, maxTokens: 4096}";

// One workload whose memory mapping is `memory` (flow style), after `fleet`.
std::string OneWorkload(const std::string& memory, const std::string& extra = "",
                        const std::string& fleet = kFleet) {
  return absl::StrCat(fleet, "workloads: [{name: w, tenant: t, trust: trusted",
                      extra.empty() ? "" : ", ", extra, ", memory: ", memory, "}]\n");
}

TEST(ParameterCountTest, SuffixesScalesAndEdges) {
  struct Row {
    const char* name;
    const char* text;
    std::optional<int64_t> count;  // nullopt: refused
  };
  const Row rows[] = {
      {"billions", "7B", 7'000'000'000},
      {"lower-case suffix", "7b", 7'000'000'000},
      {"G is a billion too", "7G", 7'000'000'000},
      {"thousands", "1.5k", 1'500},
      {"millions", "350M", 350'000'000},
      {"fraction of a billion", "6.7B", 6'700'000'000},
      {"surrounding blanks", "  13B \t", 13'000'000'000},
      {"exponent without suffix", "1e3", 1'000},
      {"one parameter", "1", 1},
      {"rounds to the nearest", "2.6", 3},
      {"the largest accepted", "1000T", 1'000'000'000'000'000},
      {"just over the largest", "1001T", std::nullopt},
      {"less than one", "0.5", std::nullopt},
      {"zero", "0B", std::nullopt},
      {"negative", "-7B", std::nullopt},
      {"suffix only", "B", std::nullopt},
      {"two suffixes", "7BB", std::nullopt},
      {"unknown suffix", "7Q", std::nullopt},
      {"not a number", "NaN", std::nullopt},
      {"infinite", "inf", std::nullopt},
      {"blank", "  ", std::nullopt},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<int64_t> count = ParseParameterCount(row.text);
    if (row.count) {
      ASSERT_TRUE(count.ok()) << count.status();
      EXPECT_EQ(*count, *row.count);
      continue;
    }
    ASSERT_FALSE(count.ok()) << *count;
    EXPECT_EQ(count.status().code(), absl::StatusCode::kInvalidArgument);
    // The error quotes the text as written, not as normalised.
    EXPECT_EQ(count.status().message(),
              absl::StrCat("\"", row.text, "\" is not a parameter count such as 7B, 13B or 350M"));
  }
}

TEST(ParsePlanInputDefaultsTest, OptionalFieldsTakeTheirDocumentedDefaults) {
  absl::StatusOr<plan::PlanInput> in =
      ParsePlanInput(OneWorkload(absl::StrCat("{model: ", kModel, "}")));
  ASSERT_TRUE(in.ok()) << in.status();
  ASSERT_EQ(in->fleet.size(), 1u);
  const plan::FleetNode& node = in->fleet[0];
  EXPECT_EQ(node.count, 1);
  EXPECT_EQ(node.zone, "");
  EXPECT_EQ(node.memory_mib, std::nullopt);
  ASSERT_EQ(in->workloads.size(), 1u);
  const plan::WorkloadSpec& w = in->workloads[0];
  EXPECT_EQ(w.namespace_name, "");  // the planner uses the tenant's name
  EXPECT_EQ(w.latency, plan::Latency::kBestEffort);
  EXPECT_EQ(w.sharing, plan::SharingHint::kAuto);
  EXPECT_FALSE(w.training);
  EXPECT_FALSE(w.mirrored);
  EXPECT_FALSE(w.vm_boundary);
  EXPECT_EQ(w.replicas, 0);
  EXPECT_EQ(w.max_gpus, 1);
  EXPECT_EQ(w.gpu, "");
  ASSERT_TRUE(w.memory.model.has_value());
  EXPECT_EQ(w.memory.model->bytes_per_parameter, plan::kDefaultBytesPerParameter);
  EXPECT_EQ(w.memory.model->kv_bytes_per_element, plan::kDefaultKvBytesPerElement);
  EXPECT_EQ(w.memory.model->concurrency, 1);
  EXPECT_EQ(w.memory.model->layers, 32);
  EXPECT_EQ(w.memory.model->kv_heads, 8);
  EXPECT_EQ(w.memory.model->head_dim, 128);
  EXPECT_EQ(w.memory.model->max_tokens, 4096);
  // Left unset, so SizeMemory applies its own defaults.
  EXPECT_EQ(w.memory.workspace_bytes, std::nullopt);
  EXPECT_EQ(w.memory.headroom_percent, std::nullopt);
  EXPECT_EQ(in->canary_profile, std::nullopt);
}

TEST(ParsePlanInputDefaultsTest, EnumsAndFlagsAreRead) {
  absl::StatusOr<plan::PlanInput> in = ParsePlanInput(
      OneWorkload("{highWaterMark: 4Gi}",
                  "sharing: timeslice, training: true, vmBoundary: true, gpu: L4, replicas: 3"));
  ASSERT_TRUE(in.ok()) << in.status();
  const plan::WorkloadSpec& w = in->workloads[0];
  EXPECT_EQ(w.sharing, plan::SharingHint::kTimeslice);
  EXPECT_TRUE(w.training);
  EXPECT_TRUE(w.vm_boundary);
  EXPECT_EQ(w.gpu, "L4");
  EXPECT_EQ(w.replicas, 3);
  EXPECT_EQ(w.trust, plan::Trust::kTrusted);
}

TEST(ParsePlanInputDefaultsTest, DefaultsReachTheModelPathAndOnlyTheHeadroomReachesMeasurements) {
  const std::string yaml = absl::StrCat(
      "defaults: {headroomPercent: 20, workspace: 2Gi, bytesPerParameter: 1, "
      "kvBytesPerElement: 0.5}\n",
      kFleet, "workloads:\n",
      "  - {name: model, tenant: t, trust: trusted, memory: {model: ", kModel, "}}\n",
      "  - {name: own, tenant: t, trust: trusted, memory: {workspace: 3Gi, headroomPercent: 5, ",
      "model: {parameters: 7B, layers: 1, kvHeads: 1, headDim: 1, maxTokens: 1, "
      "bytesPerParameter: 4, kvBytesPerElement: 1, concurrency: 16}}}\n",
      "  - {name: measured, tenant: t, trust: trusted, memory: {highWaterMark: 10Gi}}\n");
  absl::StatusOr<plan::PlanInput> in = ParsePlanInput(yaml);
  ASSERT_TRUE(in.ok()) << in.status();
  ASSERT_EQ(in->workloads.size(), 3u);
  const plan::MemoryInput& model = in->workloads[0].memory;
  EXPECT_EQ(model.model->bytes_per_parameter, 1.0);
  EXPECT_EQ(model.model->kv_bytes_per_element, 0.5);
  EXPECT_EQ(model.workspace_bytes, int64_t{2} << 30);
  EXPECT_EQ(model.headroom_percent, 20.0);

  const plan::MemoryInput& own = in->workloads[1].memory;
  EXPECT_EQ(own.model->bytes_per_parameter, 4.0);
  EXPECT_EQ(own.model->kv_bytes_per_element, 1.0);
  EXPECT_EQ(own.model->concurrency, 16);
  EXPECT_EQ(own.workspace_bytes, int64_t{3} << 30);
  EXPECT_EQ(own.headroom_percent, 5.0);

  // A measured peak already includes the runtime's workspace: the default is not added.
  const plan::MemoryInput& measured = in->workloads[2].memory;
  EXPECT_EQ(measured.high_water_bytes, int64_t{10} << 30);
  EXPECT_EQ(measured.workspace_bytes, std::nullopt);
  EXPECT_EQ(measured.headroom_percent, 20.0);
}

TEST(ParsePlanInputDefaultsTest, FleetMemoryIsInMiBAndParametersMayBeNumbers) {
  absl::StatusOr<plan::PlanInput> in = ParsePlanInput(
      OneWorkload("{model: {parameters: 1.3e9, layers: 1, kvHeads: 1, headDim: 1, maxTokens: 1}}",
                  "", "fleet: [{node: a, gpu: custom, memory: 1.5Gi, count: 64, zone: z}]\n"));
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->fleet[0].memory_mib, 1536);
  EXPECT_EQ(in->fleet[0].count, 64);
  EXPECT_EQ(in->fleet[0].zone, "z");
  EXPECT_EQ(in->workloads[0].memory.model->parameters, 1'300'000'000);
}

TEST(ParsePlanInputErrorsTest, EachErrorNamesTheFieldsPath) {
  const std::string model_head = "{model: {parameters: 7B, layers: 1, kvHeads: 1, headDim: 1";
  struct Row {
    const char* name;
    std::string yaml;
    std::string error;
  };
  const Row rows[] = {
      {"not a mapping", "- a\n- b\n", "plan input: expected a mapping"},
      {"not YAML", "fleet: [unclosed\n", ""},
      {"fleet is not a list", "fleet: {node: a}\nworkloads: []\n", "fleet: expected a list"},
      {"fleet item is not a mapping", OneWorkload("{highWaterMark: 1Gi}", "", "fleet: [a]\n"),
       "fleet[0]: expected a mapping"},
      {"node name missing", OneWorkload("{highWaterMark: 1Gi}", "", "fleet: [{gpu: L4}]\n"),
       "fleet[0].node: missing"},
      {"gpu empty", OneWorkload("{highWaterMark: 1Gi}", "", "fleet: [{node: a, gpu: ''}]\n"),
       "fleet[0].gpu: must not be empty"},
      {"too many GPUs",
       OneWorkload("{highWaterMark: 1Gi}", "", "fleet: [{node: a, gpu: L4, count: 65}]\n"),
       "fleet[0].count: expected an integer from 1 to 64"},
      {"GPU memory under a MiB",
       OneWorkload("{highWaterMark: 1Gi}", "", "fleet: [{node: a, gpu: x, memory: 512Ki}]\n"),
       "fleet[0].memory: less than 1 MiB"},
      {"GPU memory zero",
       OneWorkload("{highWaterMark: 1Gi}", "", "fleet: [{node: a, gpu: x, memory: '0'}]\n"),
       "fleet[0].memory: must be positive"},
      {"unknown fleet field",
       OneWorkload("{highWaterMark: 1Gi}", "", "fleet: [{node: a, gpu: x, ram: 1}]\n"),
       "fleet[0].ram: unknown field"},
      {"workloads missing", kFleet, "workloads: missing"},
      {"name missing",
       absl::StrCat(kFleet, "workloads: [{tenant: t, trust: trusted, memory: {highWaterMark: 1}}]"),
       "workloads[0].name: missing"},
      {"trust missing",
       absl::StrCat(kFleet, "workloads: [{name: w, tenant: t, memory: {highWaterMark: 1Gi}}]"),
       "workloads[0].trust: missing"},
      {"latency unknown", OneWorkload("{highWaterMark: 1Gi}", "latency: fast"),
       "workloads[0].latency: \"fast\" is not one of sla, best-effort"},
      {"sharing unknown", OneWorkload("{highWaterMark: 1Gi}", "sharing: mig"),
       "workloads[0].sharing: \"mig\" is not one of auto, timeslice, mps"},
      {"training not a flag", OneWorkload("{highWaterMark: 1Gi}", "training: maybe"),
       "workloads[0].training: expected true or false"},
      {"zero replicas", OneWorkload("{highWaterMark: 1Gi}", "replicas: 0"),
       "workloads[0].replicas: expected an integer from 1 to 10000"},
      {"too many GPUs per replica", OneWorkload("{highWaterMark: 1Gi}", "maxGpus: 65"),
       "workloads[0].maxGpus: expected an integer from 1 to 64"},
      {"memory not a mapping", OneWorkload("8Gi"), "workloads[0].memory: expected a mapping"},
      {"neither source", OneWorkload("{headroomPercent: 10}"),
       "workloads[0].memory.highWaterMark: give exactly one of highWaterMark"},
      {"unknown memory field", OneWorkload("{highWaterMark: 1Gi, peak: 2Gi}"),
       "workloads[0].memory.peak: unknown field"},
      {"headroom too big", OneWorkload("{highWaterMark: 1Gi, headroomPercent: 401}"),
       "workloads[0].memory.headroomPercent: expected a number from 0 to 400"},
      {"workspace zero", OneWorkload("{highWaterMark: 1Gi, workspace: '0'}"),
       "workloads[0].memory.workspace: must be positive"},
      {"parameters missing", OneWorkload("{model: {layers: 1}}"),
       "workloads[0].memory.model.parameters: missing (e.g. 7B or 7000000000)"},
      {"parameters unreadable", OneWorkload("{model: {parameters: lots}}"),
       "workloads[0].memory.model.parameters: \"lots\" is not a parameter count"},
      {"parameters zero", OneWorkload("{model: {parameters: 0}}"),
       "workloads[0].memory.model.parameters: expected a count such as 7B, 13B or 7000000000"},
      {"parameters absurd", OneWorkload("{model: {parameters: 1e16}}"),
       "workloads[0].memory.model.parameters: expected a count"},
      {"parameters a flag", OneWorkload("{model: {parameters: true}}"),
       "workloads[0].memory.model.parameters: expected a count"},
      {"kvHeads missing", OneWorkload("{model: {parameters: 7B, layers: 1}}"),
       "workloads[0].memory.model.kvHeads: missing"},
      {"maxTokens missing", OneWorkload(model_head + "}}"),
       "workloads[0].memory.model.maxTokens: missing"},
      {"concurrency zero", OneWorkload(model_head + ", maxTokens: 1, concurrency: 0}}"),
       "workloads[0].memory.model.concurrency: expected an integer from 1 to 1000000"},
      {"bytes per parameter too small",
       OneWorkload(model_head + ", maxTokens: 1, bytesPerParameter: 0.1}}"),
       "workloads[0].memory.model.bytesPerParameter: expected a number from 0.125 to 16"},
      {"defaults not a mapping", absl::StrCat("defaults: 1\n", OneWorkload("{highWaterMark: 1}")),
       "defaults: expected a mapping"},
      {"unknown default",
       absl::StrCat("defaults: {headroom: 1}\n", OneWorkload("{highWaterMark: 1Gi}")),
       "defaults.headroom: unknown field"},
      {"default out of range",
       absl::StrCat("defaults: {kvBytesPerElement: 32}\n", OneWorkload("{highWaterMark: 1Gi}")),
       "defaults.kvBytesPerElement: expected a number from 0.125 to 16"},
      {"canary without a profile",
       absl::StrCat("canary: {}\n", OneWorkload("{highWaterMark: 1Gi}")),
       "canary.profile: missing"},
      {"unknown canary field",
       absl::StrCat("canary: {profile: 1g.10gb, count: 2}\n", OneWorkload("{highWaterMark: 1Gi}")),
       "canary.count: unknown field"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<plan::PlanInput> in = ParsePlanInput(row.yaml);
    ASSERT_FALSE(in.ok()) << row.yaml;
    EXPECT_EQ(in.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(in.status().message()), HasSubstr(row.error));
  }
}

}  // namespace
}  // namespace common
