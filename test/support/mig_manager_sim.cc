#include "test/support/mig_manager_sim.h"

#include <optional>
#include <set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"

namespace testing_support {
namespace {

constexpr char kConfigLabel[] = "nvidia.com/mig.config";
constexpr char kStateLabel[] = "nvidia.com/mig.config.state";
constexpr char kDeployPrefix[] = "nvidia.com/gpu.deploy.";
constexpr char kPaused[] = "paused-for-mig-change";

std::string Quote(const std::string& s) { return absl::StrCat("\"", s, "\""); }

std::map<std::string, std::string> Labels(const rapidjson::Document& node) {
  std::map<std::string, std::string> out;
  const rapidjson::Value* meta = common::FindMember(node, "metadata");
  const rapidjson::Value* labels = meta ? common::FindMember(*meta, "labels") : nullptr;
  if (labels == nullptr || !labels->IsObject()) return out;
  for (auto it = labels->MemberBegin(); it != labels->MemberEnd(); ++it) {
    out.emplace(common::AsStringView(it->name), common::AsStringView(it->value));
  }
  return out;
}

std::vector<std::string> GpuResources(const rapidjson::Document& node) {
  std::vector<std::string> out;
  const rapidjson::Value* status = common::FindMember(node, "status");
  for (const char* part : {"allocatable", "capacity"}) {
    const rapidjson::Value* m = status ? common::FindMember(*status, part) : nullptr;
    if (m == nullptr || !m->IsObject()) continue;
    for (auto it = m->MemberBegin(); it != m->MemberEnd(); ++it) {
      std::string name(common::AsStringView(it->name));
      if (name == "nvidia.com/gpu" || absl::StartsWith(name, "nvidia.com/mig-")) {
        out.push_back(name);
      }
    }
  }
  return out;
}

}  // namespace

MigManagerSim::MigManagerSim(FakeApiServer& api, std::string node, std::chrono::milliseconds delay)
    : api_(api), node_(std::move(node)), delay_(delay) {
  thread_ = std::thread([this] { Run(); });
}

MigManagerSim::~MigManagerSim() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void MigManagerSim::SetOutcome(const std::string& config, MigManagerOutcome outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  outcomes_[config] = std::move(outcome);
}

void MigManagerSim::SetSmokePhase(const std::string& phase) {
  std::lock_guard<std::mutex> lock(mu_);
  smoke_phase_ = phase;
}

void MigManagerSim::Run() {
  std::optional<std::string> applied;  // the config label as of the last reconfiguration
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, std::chrono::milliseconds(5), [this] { return stop_; })) return;
    }
    PlayKubelet();
    std::string json = api_.GetObject(Resource::kNodes, "", node_);
    if (json.empty()) continue;
    rapidjson::Document node;
    node.Parse(json.c_str(), json.size());
    std::map<std::string, std::string> labels = Labels(node);
    std::string config = labels.count(kConfigLabel) ? labels[kConfigLabel] : "";
    if (!applied) {
      applied = config;  // what the node had when the simulation started
      continue;
    }
    if (config == *applied) continue;
    applied = config;
    ++changes_;
    Reconfigure(config);
  }
}

void MigManagerSim::Reconfigure(const std::string& config) {
  std::string json = api_.GetObject(Resource::kNodes, "", node_);
  rapidjson::Document node;
  node.Parse(json.c_str(), json.size());
  std::map<std::string, std::string> labels = Labels(node);
  std::set<std::string>& paused = paused_;  // still paused if an earlier change never finished
  std::string patch = absl::StrCat(R"({"metadata":{"labels":{")", kStateLabel, R"(":"pending")");
  for (const auto& [key, value] : labels) {
    if (absl::StartsWith(key, kDeployPrefix) && value != "false" && value != kPaused) {
      paused.insert(key);
      absl::StrAppend(&patch, ",", Quote(key), ":", Quote(kPaused));
    }
  }
  patch += "}}}";
  EXPECT_TRUE(api_.MergePatch(Resource::kNodes, "", node_, patch).ok());

  MigManagerOutcome outcome;
  outcome.kind = MigManagerOutcome::Kind::kFailed;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, delay_, [this] { return stop_; })) return;
    auto it = outcomes_.find(config);
    if (it != outcomes_.end()) outcome = it->second;
  }
  if (outcome.kind == MigManagerOutcome::Kind::kNever) return;
  bool success = outcome.kind == MigManagerOutcome::Kind::kSuccess;
  std::string labels_patch =
      absl::StrCat(Quote(kStateLabel), ":", Quote(success ? "success" : "failed"));
  for (const std::string& key : paused)
    absl::StrAppend(&labels_patch, ",", Quote(key), ":\"true\"");
  paused.clear();
  if (success) {
    for (const auto& [key, value] : outcome.labels) {
      absl::StrAppend(&labels_patch, ",", Quote(key), ":", Quote(value));
    }
  }
  std::string resources;
  if (success) {
    std::map<std::string, std::string> values;
    for (const std::string& name : GpuResources(node)) values[name] = "null";
    for (const auto& [name, count] : outcome.allocatable) values[name] = Quote(absl::StrCat(count));
    for (const auto& [name, value] : values) {
      absl::StrAppend(&resources, resources.empty() ? "" : ",", Quote(name), ":", value);
    }
  }
  std::string full = absl::StrCat(R"({"metadata":{"labels":{)", labels_patch, "}}");
  if (success) {
    absl::StrAppend(&full, R"(,"status":{"allocatable":{)", resources, R"(},"capacity":{)",
                    resources, "}}");
  }
  full += "}";
  EXPECT_TRUE(api_.MergePatch(Resource::kNodes, "", node_, full).ok());
}

void MigManagerSim::PlayKubelet() {
  std::string phase;
  {
    std::lock_guard<std::mutex> lock(mu_);
    phase = smoke_phase_;
  }
  if (phase.empty()) return;
  for (const std::string& json : api_.ListObjects(Resource::kPods)) {
    rapidjson::Document pod;
    pod.Parse(json.c_str(), json.size());
    const rapidjson::Value* meta = common::FindMember(pod, "metadata");
    const rapidjson::Value* spec = common::FindMember(pod, "spec");
    const rapidjson::Value* labels = meta ? common::FindMember(*meta, "labels") : nullptr;
    if (labels == nullptr || spec == nullptr ||
        common::StringOr(*labels, "app.kubernetes.io/name") != "gpu-tenancy-smoke" ||
        common::StringOr(*spec, "nodeName") != node_) {
      continue;
    }
    const rapidjson::Value* status = common::FindMember(pod, "status");
    if (status != nullptr && common::StringOr(*status, "phase") == phase) continue;
    (void)api_.MergePatch(Resource::kPods, common::StringOr(*meta, "namespace"),
                          common::StringOr(*meta, "name"),
                          absl::StrCat(R"({"status":{"phase":)", Quote(phase), "}}"));
  }
}

}  // namespace testing_support
