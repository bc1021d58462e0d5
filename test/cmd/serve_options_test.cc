// cmd/serve_options: serve's flags become typed options once, with every bad value refused by
// name. Durations arrive as absl::Duration; --leader-elect is true or false and nothing else;
// a --config file fills in only what the command line leaves out.
#include "cmd/serve_options.h"

#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace cmd {
namespace {

absl::StatusOr<ServeOptions> Parse(const std::vector<std::string>& args) {
  absl::StatusOr<ParsedFlags> flags = ServeFlags().Parse(args);
  if (!flags.ok()) return flags.status();
  if (absl::Status s = MergeServeConfigFile(*flags); !s.ok()) return s;
  return ParseServeOptions(*flags);
}

const std::vector<std::string> kCerts = {"--tls-cert", "tls.crt", "--tls-key", "tls.key"};

std::vector<std::string> WithCerts(std::vector<std::string> args) {
  args.insert(args.end(), kCerts.begin(), kCerts.end());
  return args;
}

TEST(ServeOptionsTest, TheDemoNeedsNothing) {
  absl::StatusOr<ServeOptions> o = Parse({"--demo"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->cluster, ClusterSource::kDemo);
  EXPECT_TRUE(o->needs_demo_certificate);
  EXPECT_EQ(o->server.listen_host, "127.0.0.1");
  EXPECT_EQ(o->server.listen_port, 8443);
  EXPECT_EQ(o->server.metrics_host, "127.0.0.1");
  EXPECT_EQ(o->server.metrics_port, 8080);
  EXPECT_TRUE(o->leader_elect);
  EXPECT_EQ(o->assume_ttl, absl::Seconds(30));
  EXPECT_EQ(o->resync, absl::Minutes(5));
  EXPECT_FALSE(o->log_level.has_value());
  EXPECT_FALSE(o->bench_routes);
}

TEST(ServeOptionsTest, EveryValueArrivesTyped) {
  absl::StatusOr<ServeOptions> o = Parse(WithCerts({"--kubeconfig",
                                                    "kc.yaml",
                                                    "--context",
                                                    "prod",
                                                    "--listen",
                                                    "[::1]:9443",
                                                    "--metrics-listen",
                                                    "off",
                                                    "--assume-ttl",
                                                    "45s",
                                                    "--resync",
                                                    "90s",
                                                    "--leader-elect",
                                                    "false",
                                                    "--lease-namespace",
                                                    "gpu-system",
                                                    "--identity",
                                                    "replica-2",
                                                    "--threads",
                                                    "8",
                                                    "--max-connections",
                                                    "100",
                                                    "--max-connections-per-ip",
                                                    "500",
                                                    "--request-deadline",
                                                    "250ms",
                                                    "--keep-alive-timeout",
                                                    "95s",
                                                    "--shutdown-delay",
                                                    "3s",
                                                    "--audit-log",
                                                    "-",
                                                    "--log-level",
                                                    "debug",
                                                    "--validating-webhook-config",
                                                    "v",
                                                    "--mutating-webhook-config",
                                                    "m",
                                                    "--bench-routes"}));
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->cluster, ClusterSource::kLive);
  EXPECT_EQ(o->api_server.kubeconfig, "kc.yaml");
  EXPECT_EQ(o->api_server.context, "prod");
  EXPECT_EQ(o->server.listen_host, "::1");
  EXPECT_EQ(o->server.listen_port, 9443);
  EXPECT_EQ(o->server.metrics_port, -1);
  EXPECT_EQ(o->assume_ttl, absl::Seconds(45));
  EXPECT_EQ(o->resync, absl::Seconds(90));
  EXPECT_FALSE(o->leader_elect);
  EXPECT_EQ(o->lease_namespace, "gpu-system");
  EXPECT_EQ(o->identity, "replica-2");
  EXPECT_EQ(o->server.worker_threads, 8);
  EXPECT_EQ(o->server.max_connections, 100u);
  // The per-address limit never exceeds the total.
  EXPECT_EQ(o->server.max_connections_per_ip, 100u);
  EXPECT_EQ(o->server.request_deadline, absl::Milliseconds(250));
  EXPECT_EQ(o->server.keep_alive_timeout, absl::Seconds(95));
  EXPECT_EQ(o->server.shutdown_delay, absl::Seconds(3));
  EXPECT_EQ(o->server.tls_cert_file, "tls.crt");
  EXPECT_EQ(o->server.tls_key_file, "tls.key");
  EXPECT_FALSE(o->needs_demo_certificate);
  EXPECT_EQ(o->audit_log, "-");
  EXPECT_EQ(o->log_level, common::LogLevel::kDebug);
  EXPECT_EQ(o->validating_webhook_config, "v");
  EXPECT_EQ(o->mutating_webhook_config, "m");
  EXPECT_TRUE(o->bench_routes);
  absl::StatusOr<ServeOptions> file = Parse(WithCerts({"--cluster-file", "c.json"}));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->cluster, ClusterSource::kFile);
}

