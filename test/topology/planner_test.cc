// The planner behind `gpu-tenancy plan`: memory sizing term by term, the mechanism decision
// table, MIG profile choice and its explanation, packing validity on every catalog GPU, the
// nvidia-smi creation order, and whole plans (the worked example, infeasible inputs, fallbacks).
#include "topology/planner.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config_loader.h"
#include "common/plan_input.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/mig_layout.h"

namespace topology {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

const Catalog& Cat() { return common::BuiltinCatalog(); }

const GpuModel& Model(absl::string_view name) {
  const GpuModel* m = Cat().FindModel(name);
  if (m == nullptr) {
    ADD_FAILURE() << "catalog lacks " << name;
    static const GpuModel kEmpty;
    return kEmpty;
  }
  return *m;
}

MemoryInput HighWater(int64_t bytes) {
  MemoryInput m;
  m.high_water_bytes = bytes;
  return m;
}

MemoryInput Llama13B() {
  ModelDescription d;
  d.parameters = 13'000'000'000;
  d.layers = 40;
  d.kv_heads = 40;
  d.head_dim = 128;
  d.max_tokens = 4096;
  d.concurrency = 2;
  MemoryInput m;
  m.model = d;
  return m;
}

const MemoryTerm* Term(const MemorySizing& s, absl::string_view name) {
  for (const MemoryTerm& t : s.terms) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// ---- Sizing -------------------------------------------------------------------------------------

TEST(SizeMemoryTest, ModelDescriptionShowsEveryTerm) {
  absl::StatusOr<MemorySizing> s = SizeMemory(Llama13B());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->source, "model");
  std::vector<std::string> names;
  for (const MemoryTerm& t : s->terms) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"weights", "kv-cache", "workspace", "headroom"}));
  EXPECT_EQ(Term(*s, "weights")->bytes, 26'000'000'000);  // 13B x 2 bytes (fp16 default)
  // 2 x 40 layers x 40 heads x 128 dim x 4096 tokens x 2 sequences x 2 bytes.
  EXPECT_EQ(Term(*s, "kv-cache")->bytes, int64_t{2} * 40 * 40 * 128 * 4096 * 2 * 2);
  EXPECT_EQ(Term(*s, "kv-cache")->bytes, 6'710'886'400);
  EXPECT_EQ(Term(*s, "workspace")->bytes, kGiB);  // documented default
  int64_t subtotal = 26'000'000'000 + 6'710'886'400 + kGiB;
  EXPECT_EQ(Term(*s, "headroom")->bytes, std::llround(subtotal * 0.10));
  EXPECT_EQ(s->total_bytes, subtotal + std::llround(subtotal * 0.10));
  EXPECT_EQ(s->total_mib, (s->total_bytes + kMiB - 1) / kMiB);
  EXPECT_EQ(GiBText(s->total_bytes, true), "34.62 GiB");
  EXPECT_THAT(Term(*s, "weights")->how, HasSubstr("13B params x 2 B"));
  EXPECT_THAT(Term(*s, "kv-cache")->how, HasSubstr("40 layers x 40 KV heads x 128 head dim"));
  EXPECT_THAT(Term(*s, "headroom")->how, HasSubstr("10% of"));
}

TEST(SizeMemoryTest, OverridesForQuantisationKvPrecisionWorkspaceAndHeadroom) {
  MemoryInput m = Llama13B();
  m.model->bytes_per_parameter = 0.5;  // int4
  m.model->kv_bytes_per_element = 1;   // fp8 KV cache
  m.workspace_bytes = 512 * kMiB;
  m.headroom_percent = 25;
  absl::StatusOr<MemorySizing> s = SizeMemory(m);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(Term(*s, "weights")->bytes, 6'500'000'000);
  EXPECT_EQ(Term(*s, "kv-cache")->bytes, 3'355'443'200);
  EXPECT_EQ(Term(*s, "workspace")->bytes, 512 * kMiB);
  int64_t subtotal = 6'500'000'000 + 3'355'443'200 + 512 * kMiB;
  EXPECT_EQ(Term(*s, "headroom")->bytes, std::llround(subtotal * 0.25));
}

TEST(SizeMemoryTest, HighWaterMarkGetsHeadroomOnly) {
  absl::StatusOr<MemorySizing> s = SizeMemory(HighWater(16 * kGiB));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->source, "high-water mark");
  ASSERT_EQ(s->terms.size(), 2u);
  EXPECT_EQ(s->terms[0].name, "measured");
  EXPECT_EQ(s->terms[1].name, "headroom");
  EXPECT_EQ(s->terms[1].bytes, std::llround(16 * kGiB * 0.1));
  EXPECT_EQ(GiBText(s->total_bytes, true), "17.60 GiB");

  MemoryInput with_workspace = HighWater(16 * kGiB);
  with_workspace.workspace_bytes = kGiB;
  with_workspace.headroom_percent = 0;
  s = SizeMemory(with_workspace);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->total_bytes, 17 * kGiB);
}

TEST(SizeMemoryTest, RejectsBadInput) {
  MemoryInput neither;
  EXPECT_EQ(SizeMemory(neither).status().code(), absl::StatusCode::kInvalidArgument);
  MemoryInput both = Llama13B();
  both.high_water_bytes = kGiB;
  EXPECT_EQ(SizeMemory(both).status().code(), absl::StatusCode::kInvalidArgument);
  MemoryInput no_layers = Llama13B();
  no_layers.model->layers = 0;
  EXPECT_THAT(SizeMemory(no_layers).status().message(), HasSubstr("layers"));
  MemoryInput huge = Llama13B();
  huge.model->max_tokens = 1'000'000'000;
  huge.model->concurrency = 1'000'000;
  EXPECT_EQ(SizeMemory(huge).status().code(), absl::StatusCode::kInvalidArgument);
  MemoryInput negative_headroom = HighWater(kGiB);
  negative_headroom.headroom_percent = -5;
  EXPECT_EQ(SizeMemory(negative_headroom).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GiBTextTest, NeedsRoundUpCapacitiesRoundDown) {
  EXPECT_EQ(GiBText(9984 * kMiB, false), "9.75 GiB");
  EXPECT_EQ(GiBText(20096 * kMiB, false), "19.62 GiB");  // as nvidia-smi -lgip prints it
  EXPECT_EQ(GiBText(20096 * kMiB, true), "19.63 GiB");
  EXPECT_EQ(GiBText(kGiB - 1, true), "1.00 GiB");
  EXPECT_EQ(GiBText(0, true), "0.00 GiB");
}

// ---- Mechanism table ----------------------------------------------------------------------------

TEST(ChooseMechanismTest, DecisionTable) {
  struct Row {
    std::string name;
    Trust trust;
    Latency latency;
    bool training;
    bool vm;
    SharingHint hint;
    bool mig;
    Mechanism want;
    bool warns;
  };
  const Trust T = Trust::kTrusted, U = Trust::kUntrusted;
  const Latency S = Latency::kSla, B = Latency::kBestEffort;
  const SharingHint A = SharingHint::kAuto;
  const std::vector<Row> rows = {
      {"untrusted SLA inference on MIG", U, S, false, false, A, true, Mechanism::kMig, false},
      {"untrusted best-effort still gets a boundary", U, B, false, false, A, true, Mechanism::kMig,
       false},
      {"trusted SLA inference on MIG", T, S, false, false, A, true, Mechanism::kMig, false},
      {"trusted best-effort time-slices", T, B, false, false, A, true, Mechanism::kTimeslice,
       false},
      {"trusted best-effort asks for MPS", T, B, false, false, SharingHint::kMps, true,
       Mechanism::kMps, false},
      {"training takes whole GPUs", T, B, true, false, A, true, Mechanism::kExclusive, false},
      {"untrusted training takes whole GPUs", U, S, true, false, A, true, Mechanism::kExclusive,
       false},
      {"untrusted without MIG gets whole GPUs", U, S, false, false, A, false, Mechanism::kExclusive,
       true},
      {"trusted SLA without MIG falls back to MPS", T, S, false, false, A, false, Mechanism::kMps,
       true},
      {"trusted SLA without MIG, time-slicing asked", T, S, false, false, SharingHint::kTimeslice,
       false, Mechanism::kTimeslice, true},
      {"trusted best-effort without MIG", T, B, false, false, A, false, Mechanism::kTimeslice,
       true},
      {"VM boundary is reported, not placed", U, S, false, true, A, true, Mechanism::kVmBoundary,
       true},
      {"VM boundary wins over training", T, B, true, true, A, true, Mechanism::kVmBoundary, true},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    WorkloadSpec w;
    w.name = "w";
    w.tenant = "t";
    w.trust = row.trust;
    w.latency = row.latency;
    w.training = row.training;
    w.vm_boundary = row.vm;
    w.sharing = row.hint;
    MechanismChoice c = ChooseMechanism(w, row.mig ? "H100-80GB" : "L4", row.mig);
    EXPECT_EQ(c.mechanism, row.want) << MechanismName(c.mechanism);
    EXPECT_EQ(!c.warnings.empty(), row.warns) << absl::StrJoin(c.warnings, "; ");
    EXPECT_FALSE(c.reasons.empty());
  }
}

TEST(ChooseMechanismTest, WarningsSayWhatIsMissing) {
  WorkloadSpec w;
  w.name = "chat";
  w.tenant = "acme";
  w.trust = Trust::kTrusted;
  w.latency = Latency::kSla;
  MechanismChoice c = ChooseMechanism(w, "L4", false);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_THAT(c.warnings[0], HasSubstr("no hardware boundary"));
  w.vm_boundary = true;
  c = ChooseMechanism(w, "H100-80GB", true);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_THAT(c.warnings[0], HasSubstr("licensed per concurrent vGPU"));
  EXPECT_THAT(c.warnings[0], HasSubstr("NVIDIA AI Enterprise"));
}

// ---- Profile choice -----------------------------------------------------------------------------

TEST(ChooseProfileTest, SmallestProfileThatHoldsIt) {
  struct Row {
    std::string model;
    int64_t need_bytes;
    std::string want;  // empty: whole card
  };
  const std::vector<Row> rows = {
      {"H100-80GB", 3 * kGiB, "1g.10gb"},
      {"H100-80GB", 9984 * kMiB, "1g.10gb"},      // exactly 9.75 GiB still fits
      {"H100-80GB", 9984 * kMiB + 1, "2g.20gb"},  // one byte more does not
      {"H100-80GB", 17 * kGiB, "2g.20gb"},        // not 1g.20gb: same memory, 1 SM slice
      {"H100-80GB", 35 * kGiB, "3g.40gb"},        // not 4g.40gb: same memory, more compute
      {"H100-80GB", 40448 * kMiB + 1, ""},        // only the whole card holds it
      {"A100-40GB", 8 * kGiB, "2g.10gb"},
      {"A100-40GB", 4 * kGiB, "1g.5gb"},
      {"A100-80GB", 30 * kGiB, "3g.40gb"},
      {"A30-24GB", 10 * kGiB, "2g.12gb"},
      {"A30-24GB", 12 * kGiB, ""},
      {"H100-NVL-94GB", 45 * kGiB, "3g.47gb"},
      {"H100-96GB-GH200", 11 * kGiB, "1g.12gb"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(absl::StrCat(row.model, " ", row.need_bytes));
    absl::StatusOr<ProfileChoice> c = ChooseProfile(Model(row.model), row.need_bytes);
    ASSERT_TRUE(c.ok()) << c.status();
    if (row.want.empty()) {
      EXPECT_EQ(c->profile, nullptr);
      EXPECT_THAT(c->explanation, HasSubstr("no MIG profile short of the whole card"));
    } else {
      ASSERT_NE(c->profile, nullptr);
      EXPECT_EQ(c->profile->name, row.want);
      EXPECT_EQ(c->profile->name.find('+'), std::string::npos);
    }
  }
}

TEST(ChooseProfileTest, ExplainsTheRounding) {
  absl::StatusOr<ProfileChoice> c = ChooseProfile(Model("H100-80GB"), std::llround(17.6 * kGiB));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->explanation, HasSubstr("needs 17.60 GiB -> 2g.20gb (19.62 GiB)"));
  EXPECT_THAT(c->explanation, HasSubstr("1g.10gb holds only 9.75 GiB"));
  EXPECT_THAT(c->explanation, HasSubstr("1g.20gb has the same memory"));
}

TEST(ChooseProfileTest, CannotSizeWithoutCatalogMemory) {
  for (const char* model : {"H200-141GB", "B200-180GB", "GB200-186GB", "GH200-144GB-HBM3e"}) {
    SCOPED_TRACE(model);
    absl::StatusOr<ProfileChoice> c = ChooseProfile(Model(model), 10 * kGiB);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(c.status().message(), HasSubstr("cannot size"));
    EXPECT_THAT(c.status().message(), HasSubstr(model));
  }
}

// ---- Packing on every catalog GPU ---------------------------------------------------------------

std::map<std::string, int> Count(const std::vector<const MigProfile*>& profiles) {
  std::map<std::string, int> out;
  for (const MigProfile* p : profiles) ++out[p->name];
  return out;
}

void ExpectValidPacking(const GpuModel& gpu, const std::vector<const MigProfile*>& profiles,
                        int* gpus_used = nullptr) {
  absl::StatusOr<std::vector<std::vector<PlacedInstance>>> packed = PackProfiles(gpu, profiles);
  ASSERT_TRUE(packed.ok()) << packed.status();
  std::vector<const MigProfile*> placed;
  int memory = 0, compute = 0;
  for (const auto& layout : *packed) {
    EXPECT_TRUE(CheckLayout(gpu, layout).ok()) << CheckLayout(gpu, layout);
    EXPECT_FALSE(layout.empty());
    for (const PlacedInstance& inst : layout) placed.push_back(inst.profile);
  }
  for (const MigProfile* p : profiles) {
    memory += p->memory_slices;
    compute += p->compute_slices;
  }
  EXPECT_EQ(Count(placed), Count(profiles));
  int lower = std::max((memory + gpu.memory_slices - 1) / gpu.memory_slices,
                       (compute + gpu.compute_slices - 1) / gpu.compute_slices);
  EXPECT_GE(static_cast<int>(packed->size()), lower);
  if (gpus_used) *gpus_used = static_cast<int>(packed->size());
}

TEST(PackProfilesTest, EveryCatalogModelEveryProfileMix) {
  std::mt19937 rng(20240611);
  for (const GpuModel& gpu : Cat().models()) {
    SCOPED_TRACE(gpu.model);
    ASSERT_FALSE(gpu.profiles.empty());
    // Each profile alone, max_count copies of it (a full card of one kind), and twice that.
    for (const MigProfile& p : gpu.profiles) {
      SCOPED_TRACE(p.name);
      ExpectValidPacking(gpu, {&p});
      int used = 0;
      ExpectValidPacking(gpu, std::vector<const MigProfile*>(p.max_count, &p), &used);
      if (p.memory_slices * p.max_count <= gpu.memory_slices &&
          p.compute_slices * p.max_count <= gpu.compute_slices) {
        EXPECT_EQ(used, 1) << "a full card of " << p.name << " should fit one GPU";
      }
      ExpectValidPacking(gpu, std::vector<const MigProfile*>(2 * p.max_count, &p));
    }
    // One of every profile, attribute variants included.
    std::vector<const MigProfile*> all;
    for (const MigProfile& p : gpu.profiles) all.push_back(&p);
    ExpectValidPacking(gpu, all);
    // Random mixes.
    for (int trial = 0; trial < 40; ++trial) {
      std::uniform_int_distribution<size_t> pick(0, gpu.profiles.size() - 1);
      std::uniform_int_distribution<int> size(1, 20);
      std::vector<const MigProfile*> mix;
      for (int k = size(rng); k > 0; --k) mix.push_back(&gpu.profiles[pick(rng)]);
      SCOPED_TRACE(absl::StrCat("trial ", trial));
      ExpectValidPacking(gpu, mix);
    }
  }
}

TEST(PackProfilesTest, KnownLayoutsUseTheFewestGpus) {
  const GpuModel& h100 = Model("H100-80GB");
  auto p = [&](const char* name) { return h100.FindProfile(name); };
  int used = 0;
  ExpectValidPacking(h100,
                     {p("1g.10gb"), p("3g.40gb"), p("1g.10gb"), p("2g.20gb"), p("3g.40gb"),
                      p("1g.10gb"), p("2g.20gb"), p("1g.10gb")},
                     &used);
  EXPECT_EQ(used, 2);  // two cards cut 3g.40gb + 2g.20gb + 1g.10gb + 1g.10gb
  ExpectValidPacking(h100, std::vector<const MigProfile*>(7, p("1g.10gb")), &used);
  EXPECT_EQ(used, 1);
  ExpectValidPacking(h100, std::vector<const MigProfile*>(8, p("1g.10gb")), &used);
  EXPECT_EQ(used, 2);  // slice 7 is out of reach of 1-slice profiles
  ExpectValidPacking(h100, {p("4g.40gb"), p("3g.40gb"), p("4g.40gb")}, &used);
  EXPECT_EQ(used, 2);
}

TEST(PackProfilesTest, RejectsForeignProfiles) {
  const GpuModel& h100 = Model("H100-80GB");
  const GpuModel& a100 = Model("A100-40GB");
  EXPECT_EQ(PackProfiles(h100, {a100.FindProfile("1g.5gb")}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---- Creation order -----------------------------------------------------------------------------

TEST(CreationTest, ReplaysNvidiasDocumentedExample) {
  const GpuModel& a100 = Model("A100-40GB");
  auto p = [&](const char* name) { return a100.FindProfile(name); };
  EXPECT_FALSE(SimulateCreate(a100, {p("1g.5gb"), p("1g.5gb"), p("2g.10gb"), p("3g.20gb")}));
  EXPECT_TRUE(SimulateCreate(a100, {p("3g.20gb"), p("1g.5gb"), p("2g.10gb"), p("1g.5gb")}));
}

TEST(CreationTest, EveryModelGetsAVerifiedOrderForItsPackedLayouts) {
  std::mt19937 rng(7);
  for (const GpuModel& gpu : Cat().models()) {
    SCOPED_TRACE(gpu.model);
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<const MigProfile*> mix;
      std::uniform_int_distribution<size_t> pick(0, gpu.profiles.size() - 1);
      for (int k = 0; k < 10; ++k) mix.push_back(&gpu.profiles[pick(rng)]);
      auto packed = PackProfiles(gpu, mix);
      ASSERT_TRUE(packed.ok()) << packed.status();
      for (const auto& layout : *packed) {
        CreationOrder order = PlanCreation(gpu, layout);
        EXPECT_TRUE(CheckLayout(gpu, order.layout).ok());
        std::vector<const MigProfile*> want, got;
        for (const PlacedInstance& i : layout) want.push_back(i.profile);
        for (const PlacedInstance& i : order.layout) got.push_back(i.profile);
        EXPECT_EQ(Count(got), Count(want));
        if (order.verified) {
          auto replay = SimulateCreate(gpu, order.order);
          ASSERT_TRUE(replay.has_value());
          EXPECT_EQ(replay->size(), layout.size());
        }
      }
    }
  }
}

TEST(CreationTest, H100ThreeTwoOneOneStartsWithTheThreeG) {
  const GpuModel& h100 = Model("H100-80GB");
  auto layout = PlaceProfiles(h100, {h100.FindProfile("1g.10gb"), h100.FindProfile("1g.10gb"),
                                     h100.FindProfile("2g.20gb"), h100.FindProfile("3g.40gb")});
  ASSERT_TRUE(layout.has_value());
  CreationOrder order = PlanCreation(h100, *layout);
  ASSERT_TRUE(order.verified);
  std::vector<std::string> names;
  for (const MigProfile* p : order.order) names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}));
}

// ---- Whole plans --------------------------------------------------------------------------------

FleetNode Node(std::string name, std::string gpu, int count, std::string zone = "",
               std::optional<int64_t> memory_mib = std::nullopt) {
  FleetNode n;
  n.name = std::move(name);
  n.gpu = std::move(gpu);
  n.count = count;
  n.zone = std::move(zone);
  n.memory_mib = memory_mib;
  return n;
}

WorkloadSpec Workload(std::string name, std::string tenant, Trust trust, Latency latency,
                      MemoryInput memory) {
  WorkloadSpec w;
  w.name = std::move(name);
  w.tenant = std::move(tenant);
  w.trust = trust;
  w.latency = latency;
  w.memory = std::move(memory);
  return w;
}

std::vector<std::string> Cut(const GpuPlan& g) {
  std::vector<std::string> out;
  for (const PlannedInstance& i : g.instances) out.push_back(i.profile->name);
  std::sort(out.begin(), out.end());
  return out;
}

void ExpectEveryLayoutValid(const Plan& plan) {
  for (const GpuPlan& g : plan.gpus) {
    if (g.use != GpuUse::kMig) continue;
    std::vector<PlacedInstance> layout;
    for (const PlannedInstance& i : g.instances) layout.push_back({i.profile, i.start});
    EXPECT_TRUE(CheckLayout(*g.model, layout).ok()) << g.node << "/" << g.index;
    EXPECT_TRUE(g.create_order_verified) << g.node << "/" << g.index;
  }
}

absl::StatusOr<Plan> PlanFile(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return absl::NotFoundError(path);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  std::fclose(f);
  absl::StatusOr<PlanInput> input = common::ParsePlanInput(text);
  if (!input.ok()) return input.status();
  return MakePlan(*input, Cat());
}

TEST(MakePlanTest, WorkedExample) {
  absl::StatusOr<Plan> plan = PlanFile(GT_SOURCE_DIR "/cmd/demo/plan-example.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->gpus_used, 4);
  EXPECT_EQ(plan->baseline_gpus, 7);
  EXPECT_EQ(plan->baseline_replica_gpus, 16);
  EXPECT_EQ(plan->lower_bound, 4);
  ExpectEveryLayoutValid(*plan);
  std::vector<std::vector<std::string>> cuts;
  int exclusive = 0;
  for (const GpuPlan& g : plan->gpus) {
    if (g.use == GpuUse::kMig) cuts.push_back(Cut(g));
    if (g.use == GpuUse::kExclusive) {
      ++exclusive;
      ASSERT_EQ(g.clients.size(), 1u);
      EXPECT_EQ(plan->workloads[g.clients[0].workload].spec.name, "nightly-finetune");
    }
  }
  std::vector<std::string> zone_card = {"1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"};
  EXPECT_THAT(cuts,
              UnorderedElementsAre(zone_card, zone_card, std::vector<std::string>(7, "1g.10gb")));
  EXPECT_EQ(exclusive, 1);
  // Mirrored replicas sit in different zones; the embedding pool shares one card.
  std::map<std::string, std::vector<std::string>> zones;
  std::set<std::string> embed_cards;
  for (const GpuPlan& g : plan->gpus) {
    for (const PlannedInstance& i : g.instances) {
      const WorkloadPlan& w = plan->workloads[i.holder.workload];
      if (w.spec.mirrored) zones[w.spec.name].push_back(g.zone);
      if (w.spec.name == "embed-pool") embed_cards.insert(absl::StrCat(g.node, "/", g.index));
    }
  }
  for (const auto& [name, z] : zones) {
    SCOPED_TRACE(name);
    EXPECT_THAT(z, UnorderedElementsAre("a", "b"));
  }
  EXPECT_EQ(embed_cards.size(), 1u);
  // Sizes land where the example says, from both sizing paths.
  std::map<std::string, std::string> profiles;
  for (const WorkloadPlan& w : plan->workloads) {
    profiles[w.spec.name] = w.profile ? w.profile->name : std::string(MechanismName(w.mechanism));
  }
  EXPECT_EQ(profiles["acme-chat"], "3g.40gb");    // model description
  EXPECT_EQ(profiles["bank-assist"], "2g.20gb");  // high-water mark
  EXPECT_EQ(profiles["cobalt-code"], "1g.10gb");
  EXPECT_EQ(profiles["delta-classify"], "1g.10gb");
  EXPECT_EQ(profiles["nightly-finetune"], "exclusive");
}

PlanInput OneH100(WorkloadSpec w) {
  PlanInput in;
  in.fleet = {Node("n1", "H100-80GB", 1)};
  in.workloads = {std::move(w)};
  return in;
}

TEST(MakePlanTest, InfeasibleWholeGpuNamesTheWorkload) {
  WorkloadSpec w =
      Workload("huge-llm", "acme", Trust::kUntrusted, Latency::kSla, HighWater(200 * kGiB));
  absl::StatusOr<Plan> plan = MakePlan(OneH100(w), Cat());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(plan.status().message(), HasSubstr("\"huge-llm\""));
  EXPECT_THAT(plan.status().message(), HasSubstr("maxGpus is 1"));
  EXPECT_THAT(plan.status().message(), HasSubstr("maxGpus: 3"));
}

TEST(MakePlanTest, MultiGpuReplicaStaysOnOneNode) {
  WorkloadSpec w =
      Workload("huge-llm", "acme", Trust::kUntrusted, Latency::kSla, HighWater(200 * kGiB));
  w.max_gpus = 4;
  PlanInput in;
  in.fleet = {Node("small", "H100-80GB", 2), Node("big", "H100-80GB", 4)};
  in.workloads = {w};
  absl::StatusOr<Plan> plan = MakePlan(in, Cat());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->workloads[0].gpus_per_replica, 3);
  EXPECT_EQ(plan->baseline_gpus, 3);
  for (const GpuPlan& g : plan->gpus) {
    if (g.use == GpuUse::kExclusive) {
      EXPECT_EQ(g.node, "big");
    }
  }
  in.fleet = {Node("a", "H100-80GB", 2), Node("b", "H100-80GB", 2)};
  plan = MakePlan(in, Cat());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(plan.status().message(), HasSubstr("on one node"));
}

TEST(MakePlanTest, InfeasibleMigPackingNamesTheReplica) {
  WorkloadSpec w = Workload("chat", "acme", Trust::kUntrusted, Latency::kSla, HighWater(30 * kGiB));
  w.replicas = 3;  // three 3g.40gb cannot share one H100
  absl::StatusOr<Plan> plan = MakePlan(OneH100(w), Cat());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(plan.status().message(), HasSubstr("workload \"chat\" replica 3 of 3"));
  EXPECT_THAT(plan.status().message(), HasSubstr("3g.40gb"));
}

TEST(MakePlanTest, WholeCardWhenNoProfileHoldsIt) {
  WorkloadSpec w = Workload("mid", "acme", Trust::kUntrusted, Latency::kSla, HighWater(45 * kGiB));
  absl::StatusOr<Plan> plan = MakePlan(OneH100(w), Cat());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->workloads[0].mechanism, Mechanism::kExclusive);
  EXPECT_THAT(plan->workloads[0].rounding, HasSubstr("-> 1 whole H100-80GB"));
}

