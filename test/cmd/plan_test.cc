// `gpu-tenancy plan` through the built binary: the worked example's JSON, YAML that parses back
// to the same document, the text a person reads, sharing and VM-boundary outputs, exit codes for
// infeasible and malformed inputs; and the YAML input parser's errors.
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "common/plan_input.h"
#include "common/yaml_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "test/support/shell.h"

namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

using Result = testing_support::CommandResult;

// Runs `gpu-tenancy plan ARGS`; stderr is merged into `out` when asked, else dropped.
Result Plan(const std::string& args, bool with_stderr = false) {
  return testing_support::RunShell(absl::StrCat(testing_support::ShellQuote(GT_BINARY), " plan ",
                                                args, with_stderr ? " 2>&1" : ""));
}

std::string Example() {
  return absl::StrCat("--input '", GT_SOURCE_DIR, "/cmd/demo/plan-example.yaml'");
}

std::string WriteInput(const std::string& name, const std::string& yaml) {
  std::string path = absl::StrCat(::testing::TempDir(), "/", name);
  std::ofstream(path) << yaml;
  return absl::StrCat("--input '", path, "'");
}

const rapidjson::Value& At(const rapidjson::Value& v, const char* key) {
  static const rapidjson::Value kNull;
  const rapidjson::Value* m = common::FindMember(v, key);
  EXPECT_NE(m, nullptr) << "missing " << key;
  return m ? *m : kNull;
}

std::string S(const rapidjson::Value& v, const char* key) {
  return std::string(common::AsStringView(At(v, key)));
}

rapidjson::Document Json(const Result& run) {
  EXPECT_EQ(run.exit_code, 0) << run.out;
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(run.out);
  EXPECT_TRUE(doc.ok()) << doc.status() << "\n" << run.out;
  if (!doc.ok()) return rapidjson::Document();
  return *std::move(doc);
}

const rapidjson::Value* FindBy(const rapidjson::Value& array, const char* key,
                               absl::string_view value) {
  if (!array.IsArray()) return nullptr;
  for (const rapidjson::Value& item : array.GetArray()) {
    if (common::StringOr(item, key) == value) return &item;
  }
  return nullptr;
}

