// `gpu-tenancy ui` and the pages' JSON under `serve`, through the real binary: the picker's
// endpoints answer the worked example with its four GPUs and refuse bad input with 400 and the
// reason; `serve --demo` adds the live map with each demo tenant's slices.
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "test/support/serve_process.h"
#include "test/support/shell.h"

namespace {

using testing_support::CommandResult;
using testing_support::ServeProcess;
using testing_support::ShellQuote;
using testing_support::TempDir;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Starts `ui` on port 0, waits for its address line, runs `requests` (bash, with $url set to
// http://127.0.0.1:PORT/ui/), then stops it with SIGTERM; echoes the ui's exit status last.
CommandResult WithUi(const TempDir& dir, const std::string& requests) {
  return testing_support::RunShell(absl::StrCat(
      "cd ", ShellQuote(dir.path()), " || exit 1; timeout 20 ", ShellQuote(GT_BINARY),
      " ui --listen 127.0.0.1:0 >ui.out 2>ui.err & pid=$!; "
      "for i in $(seq 200); do grep -q '^ui: ' ui.out 2>/dev/null && break; sleep 0.05; done; "
      "url=$(sed -n 's/^ui: //p' ui.out); ",
      // The signal goes to the ui itself, not to timeout (which would die of it).
      requests, "; pkill -TERM -P $pid; wait $pid; echo \"exit $?\""));
}

TEST(UiTest, ThePickerPlansTheWorkedExampleAndRefusesBadInput) {
  TempDir dir;
  const std::string example = absl::StrCat(GT_SOURCE_DIR, "/cmd/demo/plan-example.yaml");
  CommandResult r = WithUi(
      dir,
      absl::StrCat("curl -s -o plan.json -w 'plan %{http_code}\\n' -G --data-urlencode "
                   "input@",
                   ShellQuote(example),
                   " \"${url}api/plan\"; "
                   "curl -s -o bad.json -w 'bad %{http_code}\\n' \"${url}api/plan?input="
                   "fleet%3A%20%5B%5D\"; "
                   "curl -s -o catalog.json -w 'catalog %{http_code}\\n' \"${url}api/catalog\"; "
                   "curl -s -o /dev/null -w 'map %{http_code}\\n' \"${url}api/map\""));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << Slurp(dir.File("ui.err"));
  EXPECT_EQ(r.out, "plan 200\nbad 400\ncatalog 200\nmap 404\nexit 0\n")
      << Slurp(dir.File("ui.err"));
  rapidjson::Document plan;
  plan.Parse(Slurp(dir.File("plan.json")).c_str());
  ASSERT_TRUE(plan.IsObject()) << Slurp(dir.File("plan.json"));
  EXPECT_EQ(plan["summary"]["gpusUsed"].GetInt(), 4);
  EXPECT_EQ(Slurp(dir.File("bad.json")), R"({"error":"fleet: must not be empty"})");
  rapidjson::Document catalog;
  catalog.Parse(Slurp(dir.File("catalog.json")).c_str());
  ASSERT_TRUE(catalog.IsObject() && catalog["models"].IsArray() && !catalog["models"].Empty());
}

TEST(UiTest, ABadListenAddressIsAUsageError) {
  CommandResult r = testing_support::RunShell(
      absl::StrCat("timeout 20 ", ShellQuote(GT_BINARY), " ui --listen nowhere </dev/null"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')), "error: --listen \"nowhere\" is not HOST:PORT")
      << r.err;
}

// A stray argument used to be ignored (and the pages served anyway); an empty --policy read as
// a file named "".
TEST(UiTest, AStrayArgumentOrAnEmptyPolicyIsAUsageError) {
  for (const auto& [args, error] : std::vector<std::pair<std::string, std::string>>{
           {"policy.yaml", "error: unexpected argument \"policy.yaml\""},
           {"--policy=", "error: --policy takes a file, not \"\""},
       }) {
    SCOPED_TRACE(args);
    CommandResult r = testing_support::RunShell(absl::StrCat(
        "timeout 20 ", ShellQuote(GT_BINARY), " ui --listen 127.0.0.1:0 ", args, " </dev/null"));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err.substr(0, r.err.find('\n')), error) << r.err;
  }
}

TEST(UiTest, ServeDemoMapsEachTenantsSlices) {
  absl::StatusOr<std::unique_ptr<ServeProcess>> serve = ServeProcess::Start({"--demo"});
  ASSERT_TRUE(serve.ok()) << serve.status();
  ServeProcess::Response map = (*serve)->Get("/ui/api/map");
  ASSERT_EQ(map.status, 200) << map.body;
  rapidjson::Document doc;
  doc.Parse(map.body.c_str());
  ASSERT_TRUE(doc.IsObject() && doc["nodes"].IsArray()) << map.body;
  std::string mig_b_holders;
  for (const rapidjson::Value& n : doc["nodes"].GetArray()) {
    if (std::string(n["name"].GetString()) != "mig-b") continue;
    for (const rapidjson::Value& r : n["resources"].GetArray()) {
      for (const rapidjson::Value& h : r["holders"].GetArray()) {
        absl::StrAppend(&mig_b_holders, r["profile"].GetString(), " ", h["tenant"].GetString(), "/",
                        h["pod"].GetString(), "; ");
      }
    }
  }
  EXPECT_EQ(mig_b_holders, "1g.10gb acme/embed-1; 3g.40gb acme/llm-a; 3g.40gb bank/risk-model; ")
      << map.body;
  ServeProcess::Response plan = (*serve)->Get("/ui/api/plan?input=fleet%3A%20%5B%5D");
  EXPECT_EQ(plan.status, 400) << plan.body;
}

}  // namespace
