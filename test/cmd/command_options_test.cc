// Each subcommand's typed options, parsed from its own flag table: every value arrives
// converted, and every bad value, missing required flag or clash between two flags is refused
// with an error naming the flag (serve's own: serve_options_test.cc).
#include <stdlib.h>

#include <string>
#include <vector>

#include "cmd/audit.h"
#include "cmd/check.h"
#include "cmd/explain.h"
#include "cmd/node_agent.h"
#include "cmd/plan.h"
#include "cmd/reconfigure.h"
#include "cmd/scheduler_config.h"
#include "cmd/ui.h"
#include "cmd/webhook_config.h"
#include "gtest/gtest.h"

namespace cmd {
namespace {

// argv through `table`, then through the command's parser.
template <typename Options>
absl::StatusOr<Options> ParseWith(const common::FlagTable& table,
                                  absl::StatusOr<Options> (*parse)(const ParsedFlags&),
                                  const std::vector<std::string>& args) {
  absl::StatusOr<ParsedFlags> flags = table.Parse(args);
  if (!flags.ok()) return flags.status();
  return parse(*flags);
}

struct RefusedRow {
  std::vector<std::string> args;
  std::string error;
};

template <typename Options>
void ExpectRefused(const common::FlagTable& table,
                   absl::StatusOr<Options> (*parse)(const ParsedFlags&),
                   const std::vector<RefusedRow>& rows) {
  for (const RefusedRow& row : rows) {
    SCOPED_TRACE(testing::PrintToString(row.args));
    absl::StatusOr<Options> o = ParseWith(table, parse, row.args);
    ASSERT_FALSE(o.ok());
    EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(o.status().message(), row.error);
  }
}

TEST(ExplainOptionsTest, EveryValueArrivesTyped) {
  absl::StatusOr<ExplainOptions> o = ParseWith(
      ExplainFlags(), &ParseExplainOptions,
      {"--cluster-file", "c.json", "--pod", "acme/llm", "--policy", "p.yaml", "-o", "json"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->inputs.cluster_file, "c.json");
  EXPECT_EQ(o->inputs.policy_file, "p.yaml");
  EXPECT_FALSE(o->inputs.demo);
  EXPECT_EQ(o->pod, "acme/llm");
  EXPECT_EQ(o->output, OutputFormat::kJson);
  absl::StatusOr<ExplainOptions> demo =
      ParseWith(ExplainFlags(), &ParseExplainOptions, {"--demo", "--pod", "pod.yaml"});
  ASSERT_TRUE(demo.ok()) << demo.status();
  EXPECT_TRUE(demo->inputs.demo);
  EXPECT_EQ(demo->output, OutputFormat::kText);
}

TEST(ExplainOptionsTest, BadValuesAreRefusedNamingTheFlag) {
  ExpectRefused<ExplainOptions>(
      ExplainFlags(), &ParseExplainOptions,
      {
          {{"--demo"}, "--pod is required"},
          {{"--demo", "--pod", ""}, "--pod takes a file or NAMESPACE/NAME, not \"\""},
          {{"--pod", "acme/llm"}, "give --cluster-file FILE (or --demo)"},
          {{"--demo", "--pod", "acme/llm", "-o", "yaml"}, "-o must be text or json, not \"yaml\""},
          {{"--demo", "--pod", "acme/llm", "acme/other"}, "unexpected argument \"acme/other\""},
          {{"--demo", "--pod", "acme/llm", "--policy="}, "--policy takes a file, not \"\""},
      });
}

TEST(CheckOptionsTest, EveryValueArrivesTyped) {
  absl::StatusOr<CheckOptions> o =
      ParseWith(CheckFlags(), &ParseCheckOptions,
                {"--policy", "p.yaml", "-n", "team-a", "--namespace-labels",
                 "team-a=gpu-tenancy.io/tenant=bank,env=prod", "--namespace-labels",
                 "team-b=", "--cluster-file", "c.json", "a.yaml", "-"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->inputs.policy_file, "p.yaml");
  EXPECT_EQ(o->inputs.cluster_file, "c.json");
  EXPECT_EQ(o->default_namespace, "team-a");
  EXPECT_EQ(o->namespace_labels.at("team-a"),
            (topology::Labels{{"env", "prod"}, {"gpu-tenancy.io/tenant", "bank"}}));
  EXPECT_EQ(o->namespace_labels.at("team-b"), topology::Labels{});
  EXPECT_EQ(o->manifests, (std::vector<std::string>{"a.yaml", "-"}));
  absl::StatusOr<CheckOptions> demo =
      ParseWith(CheckFlags(), &ParseCheckOptions, {"--demo", "pod.yaml"});
  ASSERT_TRUE(demo.ok()) << demo.status();
  EXPECT_EQ(demo->default_namespace, "default");
  EXPECT_EQ(demo->inputs.cluster_file, "") << "--demo lends its policy only";
}

TEST(CheckOptionsTest, BadValuesAreRefusedNamingTheFlag) {
  ExpectRefused<CheckOptions>(
      CheckFlags(), &ParseCheckOptions,
      {
          {{"pod.yaml"}, "--policy FILE (or --demo) is required"},
          {{"--demo"}, "give at least one MANIFEST"},
          {{"--demo", "--namespace-labels", "team-x", "pod.yaml"},
           "--namespace-labels team-x: expected NS=key=value,..."},
          {{"--demo", "--namespace-labels", "team-x=env", "pod.yaml"},
           "--namespace-labels team-x=env: \"env\" is not key=value"},
          {{"--demo", "-n", "", "pod.yaml"}, "--namespace takes a namespace, not \"\""},
      });
}

TEST(PlanOptionsTest, EveryValueArrivesTyped) {
  absl::StatusOr<PlanOptions> input = ParseWith(
      PlanFlags(), &ParsePlanOptions, {"--input", "w.yaml", "--policy", "p", "-o", "yaml"});
  ASSERT_TRUE(input.ok()) << input.status();
  EXPECT_EQ(input->input, "w.yaml");
  EXPECT_FALSE(input->from_cluster);
  EXPECT_EQ(input->inputs.policy_file, "p");
  EXPECT_EQ(input->output, OutputFormat::kYaml);
  absl::StatusOr<PlanOptions> live =
      ParseWith(PlanFlags(), &ParsePlanOptions,
                {"--from-cluster", "--kubeconfig", "kc.yaml", "--context", "prod", "-o", "json"});
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_TRUE(live->from_cluster);
  EXPECT_FALSE(live->inputs.has_cluster());
  EXPECT_EQ(live->api_server.kubeconfig, "kc.yaml");
  EXPECT_EQ(live->api_server.context, "prod");
  EXPECT_EQ(live->output, OutputFormat::kJson);
  absl::StatusOr<PlanOptions> file =
      ParseWith(PlanFlags(), &ParsePlanOptions, {"--from-cluster", "--cluster-file", "c.json"});
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->inputs.cluster_file, "c.json");
}

TEST(PlanOptionsTest, BadValuesAreRefusedNamingTheFlag) {
  ExpectRefused<PlanOptions>(
      PlanFlags(), &ParsePlanOptions,
      {
          {{}, "--input or --from-cluster is required"},
          {{"--input", "w.yaml", "--from-cluster"},
           "--input and --from-cluster are two different plans"},
          {{"--input", "w.yaml", "--demo"}, "--demo needs --from-cluster"},
          {{"--input", "w.yaml", "--kubeconfig", "kc"}, "--kubeconfig needs --from-cluster"},
          {{"--input", ""}, "--input takes a file, not \"\""},
          {{"--input", "w.yaml", "-o", "html"}, "-o must be text, yaml or json, not \"html\""},
          {{"--input", "w.yaml", "extra"}, "unexpected argument \"extra\""},
          {{"--from-cluster", "--demo", "--kubeconfig", "kc"},
           "--kubeconfig and --demo exclude each other (a live cluster or a fixed one)"},
          {{"--from-cluster", "--context", "prod"},
           "--context needs --kubeconfig (the in-cluster service account has no contexts)"},
      });
}

TEST(AuditOptionsTest, EveryValueArrivesTyped) {
  absl::StatusOr<AuditOptions> o =
      ParseWith(AuditFlags(), &ParseAuditOptions,
                {"--demo", "--policy", "p.yaml", "--mig-parted-config", "m.yaml",
                 "--scheduler-config", "s.yaml", "-o", "markdown"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->inputs.has_cluster());
  EXPECT_EQ(o->inputs.policy_file, "p.yaml");
  EXPECT_EQ(o->sources.mig_parted_config, "m.yaml");
  EXPECT_EQ(o->sources.scheduler_config, "s.yaml");
  EXPECT_EQ(o->output, OutputFormat::kMarkdown);
  absl::StatusOr<AuditOptions> live =
      ParseWith(AuditFlags(), &ParseAuditOptions, {"--kubeconfig", "kc.yaml", "-o", "html"});
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_FALSE(live->inputs.has_cluster());
  EXPECT_EQ(live->api_server.kubeconfig, "kc.yaml");
  EXPECT_EQ(live->output, OutputFormat::kHtml);
}

TEST(AuditOptionsTest, BadValuesAreRefusedNamingTheFlag) {
  ExpectRefused<AuditOptions>(
      AuditFlags(), &ParseAuditOptions,
      {
          {{"--demo", "-o", "yaml"}, "-o must be text, json, html or markdown, not \"yaml\""},
          {{"--demo", "stray"}, "unexpected argument \"stray\""},
          {{"--cluster-file", "c.json", "--kubeconfig", "kc"},
           "--kubeconfig and --cluster-file exclude each other (a live cluster or a fixed one)"},
          {{"--context", "prod"},
           "--context needs --kubeconfig (the in-cluster service account has no contexts)"},
          {{"--demo", "--mig-parted-config", ""}, "--mig-parted-config takes a file, not \"\""},
      });
}

TEST(ReconfigureOptionsTest, EveryValueArrivesTyped) {
  absl::StatusOr<ReconfigureOptions> o = ParseWith(ReconfigureFlags(), &ParseReconfigureOptions,
                                                   {"gpu-7",       "--to",
                                                    "all-1g.10gb", "--mig-parted-configmap",
                                                    "ops/mig",     "--kubeconfig",
                                                    "kc.yaml",     "--context",
                                                    "prod",        "--timeout",
                                                    "10m",         "--settle",
                                                    "90s",         "--smoke-image",
                                                    "cuda:12",     "--smoke-namespace",
                                                    "smoke",       "--skip-traffic-check",
                                                    "--dry-run",   "--audit-log",
                                                    "-",           "--log-level",
                                                    "debug",       "-o",
                                                    "json"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->gate.node, "gpu-7");
  EXPECT_EQ(o->gate.target, "all-1g.10gb");
  EXPECT_EQ(o->mig_parted_file, "");
  EXPECT_EQ(o->configmap_namespace, "ops");
  EXPECT_EQ(o->configmap_name, "mig");
  EXPECT_EQ(o->api_server.kubeconfig, "kc.yaml");
  EXPECT_EQ(o->api_server.context, "prod");
  EXPECT_EQ(o->gate.timeout, absl::Minutes(10));
  EXPECT_EQ(o->gate.settle, absl::Seconds(90));
  EXPECT_EQ(o->gate.smoke_image, "cuda:12");
  EXPECT_EQ(o->gate.smoke_namespace, "smoke");
  EXPECT_TRUE(o->gate.skip_traffic_check);
  EXPECT_TRUE(o->gate.dry_run);
  EXPECT_EQ(o->audit_log, "-");
  EXPECT_EQ(o->log_level, common::LogLevel::kDebug);
  EXPECT_EQ(o->output, OutputFormat::kJson);

  absl::StatusOr<ReconfigureOptions> defaults =
      ParseWith(ReconfigureFlags(), &ParseReconfigureOptions,
                {"gpu-7", "--to", "x", "--mig-parted-config", "m.yaml"});
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->mig_parted_file, "m.yaml");
  EXPECT_EQ(defaults->configmap_namespace, "gpu-operator");
  EXPECT_EQ(defaults->configmap_name, "default-mig-parted-config");
  EXPECT_EQ(defaults->gate.timeout, absl::Minutes(30));
  EXPECT_EQ(defaults->gate.settle, absl::Minutes(2));
  EXPECT_EQ(defaults->gate.smoke_image, "");
  EXPECT_EQ(defaults->gate.smoke_namespace, "default");
  EXPECT_FALSE(defaults->gate.dry_run);
  EXPECT_EQ(defaults->log_level, common::LogLevel::kWarn);
  EXPECT_EQ(defaults->output, OutputFormat::kText);
}

TEST(ReconfigureOptionsTest, BadValuesAreRefusedNamingTheFlag) {
  ExpectRefused<ReconfigureOptions>(
      ReconfigureFlags(), &ParseReconfigureOptions,
      {
          {{"--to", "x"}, "NODE is required"},
          {{"a", "b", "--to", "x"}, "exactly one NODE, please"},
          {{"a"}, "--to is required"},
          {{"a", "--to", ""}, "--to takes a config name, not \"\""},
          {{"a", "--to", "x", "--mig-parted-config", "m", "--mig-parted-configmap", "ns/n"},
           "--mig-parted-config and --mig-parted-configmap exclude each other"},
          {{"a", "--to", "x", "--mig-parted-configmap", "mig"},
           "--mig-parted-configmap \"mig\" is not NAMESPACE/NAME"},
          {{"a", "--to", "x", "--mig-parted-configmap", "ns/"},
           "--mig-parted-configmap \"ns/\" is not NAMESPACE/NAME"},
          {{"a", "--to", "x", "--timeout", "soon"},
           "--timeout takes a duration such as 30m (1ms..24h)"},
          {{"a", "--to", "x", "--settle", "25h"},
           "--settle takes a duration such as 90s (1ms..24h)"},
          {{"a", "--to", "x", "--smoke-namespace", "smoke"},
           "--smoke-namespace needs --smoke-image"},
          {{"a", "--to", "x", "--context", "prod"},
           "--context needs --kubeconfig (the in-cluster service account has no contexts)"},
          {{"a", "--to", "x", "--log-level", "loud"},
           "--log-level takes debug, info, warn or error, not \"loud\""},
          {{"a", "--to", "x", "--audit-log", ""}, "--audit-log takes a file or \"-\", not \"\""},
          {{"a", "--to", "x", "-o", "yaml"}, "-o must be text or json, not \"yaml\""},
      });
}

// NODE_NAME is set for the duration of one test, and put back after.
class NodeNameEnv {
 public:
  explicit NodeNameEnv(const char* value) {
    if (const char* old = getenv("NODE_NAME")) saved_ = old;
    if (value) {
      setenv("NODE_NAME", value, 1);
    } else {
      unsetenv("NODE_NAME");
    }
  }
  ~NodeNameEnv() {
    if (saved_) {
      setenv("NODE_NAME", saved_->c_str(), 1);
    } else {
      unsetenv("NODE_NAME");
    }
  }

 private:
  std::optional<std::string> saved_;
};

TEST(NodeAgentOptionsTest, EveryValueArrivesTyped) {
  NodeNameEnv env("from-env");
  absl::StatusOr<NodeAgentCommandOptions> o =
      ParseWith(NodeAgentFlags(), &ParseNodeAgentOptions,
                {"--node", "gpu-7", "--pod-resources-socket", "/run/pr.sock", "--interval", "30s",
                 "--kubelet-timeout", "2s", "--kubeconfig", "kc.yaml", "--context", "prod",
                 "--once", "--metrics-listen", "127.0.0.1:9100", "--log-level", "error"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->round.node, "gpu-7") << "--node wins over NODE_NAME";
  EXPECT_EQ(o->socket, "/run/pr.sock");
  EXPECT_EQ(o->interval, absl::Seconds(30));
  EXPECT_EQ(o->round.kubelet_timeout, absl::Seconds(2));
  EXPECT_EQ(o->api_server.kubeconfig, "kc.yaml");
  EXPECT_EQ(o->api_server.context, "prod");
  EXPECT_TRUE(o->once);
  EXPECT_EQ(o->metrics_host, "127.0.0.1");
  EXPECT_EQ(o->metrics_port, 9100);
  EXPECT_EQ(o->log_level, common::LogLevel::kError);

  absl::StatusOr<NodeAgentCommandOptions> defaults =
      ParseWith(NodeAgentFlags(), &ParseNodeAgentOptions, {});
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->round.node, "from-env");
  EXPECT_EQ(defaults->socket, "/var/lib/kubelet/pod-resources/kubelet.sock");
  EXPECT_EQ(defaults->interval, absl::Seconds(10));
  EXPECT_EQ(defaults->round.kubelet_timeout, absl::Seconds(5));
  EXPECT_FALSE(defaults->once);
  EXPECT_EQ(defaults->metrics_host, "0.0.0.0");
  EXPECT_EQ(defaults->metrics_port, 8080);
  EXPECT_FALSE(defaults->log_level.has_value());
  absl::StatusOr<NodeAgentCommandOptions> off =
      ParseWith(NodeAgentFlags(), &ParseNodeAgentOptions, {"--metrics-listen", "off"});
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_EQ(off->metrics_port, -1);
}

TEST(NodeAgentOptionsTest, BadValuesAreRefusedNamingTheFlag) {
  {
    NodeNameEnv env(nullptr);
    ExpectRefused<NodeAgentCommandOptions>(
        NodeAgentFlags(), &ParseNodeAgentOptions,
        {{{}, "--node is required (or set NODE_NAME from spec.nodeName)"}});
  }
  NodeNameEnv env("n");
  ExpectRefused<NodeAgentCommandOptions>(
      NodeAgentFlags(), &ParseNodeAgentOptions,
      {
          {{"--interval", "500ms"}, "--interval takes a duration such as 10s (1s..1h)"},
          {{"--kubelet-timeout", "2m"},
           "--kubelet-timeout takes a duration such as 5s (100ms..1m)"},
          {{"--metrics-listen", "9100"}, "--metrics-listen \"9100\" is not HOST:PORT"},
          {{"--pod-resources-socket", ""}, "--pod-resources-socket takes a path, not \"\""},
          {{"--context", "prod"},
           "--context needs --kubeconfig (the in-cluster service account has no contexts)"},
          {{"--log-level", "trace"}, "--log-level takes debug, info, warn or error, not \"trace\""},
          {{"gpu-7"}, "unexpected argument \"gpu-7\""},
      });
}

TEST(SchedulerConfigOptionsTest, EveryValueArrivesTyped) {
  absl::StatusOr<SchedulerConfigOptions> o =
      ParseWith(SchedulerConfigFlags(), &ParseSchedulerConfigOptions,
                {"--layout", "default-scheduler", "--policy", "p.yaml", "--cluster-file", "c"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->layout, SchedulerConfigLayout::kDefaultScheduler);
  EXPECT_EQ(o->inputs.policy_file, "p.yaml");
  EXPECT_EQ(o->inputs.cluster_file, "c");
  EXPECT_EQ(ParseWith(SchedulerConfigFlags(), &ParseSchedulerConfigOptions, {})->layout,
            SchedulerConfigLayout::kStanza);
  EXPECT_EQ(
      ParseWith(SchedulerConfigFlags(), &ParseSchedulerConfigOptions, {"--layout", "scheduler"})
          ->layout,
      SchedulerConfigLayout::kScheduler);
}

TEST(SchedulerConfigOptionsTest, BadValuesAreRefusedNamingTheFlag) {
  ExpectRefused<SchedulerConfigOptions>(
      SchedulerConfigFlags(), &ParseSchedulerConfigOptions,
      {
          {{"--layout", "whole"},
           "--layout must be stanza, scheduler or default-scheduler, not \"whole\""},
          {{"--cluster-file", ""}, "--cluster-file takes a file, not \"\""},
          {{"scheduler"}, "unexpected argument \"scheduler\""},
      });
}

TEST(WebhookConfigOptionsTest, ThePolicyOnly) {
  absl::StatusOr<WebhookConfigOptions> o =
      ParseWith(WebhookConfigFlags(), &ParseWebhookConfigOptions, {"--policy", "p.yaml"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->inputs.policy_file, "p.yaml");
  ExpectRefused<WebhookConfigOptions>(WebhookConfigFlags(), &ParseWebhookConfigOptions,
                                      {
                                          {{"--policy", ""}, "--policy takes a file, not \"\""},
                                          {{"p.yaml"}, "unexpected argument \"p.yaml\""},
                                      });
}

TEST(UiOptionsTest, EveryValueArrivesTyped) {
  absl::StatusOr<UiOptions> o =
      ParseWith(UiFlags(), &ParseUiOptions, {"--listen", "[::1]:0", "--policy", "p.yaml"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->listen_host, "::1");
  EXPECT_EQ(o->listen_port, 0);
  EXPECT_EQ(o->inputs.policy_file, "p.yaml");
  absl::StatusOr<UiOptions> defaults = ParseWith(UiFlags(), &ParseUiOptions, {});
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->listen_host, "127.0.0.1");
  EXPECT_EQ(defaults->listen_port, 8090);
}

TEST(UiOptionsTest, BadValuesAreRefusedNamingTheFlag) {
  ExpectRefused<UiOptions>(UiFlags(), &ParseUiOptions,
                           {
                               {{"--listen", "nowhere"}, "--listen \"nowhere\" is not HOST:PORT"},
                               {{"--listen", "h:99999"}, "--listen \"h:99999\" has no valid port"},
                               {{"--policy="}, "--policy takes a file, not \"\""},
                               {{"stray"}, "unexpected argument \"stray\""},
                           });
}

}  // namespace
}  // namespace cmd