TEST(PlanCommandTest, WorkedExampleJson) {
  rapidjson::Document doc = Json(Plan(Example() + " -o json"));
  ASSERT_TRUE(doc.IsObject());
  const rapidjson::Value& summary = At(doc, "summary");
  EXPECT_EQ(At(summary, "gpusUsed").GetInt(), 4);
  EXPECT_EQ(At(summary, "gpusInFleet").GetInt(), 4);
  EXPECT_EQ(At(summary, "baselineGpus").GetInt(), 7);
  EXPECT_EQ(At(summary, "gpusSaved").GetInt(), 3);
  // The zone cards: cobalt, delta, bank and acme on one H100.
  EXPECT_EQ(At(summary, "maxTenantsPerGpu").GetInt(), 4);
  EXPECT_EQ(At(summary, "baselineReplicaGpus").GetInt(), 16);
  EXPECT_TRUE(At(summary, "optimal").GetBool());
  EXPECT_THAT(S(summary, "text"), HasSubstr("4 GPUs used vs 7 for one GPU per workload"));
  EXPECT_THAT(S(summary, "baseline"), HasSubstr("one whole GPU per workload"));

  // Per-GPU geometry: two zone cards 3g+2g+1g+1g, one card of seven 1g, one whole card.
  std::vector<std::multiset<std::string>> cuts;
  std::vector<std::string> exclusive;
  for (const rapidjson::Value& g : At(doc, "gpus").GetArray()) {
    if (S(g, "use") == "mig") {
      std::multiset<std::string> cut;
      for (const rapidjson::Value& i : At(g, "instances").GetArray()) cut.insert(S(i, "profile"));
      cuts.push_back(cut);
      EXPECT_TRUE(At(g, "createOrderVerified").GetBool());
    } else if (S(g, "use") == "exclusive") {
      exclusive.push_back(S(At(g, "clients")[0u], "workload"));
    }
  }
  std::multiset<std::string> zone_card = {"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"};
  std::multiset<std::string> embed_card(std::multiset<std::string>{
      "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"});
  EXPECT_THAT(cuts, UnorderedElementsAre(zone_card, zone_card, embed_card));
  EXPECT_EQ(exclusive, std::vector<std::string>{"nightly-finetune"});

  // Sizing with every term, from both paths, and the rounding explained.
  const rapidjson::Value* acme = FindBy(At(doc, "workloads"), "name", "acme-chat");
  ASSERT_NE(acme, nullptr);
  EXPECT_EQ(S(*acme, "mechanism"), "mig");
  EXPECT_EQ(S(*acme, "profile"), "3g.40gb");
  std::vector<std::string> terms;
  for (const rapidjson::Value& t : At(At(*acme, "memory"), "terms").GetArray())
    terms.push_back(S(t, "name"));
  EXPECT_EQ(terms, (std::vector<std::string>{"weights", "kv-cache", "workspace", "headroom"}));
  const rapidjson::Value* bank = FindBy(At(doc, "workloads"), "name", "bank-assist");
  ASSERT_NE(bank, nullptr);
  EXPECT_EQ(S(At(*bank, "memory"), "source"), "high-water mark");
  EXPECT_THAT(S(*bank, "rounding"),
              HasSubstr("-> 2g.20gb (19.62 GiB); 1g.10gb holds only 9.75 GiB"));

  // nvidia-smi commands, mig-parted config, node labels.
  std::string commands;
  for (const rapidjson::Value& n : At(doc, "nvidiaSmi").GetArray()) {
    for (const rapidjson::Value& c : At(n, "commands").GetArray()) {
      absl::StrAppend(&commands, common::AsStringView(c), "\n");
    }
  }
  EXPECT_THAT(commands, HasSubstr("nvidia-smi mig -i 0 -cgi 9,14,19,19 -C"));
  EXPECT_THAT(commands, HasSubstr("-cgi 19,19,19,19,19,19,19 -C"));
  const rapidjson::Value& parted = At(doc, "migParted");
  EXPECT_EQ(S(parted, "version"), "v1");
  ASSERT_TRUE(At(parted, "mig-configs").IsObject());
  EXPECT_EQ(At(parted, "mig-configs").MemberCount(), 2u);
  std::set<std::string> labelled;
  for (const rapidjson::Value& n : At(doc, "nodeLabels").GetArray()) {
    std::string config = S(At(n, "labels"), "nvidia.com/mig.config");
    EXPECT_NE(common::FindMember(At(parted, "mig-configs"), config), nullptr) << config;
    labelled.insert(S(n, "node"));
  }
  EXPECT_EQ(labelled, (std::set<std::string>{"h100-a", "h100-b"}));
  EXPECT_EQ(At(At(doc, "devicePlugin"), "configs").MemberCount(), 0u);  // no sharing here

  // Pod resources and claims.
  const rapidjson::Value* pod = FindBy(At(doc, "pods"), "workload", "acme-chat");
  ASSERT_NE(pod, nullptr);
  const rapidjson::Value& limits =
      At(At(At(At(At(*pod, "podTemplate"), "spec"), "containers")[0u], "resources"), "limits");
  EXPECT_EQ(At(limits, "nvidia.com/mig-3g.40gb").GetInt(), 1);
  std::map<std::string, std::string> claim_kinds;
  for (const rapidjson::Value& c : At(doc, "resourceClaims").GetArray()) {
    claim_kinds[S(At(c, "metadata"), "name")] = S(c, "kind");
  }
  EXPECT_EQ(claim_kinds["acme-chat-gpu"], "ResourceClaimTemplate");
  EXPECT_EQ(claim_kinds["nightly-finetune-gpu"], "ResourceClaimTemplate");
  EXPECT_EQ(claim_kinds.size(), 7u);
}