TEST(MakePlanTest, GpusWithoutMigFallBackWithWarnings) {
  PlanInput in;
  in.fleet = {Node("l4-0", "L4", 2, "", 23034)};
  in.workloads = {
      Workload("sla", "t1", Trust::kTrusted, Latency::kSla, HighWater(6 * kGiB)),
      Workload("notebook", "t2", Trust::kTrusted, Latency::kBestEffort, HighWater(4 * kGiB)),
      Workload("stranger", "t3", Trust::kUntrusted, Latency::kSla, HighWater(4 * kGiB)),
  };
  absl::StatusOr<Plan> plan = MakePlan(in, Cat());
  // MPS (for the SLA one) and time-slicing cannot share a node; the untrusted one needs a whole
  // GPU on a node that is not time-sliced either: two GPUs on one node cannot hold all three.
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);

  in.fleet = {Node("l4-0", "L4", 1, "", 23034), Node("l4-1", "L4", 1, "", 23034),
              Node("l4-2", "L4", 1, "", 23034)};
  plan = MakePlan(in, Cat());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->workloads[0].mechanism, Mechanism::kMps);
  EXPECT_EQ(plan->workloads[1].mechanism, Mechanism::kTimeslice);
  EXPECT_EQ(plan->workloads[2].mechanism, Mechanism::kExclusive);
  for (const WorkloadPlan& w : plan->workloads) {
    ASSERT_EQ(w.warnings.size(), 1u) << w.spec.name;
    EXPECT_THAT(w.warnings[0], HasSubstr("L4 has no MIG"));
  }
  std::set<GpuUse> modes;
  for (const NodePlan& n : plan->nodes) {
    modes.insert(n.full_gpu_mode);
    if (n.full_gpu_mode == GpuUse::kTimeslice || n.full_gpu_mode == GpuUse::kMps) {
      EXPECT_GE(n.shared_replicas, 2);
    }
  }
  EXPECT_EQ(modes, (std::set<GpuUse>{GpuUse::kMps, GpuUse::kTimeslice, GpuUse::kExclusive}));
}

