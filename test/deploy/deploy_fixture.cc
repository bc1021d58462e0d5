// The deploy tests' shared fixture and helpers (deploy_fixture.h).
#include "test/deploy/deploy_fixture.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "common/yaml_json.h"
#include "gtest/gtest.h"
#include "rapidjson/pointer.h"
#include "test/support/serve_process.h"
#include "test/support/shell.h"

namespace deploy_test {
namespace {

namespace fs = std::filesystem;
using testing_support::CommandResult;
using testing_support::RunShell;
using testing_support::ShellQuote;

}  // namespace

std::string Source(const std::string& relative) {
  return std::string(GT_SOURCE_DIR) + "/" + relative;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string Kubectl() {
  const char* from_env = std::getenv("KUBECTL");
  return from_env && *from_env ? from_env : "kubectl";
}

Render Kustomize(const std::string& dir) {
  Render r;
  r.dir = dir;
  CommandResult result = RunShell(absl::StrCat(Kubectl(), " kustomize ", ShellQuote(dir)));
  if (result.exit_code != 0) {
    r.error = absl::StrCat("`kubectl kustomize ", dir, "` failed (exit ", result.exit_code,
                           "): ", result.err,
                           result.exit_code == 127 ? " -- install kubectl (.ci/install-deps)" : "");
    return r;
  }
  absl::StatusOr<std::vector<rapidjson::Document>> docs = common::YamlDocumentsToJson(result.out);
  if (!docs.ok()) {
    r.error = absl::StrCat("render of ", dir, " is not YAML: ", docs.status().ToString());
    return r;
  }
  r.docs = *std::move(docs);
  return r;
}

const Value* At(const Value* root, const char* pointer) {
  if (!root) return nullptr;
  return rapidjson::Pointer(pointer).Get(*root);
}
std::string Str(const Value* root, const char* pointer) {
  const Value* v = At(root, pointer);
  return v && v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : "";
}
std::vector<std::string> Strings(const Value* root, const char* pointer) {
  std::vector<std::string> out;
  const Value* v = At(root, pointer);
  if (!v || !v->IsArray()) return out;
  for (const Value& item : v->GetArray()) {
    if (item.IsString()) out.emplace_back(item.GetString(), item.GetStringLength());
  }
  return out;
}
std::string Json(const Value* v) { return v ? common::ToJson(*v) : "<missing>"; }

std::vector<RecordingRule> RecordingRules(const Value* prometheus_rule) {
  std::vector<RecordingRule> out;
  const Value* groups = At(prometheus_rule, "/spec/groups");
  if (!groups || !groups->IsArray()) return out;
  for (const Value& group : groups->GetArray()) {
    const Value* rules = At(&group, "/rules");
    if (!rules || !rules->IsArray()) continue;
    for (const Value& rule : rules->GetArray()) {
      std::string record = Str(&rule, "/record");
      if (!record.empty()) out.push_back({record, Str(&rule, "/expr")});
    }
  }
  return out;
}

void DeployTest::SetUpTestSuite() {
  work_ = new testing_support::TempDir();
  ASSERT_NE(work_->path(), "/tmp");
  renders_ = new std::map<std::string, Render>();
}

void DeployTest::TearDownTestSuite() {
  delete work_;  // removes the folder
  work_ = nullptr;
  certs_prepared_ = false;
  delete renders_;
  renders_ = nullptr;
}

namespace {

// Each render's tree under the source folder; the static-certs overlay ("") is rendered from the
// copy PrepareStaticCerts() makes.
const std::vector<std::pair<std::string, std::string>>& RenderTrees() {
  static const std::vector<std::pair<std::string, std::string>> kTrees = {
      {"base", "manifests/base"},
      {"scheduler", "manifests/scheduler"},
      {"cert-manager", "manifests/overlays/cert-manager"},
      {"monitoring", "manifests/monitoring"},
      {"network-policy", "manifests/network-policy"},
      {"reconfigure", "manifests/reconfigure"},
      {"static-certs", ""}};
  return kTrees;
}

}  // namespace

std::vector<std::string> DeployTest::RenderNames() {
  std::vector<std::string> names;
  for (const auto& [name, tree] : RenderTrees()) names.push_back(name);
  return names;
}

const Render& DeployTest::Get(const std::string& name) {
  auto it = renders_->find(name);
  if (it == renders_->end()) {
    auto tree = std::find_if(RenderTrees().begin(), RenderTrees().end(),
                             [&](const auto& entry) { return entry.first == name; });
    Render r;
    if (tree == RenderTrees().end()) {
      r.error = "no render named " + name;
    } else {
      r = Kustomize(tree->second.empty() ? Manifests() + "/overlays/static-certs"
                                         : Source(tree->second));
    }
    it = renders_->emplace(name, std::move(r)).first;
  }
  EXPECT_EQ(it->second.error, "") << name;
  return it->second;
}

void DeployTest::PrepareStaticCerts() {
  if (certs_prepared_) return;
  certs_prepared_ = true;
  // The static-certs overlay is rendered from a copy, so the source tree gets no keys.
  const std::string manifests = work_->File("manifests");
  const std::string certs = work_->File("certs");
  std::error_code ec;
  fs::copy(Source("manifests"), manifests, fs::copy_options::recursive, ec);
  ASSERT_FALSE(ec) << ec.message();
  fs::remove_all(manifests + "/overlays/static-certs/generated", ec);
  CommandResult make = RunShell(
      absl::StrCat("bash ", ShellQuote(Source("certs/make-certs.sh")), " ", ShellQuote(certs)));
  ASSERT_EQ(make.exit_code, 0) << make.out << make.err;
  CommandResult render =
      RunShell(absl::StrCat("EXTENDER_URL=https://10.96.0.42:8443/extender bash ",
                            ShellQuote(Source("certs/render-ca-bundle.sh")), " ", ShellQuote(certs),
                            " ", ShellQuote(manifests + "/overlays/static-certs")));
  ASSERT_EQ(render.exit_code, 0) << render.out << render.err;
}

testing_support::TempDir* DeployTest::work_ = nullptr;
bool DeployTest::certs_prepared_ = false;
std::map<std::string, Render>* DeployTest::renders_ = nullptr;

}  // namespace deploy_test