// The tenants section loads as our policy file with the demo tiers.
TEST(PlanCommandTest, PolicyTenantsLoad) {
  rapidjson::Document doc = Json(Plan(Example() + " -o json"));
  ASSERT_TRUE(doc.IsObject());
  std::string policy = absl::StrCat(
      "{\"tiers\": [{\"name\": \"untrusted\", \"modes\": [\"exclusive\", \"mig\"]},"
      " {\"name\": \"trusted\", \"modes\": [\"exclusive\", \"mig\", \"mig-shared\", \"mps\", "
      "\"timeslice\"]}],"
      " \"tenants\": ",
      common::ToJson(At(At(doc, "policy"), "tenants")), "}");
  absl::StatusOr<topology::Policy> loaded = common::LoadPolicy(policy);
  ASSERT_TRUE(loaded.ok()) << loaded.status() << "\n" << policy;
  const topology::Tenant* acme = loaded->FindTenant("acme");
  ASSERT_NE(acme, nullptr);
  EXPECT_EQ(acme->tier, "untrusted");
  EXPECT_EQ(acme->limits.mig_profiles, std::vector<std::string>{"3g.40gb"});
  EXPECT_EQ(acme->limits.gpu_memory_mib_per_pod, 40448);
  EXPECT_EQ(loaded->tenants.size(), 6u);
}

TEST(PlanCommandTest, YamlParsesToTheSameDocument) {
  Result yaml = Plan(Example() + " -o yaml");
  ASSERT_EQ(yaml.exit_code, 0) << yaml.out;
  absl::StatusOr<rapidjson::Document> from_yaml = common::YamlToJson(yaml.out);
  ASSERT_TRUE(from_yaml.ok()) << from_yaml.status() << "\n" << yaml.out;
  const rapidjson::Value& parted = At(*from_yaml, "migParted");
  EXPECT_EQ(S(parted, "version"), "v1");
  const rapidjson::Value& configs = At(parted, "mig-configs");
  ASSERT_TRUE(configs.IsObject());
  const rapidjson::Value& a = At(configs, "gpu-tenancy-h100-a");
  ASSERT_TRUE(a.IsArray());
  EXPECT_EQ(At(At(a[0u], "mig-devices"), "3g.40gb").GetInt(), 1);
  EXPECT_EQ(At(At(a[0u], "mig-devices"), "1g.10gb").GetInt(), 2);
  EXPECT_TRUE(At(a[0u], "mig-enabled").GetBool());

  rapidjson::Document from_json = Json(Plan(Example() + " -o json"));
  EXPECT_TRUE(*from_yaml == from_json) << "YAML and JSON outputs differ";
}

TEST(PlanCommandTest, TextForPeople) {
  Result run = Plan(Example());
  ASSERT_EQ(run.exit_code, 0) << run.out;
  for (const char* want : {
           "4 GPUs used vs 7 for one GPU per workload: 3 saved (43%)",
           "one whole GPU per replica would take 16",
           "nvidia-smi -i 0 -mig 1",
           "nvidia-smi mig -i 0 -cgi 9,14,19,19 -C",
           "nvidia-smi mig -i 1 -cgi 19,19,19,19,19,19,19 -C",
           "version: v1",
           "mig-configs:",
           "kubectl label node h100-a nvidia.com/mig.config=gpu-tenancy-h100-a --overwrite",
           "cut 3g.40gb + 2g.20gb + 2 x 1g.10gb",
           "cut 7 x 1g.10gb",
           "needs 34.62 GiB -> 3g.40gb (39.50 GiB)",
           "weights      24.22 GiB  13B params x 2 B",
           "nvidia.com/mig-2g.20gb: 1",
           "kind: ResourceClaimTemplate",
           "tenants:",
       }) {
    EXPECT_THAT(run.out, HasSubstr(want));
  }
}

constexpr char kSharedFleet[] = R"(
fleet:
  - {node: l4-a, gpu: L4, memory: 23034Mi, count: 2}
  - {node: l4-b, gpu: L4, memory: 23034Mi}
  - {node: h100, gpu: NVIDIA-H100-80GB-HBM3}
workloads:
  - name: notebooks
    tenant: research
    trust: trusted
    latency: best-effort
    replicas: 3
    gpu: L4
    memory: {highWaterMark: 6Gi}
  - name: ranker
    tenant: research
    trust: trusted
    latency: sla
    gpu: L4
    memory: {highWaterMark: 5Gi}
  - name: regulated
    tenant: bank
    trust: untrusted
    latency: sla
    vmBoundary: true
    memory: {highWaterMark: 20Gi}
)";