TEST(MakePlanTest, SharedClientsPackByMemory) {
  PlanInput in;
  in.fleet = {Node("l40s", "L40S", 2, "", 46068)};
  WorkloadSpec w = Workload("notebooks", "research", Trust::kTrusted, Latency::kBestEffort,
                            HighWater(10 * kGiB));
  w.replicas = 6;  // 11 GiB each with headroom: four per 45 GiB card
  in.workloads = {w};
  absl::StatusOr<Plan> plan = MakePlan(in, Cat());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->gpus_used, 2);
  EXPECT_EQ(plan->gpus[0].clients.size(), 4u);
  EXPECT_EQ(plan->gpus[1].clients.size(), 2u);
  EXPECT_EQ(plan->nodes[0].shared_replicas, 4);
  EXPECT_LE(plan->gpus[0].shared_memory_mib, 46068);
}

TEST(MakePlanTest, MpsRefusesNodesWithMig) {
  PlanInput in;
  in.fleet = {Node("n1", "H100-80GB", 2)};
  WorkloadSpec mig =
      Workload("chat", "acme", Trust::kUntrusted, Latency::kSla, HighWater(8 * kGiB));
  WorkloadSpec mps =
      Workload("batch", "research", Trust::kTrusted, Latency::kBestEffort, HighWater(8 * kGiB));
  mps.sharing = SharingHint::kMps;
  in.workloads = {mig, mps};
  absl::StatusOr<Plan> plan = MakePlan(in, Cat());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(plan.status().message(), HasSubstr("\"batch\""));
  EXPECT_THAT(plan.status().message(), HasSubstr("without MIG"));
  in.fleet.push_back(Node("n2", "H100-80GB", 1));
  plan = MakePlan(in, Cat());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->nodes[1].full_gpu_mode, GpuUse::kMps);
  EXPECT_FALSE(plan->nodes[1].has_mig);
}