TEST(ServeOptionsTest, BadValuesAreRefusedNamingTheFlag) {
  const std::string ttl = "--assume-ttl takes a duration such as 30s (at least 1ms)";
  const std::string resync = "--resync takes a duration such as 5m (at least 1ms)";
  struct Row {
    std::vector<std::string> args;
    std::string error;
  };
  std::vector<Row> rows = {
      // Any other value once meant "off": a typo must not let two replicas bind at once.
      {{"--leader-elect", "yes"}, "--leader-elect takes true or false, got \"yes\""},
      {{"--leader-elect", "1"}, "--leader-elect takes true or false, got \"1\""},
      {{"--leader-elect", "False"}, "--leader-elect takes true or false, got \"False\""},
      {{"--assume-ttl", "0s"}, ttl},
      {{"--assume-ttl", "-1s"}, ttl},
      {{"--assume-ttl", "30"}, ttl},
      {{"--resync", "soon"}, resync},
      {{"--threads", "1"}, "--threads must be 2..4096"},
      {{"--max-connections", "15"}, "--max-connections takes a whole number from 16 to 1000000"},
      {{"--max-body-bytes", "1023"}, "--max-body-bytes must be at least 1024"},
      {{"--request-deadline", "50ms"},
       "--request-deadline takes a duration such as 10s (100ms..5m)"},
      {{"--shutdown-delay", "-1s"}, "--shutdown-delay takes a duration such as 5s (0s..10m)"},
      {{"--keep-alive-timeout", "2h"},
       "--keep-alive-timeout takes a duration such as 120s (1s..1h)"},
      {{"--listen", "nowhere"}, "--listen \"nowhere\" is not HOST:PORT"},
  };
  for (const Row& row : rows) {
    absl::StatusOr<ServeOptions> o = Parse(WithCerts(row.args));
    ASSERT_FALSE(o.ok()) << row.args[0] << " " << row.args[1];
    EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(o.status().message(), row.error);
  }
  absl::StatusOr<ServeOptions> level = Parse(WithCerts({"--log-level", "loud"}));
  EXPECT_FALSE(level.ok());
  absl::StatusOr<ServeOptions> no_key = Parse({"--tls-cert", "tls.crt"});
  EXPECT_EQ(no_key.status().message(), "--tls-key is required with --tls-cert");
}

TEST(ServeOptionsTest, AConfigFileFillsInWhatTheCommandLineLeavesOut) {
  const std::string path = ::testing::TempDir() + "/serve_options_test.yaml";
  std::ofstream(path) << "resync: 2m\nleader-elect: false\nthreads: 16\nlisten: 0.0.0.0:1\n";
  absl::StatusOr<ServeOptions> o =
      Parse(WithCerts({"--config", path, "--listen", "127.0.0.1:7443"}));
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->resync, absl::Minutes(2));
  EXPECT_FALSE(o->leader_elect);
  EXPECT_EQ(o->server.worker_threads, 16);  // a YAML number is the flag's text all the same
  EXPECT_EQ(o->server.listen_port, 7443);   // the command line wins
  std::ofstream(path) << "leader-elect: maybe\n";
  EXPECT_EQ(Parse(WithCerts({"--config", path})).status().message(),
            "--leader-elect takes true or false, got \"maybe\"");
}

}  // namespace
}  // namespace cmd