TEST(PlanCommandTest, SharingOutputs) {
  rapidjson::Document doc = Json(Plan(WriteInput("shared.yaml", kSharedFleet) + " -o json"));
  ASSERT_TRUE(doc.IsObject());
  const rapidjson::Value& configs = At(At(doc, "devicePlugin"), "configs");
  ASSERT_TRUE(configs.IsObject());
  int timeslice = 0, mps = 0;
  for (auto it = configs.MemberBegin(); it != configs.MemberEnd(); ++it) {
    const rapidjson::Value& sharing = At(it->value, "sharing");
    EXPECT_EQ(S(it->value, "version"), "v1");
    const rapidjson::Value* method = common::FindMember(sharing, "timeSlicing");
    if (method) {
      ++timeslice;
    } else {
      method = &At(sharing, "mps");
      ++mps;
    }
    EXPECT_TRUE(At(*method, "renameByDefault").GetBool());
    EXPECT_TRUE(At(*method, "failRequestsGreaterThanOne").GetBool());
    const rapidjson::Value& resource = At(*method, "resources")[0u];
    EXPECT_EQ(S(resource, "name"), "nvidia.com/gpu");
    EXPECT_GE(At(resource, "replicas").GetInt(), 2);
  }
  EXPECT_EQ(timeslice, 1);
  EXPECT_EQ(mps, 1);
  std::set<std::string> plugin_labels;
  for (const rapidjson::Value& n : At(doc, "nodeLabels").GetArray()) {
    const rapidjson::Value* label =
        common::FindMember(At(n, "labels"), "nvidia.com/device-plugin.config");
    if (label) plugin_labels.insert(S(n, "node"));
  }
  EXPECT_EQ(plugin_labels, (std::set<std::string>{"l4-a", "l4-b"}));

  const rapidjson::Value* pod = FindBy(At(doc, "pods"), "workload", "notebooks");
  ASSERT_NE(pod, nullptr);
  const rapidjson::Value& tmpl = At(*pod, "podTemplate");
  EXPECT_EQ(At(At(At(At(At(tmpl, "spec"), "containers")[0u], "resources"), "limits"),
               "nvidia.com/gpu.shared")
                .GetInt(),
            1);
  EXPECT_EQ(S(At(At(tmpl, "metadata"), "annotations"), "gpu-tenancy.io/gpu-memory"), "6759Mi");
  const rapidjson::Value* claim = nullptr;
  for (const rapidjson::Value& c : At(doc, "resourceClaims").GetArray()) {
    if (S(At(c, "metadata"), "name") == "notebooks-shared-gpu") claim = &c;
  }
  ASSERT_NE(claim, nullptr);
  EXPECT_EQ(S(*claim, "kind"), "ResourceClaim");
  EXPECT_THAT(common::ToJson(*claim), HasSubstr("\"strategy\":\"TimeSlicing\""));

  // The VM-boundary tenant is reported, not placed, and the licence is named.
  const rapidjson::Value* vm = FindBy(At(doc, "workloads"), "name", "regulated");
  ASSERT_NE(vm, nullptr);
  EXPECT_EQ(S(*vm, "mechanism"), "vm");
  std::string warnings = common::ToJson(At(doc, "warnings"));
  EXPECT_THAT(warnings, HasSubstr("licensed per concurrent vGPU"));
  EXPECT_THAT(warnings, HasSubstr("no hardware boundary"));
  EXPECT_EQ(FindBy(At(doc, "pods"), "workload", "regulated"), nullptr);

  Result yaml = Plan(WriteInput("shared.yaml", kSharedFleet) + " -o yaml");
  ASSERT_EQ(yaml.exit_code, 0);
  absl::StatusOr<rapidjson::Document> parsed = common::YamlToJson(yaml.out);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << yaml.out;
  EXPECT_TRUE(*parsed == doc);
  Result text = Plan(WriteInput("shared.yaml", kSharedFleet));
  EXPECT_THAT(text.out, HasSubstr("timeSlicing:"));
  EXPECT_THAT(text.out, HasSubstr("renameByDefault: true"));
  EXPECT_THAT(text.out, HasSubstr("failRequestsGreaterThanOne: true"));
  EXPECT_THAT(text.out, HasSubstr("VM boundary: not placed by this plan"));
}