TEST(MakePlanTest, VmBoundaryIsReportedNotPlaced) {
  WorkloadSpec w =
      Workload("regulated", "bank", Trust::kUntrusted, Latency::kSla, HighWater(8 * kGiB));
  w.vm_boundary = true;
  absl::StatusOr<Plan> plan = MakePlan(OneH100(w), Cat());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->workloads[0].mechanism, Mechanism::kVmBoundary);
  EXPECT_EQ(plan->gpus_used, 0);
  EXPECT_EQ(plan->baseline_gpus, 0);
  EXPECT_THAT(plan->workloads[0].warnings[0], HasSubstr("licensed per concurrent vGPU"));
}

TEST(MakePlanTest, CanarySlicePerMigNode) {
  PlanInput in;
  in.fleet = {Node("a", "H100-80GB", 1), Node("b", "A100-40GB", 1), Node("c", "H100-80GB", 1)};
  WorkloadSpec h = Workload("chat", "acme", Trust::kUntrusted, Latency::kSla, HighWater(30 * kGiB));
  h.gpu = "H100-80GB";
  WorkloadSpec a = Workload("small", "acme", Trust::kUntrusted, Latency::kSla, HighWater(3 * kGiB));
  a.gpu = "NVIDIA-A100-SXM4-40GB";  // a GFD product label names the model too
  in.workloads = {h, a};
  in.canary_profile = "1g.10gb";
  absl::StatusOr<Plan> plan = MakePlan(in, Cat());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ExpectEveryLayoutValid(*plan);
  std::map<std::string, std::string> canary;  // node -> profile
  for (const GpuPlan& g : plan->gpus) {
    for (const PlannedInstance& i : g.instances) {
      if (i.holder.canary()) canary[g.node] = i.profile->name;
    }
  }
  // The A100-40GB's 1g.10gb is a 2-slice profile; node c has no MIG GPU, so no canary.
  EXPECT_EQ(canary, (std::map<std::string, std::string>{{"a", "1g.10gb"}, {"b", "1g.10gb"}}));
}

