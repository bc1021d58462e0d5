// `gpu-tenancy check` through the real binary: what it prints (kubectl's own shapes), and its exit
// codes, over the manifests in test/testdata/check/.
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "test/support/serve_process.h"
#include "test/support/shell.h"

namespace {

const std::string kTestData = GT_TESTDATA_DIR;
const std::string kPolicy = kTestData + "/webhook/policy.yaml";

std::string Data(const std::string& name) { return kTestData + "/check/" + name; }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

using Result = testing_support::CommandResult;

Result RunCheck(const std::vector<std::string>& args) {
  std::string command = absl::StrCat(testing_support::ShellQuote(GT_BINARY), " check");
  for (const std::string& a : args) absl::StrAppend(&command, " ", testing_support::ShellQuote(a));
  return testing_support::RunShell(absl::StrCat(command, " </dev/null"));
}

std::string Denial(const std::string& file, const std::string& message) {
  return absl::StrCat(
      "Error from server (Forbidden): error when creating \"", file,
      "\": admission webhook \"validate.gpu-tenancy.io\" denied the request: ", message, "\n");
}

TEST(CheckTest, PrintsWhatKubectlWould) {
  const std::string kTimeSlice =
      "Warning: no memory isolation on time-sliced GPUs; set gpu-tenancy.io/gpu-memory so the "
      "scheduler keeps headroom\n";
  struct Case {
    std::string name;
    std::vector<std::string> args;  // after --policy
    int code;
    std::string out, err;
  } cases[] = {
      {"all allowed, namespace labels from the manifests",
       {Data("allowed.yaml")},
       0,
       "namespace/bank-prod allowed\npod/mig-pod allowed\ndeployment/web allowed\n"
       "configmap/settings allowed\n",
       ""},
      {"a denial and an allowed pod",
       {Data("denied.yaml")},
       1,
       "pod/whole-gpu allowed\n",
       Denial(Data("denied.yaml"),
              "[tier-shared] container \"engine\" requests nvidia.com/gpu.shared, but tenant "
              "\"acme\" (tier untrusted) may use only exclusive, mig; request a MIG slice such as "
              "nvidia.com/mig-1g.10gb")},
      {"a warning", {Data("warn.yaml")}, 0, "pod/notebook allowed\n", kTimeSlice},
      {"workloads are checked through their pod templates",
       {Data("workloads.yaml")},
       1,
       "statefulset/db allowed\ndaemonset/exporter allowed\n",
       Denial(Data("workloads.yaml"),
              "[tenant-limits] container \"trainer\" requests nvidia.com/mig-7g.80gb, but tenant "
              "\"acme\" may use only MIG profiles 1g.10gb, 2g.20gb, 3g.40gb; request one of those "
              "instead") +
           Denial(Data("workloads.yaml"),
                  "[device-access] container \"report\" is privileged, but tenant \"acme\" (tier "
                  "untrusted) has no device access; remove securityContext.privileged") +
           Denial(
               Data("workloads.yaml"),
               "[device-access] container \"agent\" sets NVIDIA_VISIBLE_DEVICES=all without "
               "requesting a GPU, which reaches every GPU on the node, but tenant \"acme\" (tier "
               "untrusted) has no device access; remove it and request nvidia.com/gpu or a MIG "
               "slice")},
      {"no namespace means default",
       {Data("no-namespace.yaml")},
       1,
       "",
       Denial(
           Data("no-namespace.yaml"),
           "[unknown-tenant] namespace \"default\" belongs to no tenant and the policy denies "
           "GPUs to unknown tenants, but container \"main\" requests nvidia.com/gpu; ask the GPU "
           "platform team to add the namespace to a tenant")},
      {"--namespace",
       {"--namespace", "research", Data("no-namespace.yaml")},
       0,
       "pod/floating allowed\n",
       ""},
      {"claims: MPS limits written in, time-slicing refused",
       {Data("claims.yaml")},
       1,
       "resourceclaim/mps-gpu allowed\n",
       "Warning: MPS claim had no defaultActiveThreadPercentage; set to 50, the limit of tenant "
       "\"research\"\n"
       "Warning: MPS claim had no defaultPinnedDeviceMemoryLimit; set to 20480Mi, the limit of "
       "tenant \"research\"\n" +
           Denial(Data("claims.yaml"),
                  "[claim-sharing] ResourceClaimTemplate \"ts-gpu\" config[0] (GpuConfig) asks for "
                  "TimeSlicing sharing, but tenant \"acme\" (tier untrusted) may use only "
                  "exclusive, mig; remove the sharing settings to get a dedicated device, or claim "
                  "a MIG device")},
      {"an unlabelled namespace belongs to nobody",
       {Data("labelled-namespace.yaml")},
       1,
       "",
       Denial(
           Data("labelled-namespace.yaml"),
           "[unknown-tenant] namespace \"team-x\" belongs to no tenant and the policy denies "
           "GPUs to unknown tenants, but container \"main\" requests nvidia.com/mig-3g.40gb; ask "
           "the GPU platform team to add the namespace to a tenant")},
      {"--namespace-labels",
       {"--namespace-labels", "team-x=gpu-tenancy.io/tenant=bank,env=prod",
        Data("labelled-namespace.yaml")},
       0,
       "pod/payments allowed\n",
       ""},
      {"a JSON List",
       {Data("list.json")},
       1,
       "pod/a allowed\n",
       Denial(Data("list.json"),
              "[tier-shared] container \"main\" requests nvidia.com/gpu.memory (GPU memory without "
              "a whole device shares a GPU with other pods), but tenant \"acme\" (tier untrusted) "
              "may use only exclusive, mig; request a MIG slice such as nvidia.com/mig-1g.10gb")},
      {"several files",
       {Data("warn.yaml"), Data("denied.yaml")},
       1,
       "pod/notebook allowed\npod/whole-gpu allowed\n",
       kTimeSlice +
           Denial(Data("denied.yaml"),
                  "[tier-shared] container \"engine\" requests nvidia.com/gpu.shared, but "
                  "tenant \"acme\" (tier untrusted) may use only exclusive, mig; request a "
                  "MIG slice such as nvidia.com/mig-1g.10gb")},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> args = {"--policy", kPolicy};
    args.insert(args.end(), c.args.begin(), c.args.end());
    Result r = RunCheck(args);
    EXPECT_EQ(r.exit_code, c.code) << r.err;
    EXPECT_EQ(r.out, c.out);
    EXPECT_EQ(r.err, c.err);
  }
}

TEST(CheckTest, UsageAndParseErrorsExit2) {
  struct Case {
    std::string name;
    std::vector<std::string> args;
    std::string err_contains;
  } cases[] = {
      {"no policy", {Data("warn.yaml")}, "error: --policy FILE (or --demo) is required"},
      {"no manifest", {"--policy", kPolicy}, "error: give at least one MANIFEST"},
      {"unknown flag",
       {"--policy", kPolicy, "--frobnicate", Data("warn.yaml")},
       "error: unknown flag --frobnicate"},
      {"bad --namespace-labels",
       {"--policy", kPolicy, "--namespace-labels", "team-x", Data("warn.yaml")},
       "expected NS=key=value"},
      {"missing policy file", {"--policy", Data("nope.yaml"), Data("warn.yaml")}, "cannot read"},
      {"an empty namespace",
       {"--policy", kPolicy, "-n", "", Data("warn.yaml")},
       "error: --namespace takes a namespace, not \"\""},
      {"an empty cluster file name",
       {"--policy", kPolicy, "--cluster-file", "", Data("warn.yaml")},
       "error: --cluster-file takes a file, not \"\""},
      {"missing manifest",
       {"--policy", kPolicy, Data("nope.yaml")},
       absl::StrCat("error: ", Data("nope.yaml"), ": cannot read")},
      {"YAML that does not parse",
       {"--policy", kPolicy, Data("bad.yaml")},
       absl::StrCat("error: ", Data("bad.yaml"), ": ")},
      {"a pod the webhook cannot read",
       {"--policy", kPolicy, Data("broken-pod.yaml")},
       absl::StrCat("error: ", Data("broken-pod.yaml"),
                    ": pod/no-spec: request.object.spec: missing")},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result r = RunCheck(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(c.err_contains), std::string::npos) << r.err;
  }
  // A misspelt rule in guard.actions would leave the evictions asked for off without a word.
  testing_support::TempDir dir;
  std::ofstream(dir.File("policy.yaml"))
      << ReadAll(kPolicy) << "guard:\n  actions:\n    tier-shard: evict\n";
  Result guard = RunCheck({"--policy", dir.File("policy.yaml"), Data("warn.yaml")});
  EXPECT_EQ(guard.exit_code, 2) << guard.out << guard.err;
  EXPECT_NE(guard.err.find(absl::StrCat(dir.File("policy.yaml"),
                                        ": guard.actions.tier-shard: not a rule the contract "
                                        "guard reports (one of ")),
            std::string::npos)
      << guard.err;
  // A parse error wins over a denial in the same run.
  Result r = RunCheck({"--policy", kPolicy, Data("denied.yaml"), Data("bad.yaml")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("pod/whole-gpu allowed"), std::string::npos);
}

// Our denial line has exactly the frame of the one kubectl printed against a real API server.
TEST(CheckTest, DenialLineMatchesTheCapturedKubectlOutput) {
  const std::regex frame(
      R"re(^Error from server \(Forbidden\): error when creating "([^"]+)": admission webhook "([^"]+)" denied the request: (.+)$)re");
  std::string captured;
  for (absl::string_view line :
       absl::StrSplit(ReadAll(kTestData + "/admission/kubectl-denial.txt"), '\n')) {
    if (absl::StartsWith(line, "Error from server")) captured = std::string(line);
  }
  ASSERT_FALSE(captured.empty());
  std::smatch m;
  ASSERT_TRUE(std::regex_match(captured, m, frame)) << captured;

  Result r = RunCheck({"--policy", kPolicy, Data("denied.yaml")});
  std::string ours;
  for (absl::string_view line : absl::StrSplit(r.err, '\n')) {
    if (absl::StartsWith(line, "Error from server")) ours = std::string(line);
  }
  ASSERT_TRUE(std::regex_match(ours, m, frame)) << ours;
  EXPECT_EQ(m[1].str(), Data("denied.yaml"));
  EXPECT_EQ(m[2].str(), "validate.gpu-tenancy.io");
  // Warnings come first, one per line, as kubectl prints them.
  Result w = RunCheck({"--policy", kPolicy, Data("warn.yaml")});
  EXPECT_EQ(w.err.rfind("Warning: ", 0), 0u);
}

TEST(CheckTest, HelpAndDemoPolicy) {
  Result help = RunCheck({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("usage: gpu-tenancy check"), std::string::npos);
  // The demo policy has the same tenants as the test policy for acme.
  Result demo = RunCheck({"--demo", Data("denied.yaml")});
  EXPECT_EQ(demo.exit_code, 1);
  EXPECT_EQ(demo.out, "pod/whole-gpu allowed\n");
}

// With --cluster-file the tenant's holdings are known: the demo's acme holds both 1g.10gb slices
// its quota allows, so a third is warned about, or denied with admission enforcement.
TEST(CheckTest, QuotasAgainstWhatTheClusterFileHolds) {
  const std::string demo_policy = ReadAll(std::string(GT_SOURCE_DIR) + "/cmd/demo/policy.yaml");
  ASSERT_TRUE(absl::StrContains(demo_policy, "quotaEnforcement: scheduling"));
  testing_support::TempDir dir;
  std::ofstream(dir.File("deny.yaml")) << absl::StrReplaceAll(
      demo_policy, {{"quotaEnforcement: scheduling", "quotaEnforcement: admission"}});
  const std::string cluster = std::string(GT_SOURCE_DIR) + "/cmd/demo/cluster.yaml";
  const std::string pod = std::string(GT_SOURCE_DIR) + "/cmd/demo/pods/over-quota.yaml";
  const std::string reason = "tenant acme quota: nvidia.com/mig-1g.10gb 2 of 2 held, 1 requested";

  Result warned = RunCheck({"--demo", "--cluster-file", cluster, pod});
  EXPECT_EQ(warned.exit_code, 0) << warned.err;
  EXPECT_EQ(warned.err, absl::StrCat("Warning: ", reason,
                                     "; the pod will stay Pending until the tenant's other GPU "
                                     "pods release enough\n"));
  EXPECT_EQ(warned.out, "pod/embed-3 allowed\n");

  Result denied = RunCheck({"--policy", dir.File("deny.yaml"), "--cluster-file", cluster, pod});
  EXPECT_EQ(denied.exit_code, 1);
  EXPECT_EQ(denied.err, Denial(pod, absl::StrCat("[tenant-quota] ", reason)));

  // Without the cluster nothing is known of holdings: quotas are left to the scheduler.
  Result unknown = RunCheck({"--policy", dir.File("deny.yaml"), pod});
  EXPECT_EQ(unknown.exit_code, 0) << unknown.err;
  EXPECT_EQ(unknown.err, "");

  Result missing = RunCheck({"--demo", "--cluster-file", dir.File("absent.yaml"), pod});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(absl::StrContains(missing.err, "absent.yaml")) << missing.err;
}

// With a cluster file, check reads what the live webhook reads besides the object: the
// DeviceClasses and devices a DRA extended resource reaches, and the node a pod names.
TEST(CheckTest, ClusterFileGivesTheSideDoorRulesTheirInputs) {
  testing_support::TempDir dir;
  const std::string policy = std::string(GT_TESTDATA_DIR) + "/webhook/side-doors-policy.yaml";
  const std::string cluster = std::string(GT_TESTDATA_DIR) + "/webhook/side-doors-cluster.yaml";
  const std::string pod = dir.File("implicit.yaml");
  std::ofstream(pod)
      << "apiVersion: v1\nkind: Pod\nmetadata: {name: implicit, namespace: acme}\n"
         "spec:\n  containers:\n  - name: main\n    image: cuda\n"
         "    resources: {limits: {deviceclass.resource.kubernetes.io/mig.nvidia.com: "
         "1}}\n";
  Result denied = RunCheck({"--policy", policy, "--cluster-file", cluster, pod});
  EXPECT_EQ(denied.exit_code, 1) << denied.err;
  EXPECT_TRUE(absl::StrContains(denied.err,
                                "denied the request: [dra-extended-resource] "
                                "container \"main\" requests "
                                "deviceclass.resource.kubernetes.io/mig.nvidia.com"))
      << denied.err;

  const std::string preset = dir.File("preset.yaml");
  std::ofstream(preset)
      << "apiVersion: v1\nkind: Pod\nmetadata: {name: preset, namespace: acme}\n"
         "spec:\n  nodeName: excl-a\n  containers:\n  - name: main\n"
         "    image: cuda\n    resources: {limits: {nvidia.com/mig-1g.10gb: 1}}\n";
  Result preset_denied = RunCheck({"--policy", policy, "--cluster-file", cluster, preset});
  EXPECT_EQ(preset_denied.exit_code, 1) << preset_denied.err;
  EXPECT_TRUE(absl::StrContains(preset_denied.err, "[preset-node] pod names node \"excl-a\""))
      << preset_denied.err;

  // A claim is counted against the cluster's holdings, as the webhook counts it without a
  // usage record: acme holds its one GPU.
  const std::string claim = dir.File("claim.yaml");
  std::ofstream(claim) << "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
                          "metadata: {name: big, namespace: acme}\nspec:\n  devices:\n"
                          "    requests:\n    - name: gpu\n"
                          "      exactly: {deviceClassName: gpu.nvidia.com, count: 1}\n";
  Result over_quota = RunCheck({"--policy", policy, "--cluster-file", cluster, claim});
  EXPECT_EQ(over_quota.exit_code, 1) << over_quota.err;
  EXPECT_TRUE(absl::StrContains(over_quota.err,
                                "denied the request: [tenant-quota] tenant acme quota: "
                                "nvidia.com/gpu 1 of 1 held, 1 requested"))
      << over_quota.err;
}

// A tenant's allowed PriorityClasses, as admission would enforce them.
TEST(CheckTest, PriorityClassesTheTenantMayNotUse) {
  testing_support::TempDir dir;
  auto pod = [&](const std::string& name, const std::string& priority_class) {
    std::string path = dir.File(name + ".yaml");
    std::ofstream(path) << "apiVersion: v1\nkind: Pod\nmetadata: {name: " << name
                        << ", namespace: acme}\nspec:\n  priorityClassName: " << priority_class
                        << "\n  containers:\n  - name: main\n    image: cuda\n"
                        << "    resources: {limits: {nvidia.com/mig-3g.40gb: 1}}\n";
    return path;
  };
  const std::string policy = kTestData + "/preemption/policy.yaml";
  Result allowed = RunCheck({"--policy", policy, pod("ok", "acme-high")});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
  EXPECT_EQ(allowed.out, "pod/ok allowed\n");
  const std::string high = pod("high", "system-node-critical");
  Result denied = RunCheck({"--policy", policy, high});
  EXPECT_EQ(denied.exit_code, 1);
  EXPECT_EQ(denied.err,
            Denial(high,
                   "[priority-class] priorityClassName \"system-node-critical\" is not allowed "
                   "for tenant \"acme\" (allowed: acme-low, acme-high): a pod's priority decides "
                   "whose pods it may preempt; use one of those"));
}

}  // namespace