TEST(PlanCommandTest, InfeasibleInputExits1NamingTheWorkload) {
  Result run = Plan(WriteInput("huge.yaml", R"(
fleet:
  - {node: n1, gpu: H100-80GB, count: 4}
workloads:
  - name: huge-llm
    tenant: acme
    trust: untrusted
    latency: sla
    memory: {highWaterMark: 200Gi}
)"),
                    /*with_stderr=*/true);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.out, HasSubstr("error: workload \"huge-llm\" cannot fit"));
  EXPECT_THAT(run.out, HasSubstr("maxGpus"));
}

TEST(PlanCommandTest, BadInputAndUsageExit2) {
  Result unknown = Plan(WriteInput("unknown.yaml", R"(
fleet: [{node: n1, gpu: H100-80GB}]
workloads:
  - {name: w, tenant: t, trust: trusted, memory: {highWaterMark: 1Gi}, colour: red}
)"),
                        true);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.out, HasSubstr("workloads[0].colour: unknown field"));
  Result usage = Plan("", true);
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_THAT(usage.out, HasSubstr("--input or --from-cluster is required"));
  EXPECT_EQ(Plan(Example() + " -o xml").exit_code, 2);
  EXPECT_EQ(Plan("--input /nonexistent/plan.yaml").exit_code, 2);
  EXPECT_EQ(Plan("--help").exit_code, 0);
}

// ---- The YAML input parser ----------------------------------------------------------------------