TEST(MakePlanTest, InputErrors) {
  WorkloadSpec w = Workload("w", "t", Trust::kTrusted, Latency::kSla, HighWater(kGiB));
  PlanInput in;
  in.fleet = {Node("l4", "L4", 1)};  // not in the catalog and no memory given
  in.workloads = {w};
  EXPECT_THAT(MakePlan(in, Cat()).status().message(), HasSubstr("give its memory"));

  in.fleet = {Node("n", "H100-80GB", 1), Node("n", "H100-80GB", 1)};
  EXPECT_THAT(MakePlan(in, Cat()).status().message(), HasSubstr("listed twice"));

  in.fleet = {Node("n", "H100-80GB", 2)};
  WorkloadSpec other = Workload("x", "t", Trust::kUntrusted, Latency::kSla, HighWater(kGiB));
  in.workloads = {w, other};
  EXPECT_THAT(MakePlan(in, Cat()).status().message(), HasSubstr("disagree on trust"));

  WorkloadSpec mirrored = w;
  mirrored.mirrored = true;
  in.workloads = {mirrored};
  EXPECT_THAT(MakePlan(in, Cat()).status().message(), HasSubstr("fewer than two zones"));

  in.fleet = {Node("n", "H200-141GB", 1)};
  in.workloads = {w};
  absl::Status s = MakePlan(in, Cat()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("workload \"w\": cannot size a MIG profile on H200-141GB"));

  in.fleet = {Node("n", "H100-80GB", 1)};
  WorkloadSpec pinned = w;
  pinned.gpu = "B200-180GB";
  in.workloads = {pinned};
  EXPECT_THAT(MakePlan(in, Cat()).status().message(), HasSubstr("not in the fleet"));
}

}  // namespace
}  // namespace topology