TEST(ParsePlanInputTest, ParsesTheSchema) {
  absl::StatusOr<plan::PlanInput> in = common::ParsePlanInput(R"(
defaults: {headroomPercent: 15, kvBytesPerElement: 1}
canary: {profile: 1g.10gb}
fleet:
  - {node: a, gpu: H100-80GB, count: 2, zone: z1}
  - {node: b, gpu: L4, memory: 24Gi}
workloads:
  - name: chat
    tenant: acme
    namespace: acme-prod
    trust: untrusted
    latency: sla
    replicas: 2
    mirrored: true
    maxGpus: 2
    memory:
      model: {parameters: 6.74B, layers: 32, kvHeads: 32, headDim: 128, maxTokens: 2048}
  - name: batch
    tenant: research
    trust: trusted
    sharing: mps
    memory: {highWaterMark: 8Gi, headroomPercent: 5}
)");
  ASSERT_TRUE(in.ok()) << in.status();
  ASSERT_EQ(in->fleet.size(), 2u);
  EXPECT_EQ(in->fleet[0].count, 2);
  EXPECT_EQ(in->fleet[0].zone, "z1");
  EXPECT_EQ(in->fleet[1].memory_mib, 24576);
  EXPECT_EQ(in->canary_profile, "1g.10gb");
  const plan::WorkloadSpec& chat = in->workloads[0];
  EXPECT_EQ(chat.namespace_name, "acme-prod");
  EXPECT_EQ(chat.trust, plan::Trust::kUntrusted);
  EXPECT_EQ(chat.latency, plan::Latency::kSla);
  EXPECT_EQ(chat.replicas, 2);
  EXPECT_TRUE(chat.mirrored);
  EXPECT_EQ(chat.max_gpus, 2);
  ASSERT_TRUE(chat.memory.model.has_value());
  EXPECT_EQ(chat.memory.model->parameters, 6'740'000'000);
  EXPECT_EQ(chat.memory.model->bytes_per_parameter, 2.0);
  EXPECT_EQ(chat.memory.model->kv_bytes_per_element, 1.0);  // from defaults
  EXPECT_EQ(chat.memory.model->concurrency, 1);
  EXPECT_EQ(chat.memory.headroom_percent, 15.0);
  const plan::WorkloadSpec& batch = in->workloads[1];
  EXPECT_EQ(batch.latency, plan::Latency::kBestEffort);
  EXPECT_EQ(batch.sharing, plan::SharingHint::kMps);
  EXPECT_EQ(batch.memory.high_water_bytes, int64_t{8} << 30);
  EXPECT_EQ(batch.memory.headroom_percent, 5.0);
  EXPECT_EQ(batch.replicas, 0);  // unset: the planner decides (1, or one per zone)
}

TEST(ParsePlanInputTest, ParameterCounts) {
  absl::StatusOr<plan::PlanInput> numeric = common::ParsePlanInput(
      "fleet: [{node: a, gpu: H100-80GB}]\nworkloads: [{name: w, tenant: t, trust: trusted, "
      "memory: {model: {parameters: 7e9, layers: 1, kvHeads: 1, headDim: 1, maxTokens: 1}}}]");
  ASSERT_TRUE(numeric.ok()) << numeric.status();
  EXPECT_EQ(numeric->workloads[0].memory.model->parameters, 7'000'000'000);
  EXPECT_EQ(*common::ParseParameterCount("13B"), 13'000'000'000);
  EXPECT_EQ(*common::ParseParameterCount("350m"), 350'000'000);
  EXPECT_EQ(*common::ParseParameterCount("1.5T"), 1'500'000'000'000);
  EXPECT_EQ(*common::ParseParameterCount("1234"), 1234);
  EXPECT_FALSE(common::ParseParameterCount("7Q").ok());
  EXPECT_FALSE(common::ParseParameterCount("").ok());
  EXPECT_FALSE(common::ParseParameterCount("-7B").ok());
}

TEST(ParsePlanInputTest, ErrorsNameTheYamlPath) {
  struct Row {
    std::string yaml;
    std::string error;
  };
  const std::string fleet = "fleet: [{node: a, gpu: H100-80GB}]\n";
  const std::vector<Row> rows = {
      {"workloads: []\n" + fleet, "workloads: must not be empty"},
      {"workloads: [{name: w, tenant: t, trust: trusted, memory: {highWaterMark: 1Gi}}]\n",
       "fleet: missing"},
      {fleet + "workloads: [{name: w, tenant: t, trust: maybe, memory: {highWaterMark: 1Gi}}]",
       "workloads[0].trust: \"maybe\" is not one of trusted, untrusted"},
      {fleet + "workloads: [{name: w, tenant: t, trust: trusted}]", "workloads[0].memory: missing"},
      {fleet + "workloads: [{name: w, tenant: t, trust: trusted, memory: {highWaterMark: 1Gi, "
               "model: {parameters: 7B}}}]",
       "give exactly one of highWaterMark"},
      {fleet + "workloads: [{name: w, tenant: t, trust: trusted, memory: {model: {parameters: 7B, "
               "layers: 0, kvHeads: 1, headDim: 1, maxTokens: 1}}}]",
       "workloads[0].memory.model.layers: expected an integer from 1"},
      {fleet + "workloads: [{name: w, tenant: t, trust: trusted, memory: {model: {parameters: 7B, "
               "layers: 1, kvHeads: 1, headDim: 1, maxTokens: 1, heads: 2}}}]",
       "workloads[0].memory.model.heads: unknown field"},
      {fleet + "workloads: [{name: w, tenant: t, trust: trusted, memory: {highWaterMark: 16}}]",
       "workloads[0].memory.highWaterMark: expected a quantity such as"},
      {fleet + "workloads: [{name: w, tenant: t, trust: trusted, memory: {highWaterMark: lots}}]",
       "workloads[0].memory.highWaterMark"},
      {"fleet: [{node: a, gpu: H100-80GB, count: 0}]\nworkloads: [{name: w, tenant: t, trust: "
       "trusted, memory: {highWaterMark: 1Gi}}]",
       "fleet[0].count: expected an integer from 1 to 64"},
      {fleet + "workloads: [{name: w, tenant: t, trust: trusted, memory: {highWaterMark: 1Gi}}]\n"
               "extra: 1",
       "extra: unknown field"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.yaml);
    absl::StatusOr<plan::PlanInput> in = common::ParsePlanInput(row.yaml);
    ASSERT_FALSE(in.ok());
    EXPECT_EQ(in.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(in.status().message(), HasSubstr(row.error));
  }
}

}  // namespace
