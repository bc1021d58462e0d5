// `gpu-tenancy serve` through the real binary: its flags and --config file. A bad listen address,
// an unknown flag, a bad config file or a missing certificate ends the process before it
// serves, with exit code 2 and an error naming what was wrong; a config file fills in what the
// command line leaves out, and the command line wins over it.
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/support/serve_process.h"
#include "test/support/shell.h"

namespace {

using testing_support::CommandResult;
using testing_support::ServeProcess;
using testing_support::ShellQuote;
using testing_support::TempDir;

// Runs `serve` with `args`; a process that does start is killed after 20 s (and fails the row).
CommandResult RunServe(const std::vector<std::string>& args) {
  std::string command = absl::StrCat("timeout 20 ", ShellQuote(GT_BINARY), " serve");
  for (const std::string& a : args) absl::StrAppend(&command, " ", ShellQuote(a));
  return testing_support::RunShell(absl::StrCat(command, " </dev/null"));
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

struct RefusalRow {
  std::string name;
  std::vector<std::string> args;
  std::string error;  // the first line of stderr after "error: "
  bool usage = true;  // followed by the usage text
  bool whole = true;  // `error` is the whole line, not only its start
};

void ExpectRefused(const RefusalRow& row) {
  SCOPED_TRACE(row.name);
  CommandResult r = RunServe(row.args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_FALSE(absl::StrContains(r.out, "ready ")) << r.out;
  std::string first_line = r.err.substr(0, r.err.find('\n'));
  if (row.whole) {
    EXPECT_EQ(first_line, "error: " + row.error) << r.err;
  } else {
    EXPECT_TRUE(absl::StartsWith(first_line, "error: " + row.error)) << r.err;
  }
  EXPECT_EQ(absl::StrContains(r.err, "usage: gpu-tenancy serve"), row.usage) << r.err;
}

// Every row binds loopback port 0 for whatever it does not test, so a row that wrongly starts
// a server takes no fixed port.
const std::vector<std::string> kLoopback = {"--listen", "127.0.0.1:0", "--metrics-listen",
                                            "127.0.0.1:0"};

std::vector<std::string> Demo(std::vector<std::string> args) {
  args.insert(args.begin(), "--demo");
  return args;
}

// The demo's first screen: the headline denial as kubectl would print it, the pages' address,
// and no warning when the descriptor limit only takes the reserve from the default maximum.
TEST(ServeTest, TheDemosFirstScreenShowsADenialAndThePages) {
  auto run = [](int nofile) {
    return testing_support::RunShell(
        absl::StrCat("ulimit -n ", nofile, " && timeout 3 ", ShellQuote(GT_BINARY),
                     " serve --demo --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 </dev/null"));
  };
  CommandResult r = run(20000);
  EXPECT_TRUE(absl::StrContains(
      r.out,
      "kubectl would print:\n\n  Error from server (Forbidden): error when creating "
      "\"cheap-inference.yaml\": admission webhook \"validate.gpu-tenancy.io\" denied the "
      "request: [tier-shared] container \"server\" requests nvidia.com/gpu.shared, but tenant "
      "\"acme\" (tier untrusted) may use only exclusive, mig"))
      << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "\nPages: http://localhost:")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "/admission.json https://localhost:")) << r.out;
  EXPECT_FALSE(absl::StrContains(r.err, "level=warn")) << r.err;
  // A limit well below the maximum is worth a warning.
  CommandResult low = run(4096);
  EXPECT_TRUE(absl::StrContains(low.err, "max connections lowered to fit the descriptor limit"))
      << low.err;
}

TEST(ServeTest, BadListenAddressesAreRefused) {
  std::vector<RefusalRow> rows = {
      {"no port", Demo({"--listen", "localhost", "--metrics-listen", "127.0.0.1:0"}),
       "--listen \"localhost\" is not HOST:PORT"},
      {"empty port", Demo({"--listen", "127.0.0.1:", "--metrics-listen", "127.0.0.1:0"}),
       "--listen \"127.0.0.1:\" has no valid port"},
      {"port over 65535", Demo({"--listen", "127.0.0.1:65536", "--metrics-listen", "127.0.0.1:0"}),
       "--listen \"127.0.0.1:65536\" has no valid port"},
      {"negative port", Demo({"--listen", "127.0.0.1:-1", "--metrics-listen", "127.0.0.1:0"}),
       "--listen \"127.0.0.1:-1\" has no valid port"},
      {"a service name", Demo({"--listen", "127.0.0.1:https", "--metrics-listen", "127.0.0.1:0"}),
       "--listen \"127.0.0.1:https\" has no valid port"},
      {"bracketed IPv6 without a port",
       Demo({"--listen", "[::1]", "--metrics-listen", "127.0.0.1:0"}),
       "--listen \"[::1]\" has no valid port"},
      {"metrics without a port", Demo({"--listen", "127.0.0.1:0", "--metrics-listen", "metrics"}),
       "--metrics-listen \"metrics\" is not HOST:PORT"},
      {"metrics port over 65535",
       Demo({"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:99999"}),
       "--metrics-listen \"127.0.0.1:99999\" has no valid port"},
      {"a signed port", Demo({"--listen", "127.0.0.1:+5", "--metrics-listen", "127.0.0.1:0"}),
       "--listen \"127.0.0.1:+5\" has no valid port"},
      {"a port with spaces", Demo({"--listen", "127.0.0.1: 5", "--metrics-listen", "127.0.0.1:0"}),
       "--listen \"127.0.0.1: 5\" has no valid port"},
  };
  for (const RefusalRow& row : rows) ExpectRefused(row);
}

TEST(ServeTest, UnknownAndMalformedFlagsAreRefused) {
  std::vector<RefusalRow> rows = {
      {"unknown flag", Demo({"--listn", "127.0.0.1:0"}), "unknown flag --listn"},
      {"another subcommand's flag", Demo({"--pod", "acme/x"}), "unknown flag --pod"},
      {"a value flag without its value", Demo({"--listen"}), "--listen needs a value"},
      {"a switch with a value", {"--bench-routes=yes", "--demo"}, "--bench-routes takes no value"},
      {"leader election neither on nor off", Demo({"--leader-elect", "yes"}),
       "--leader-elect takes true or false, got \"yes\""},
  };
  for (const RefusalRow& row : rows) ExpectRefused(row);
}

// Values that used to be ignored or misread: each is now refused, naming its flag.
TEST(ServeTest, FlagsThatWouldBeIgnoredAreRefused) {
  auto demo = [](std::vector<std::string> args) {
    args = Demo(args);
    args.insert(args.end(), kLoopback.begin(), kLoopback.end());
    return args;
  };
  std::vector<RefusalRow> rows = {
      {"a live cluster and the demo", demo({"--kubeconfig", "/nonexistent/kubeconfig"}),
       "--kubeconfig and --demo exclude each other (a live cluster or a fixed one)"},
      {"a context without a kubeconfig",
       {"--context", "prod", "--tls-cert", "c", "--tls-key", "k"},
       "--context needs --kubeconfig (the in-cluster service account has no contexts)"},
      {"an unknown log level", demo({"--log-level", "loud"}),
       "--log-level takes debug, info, warn or error, not \"loud\""},
      {"an empty policy file name", demo({"--policy", ""}), "--policy takes a file, not \"\""},
      {"a stray argument", demo({"cluster.json"}), "unexpected argument \"cluster.json\""},
  };
  for (const RefusalRow& row : rows) ExpectRefused(row);
}

TEST(ServeTest, ABadConfigFileIsRefusedNamingIt) {
  TempDir dir;
  auto config = [&](const std::string& name, const std::string& text) {
    Write(dir.File(name), text);
    return dir.File(name);
  };
  std::string missing = dir.File("missing.yaml");
  std::string list = config("list.yaml", "- listen\n");
  std::string unknown = config("unknown.yaml", "listn: 127.0.0.1:0\n");
  std::string nested = config("nested.yaml", "config: other.yaml\n");
  std::string broken = config("broken.yaml", "listen: [\n");
  std::string empty = config("empty.yaml", "");
  std::vector<RefusalRow> rows = {
      {"missing", Demo({"--config", missing}), "cannot read " + missing},
      {"a directory", Demo({"--config", dir.path()}),
       "cannot read " + dir.path() + ": is a directory"},
      {"not a mapping", Demo({"--config", list}), list + ": expected a mapping"},
      {"an unknown key", Demo({"--config", unknown}), unknown + ": unknown key \"listn\""},
      {"a config naming a config", Demo({"--config", nested}), nested + ": unknown key \"config\""},
      {"invalid YAML", Demo({"--config", broken}), broken + ": invalid YAML at line 2", true,
       false},
      {"empty", Demo({"--config", empty}), empty + ": expected one YAML document, found 0"},
  };
  for (const RefusalRow& row : rows) ExpectRefused(row);
}

TEST(ServeTest, ConfigValuesAreCheckedLikeFlags) {
  TempDir dir;
  Write(dir.File("listen.yaml"), "listen: nowhere\n");
  Write(dir.File("limits.yaml"), "threads: 1\nshutdown-delay: 11m\n");
  ExpectRefused({"a bad listen address", Demo({"--config", dir.File("listen.yaml")}),
                 "--listen \"nowhere\" is not HOST:PORT"});
  // A number in YAML is the flag's text all the same, and it is range-checked.
  std::vector<std::string> args = Demo({"--config", dir.File("limits.yaml")});
  args.insert(args.end(), kLoopback.begin(), kLoopback.end());
  ExpectRefused({"too few threads", args, "--threads must be 2..4096"});
  // --threads on the command line wins over the file's; the file's next value is still read.
  args.insert(args.end(), {"--threads", "4"});
  ExpectRefused({"the flag wins", args, "--shutdown-delay takes a duration such as 5s (0s..10m)"});
}

TEST(ServeTest, AKeepAliveTimeoutOutsideItsRangeIsRefused) {
  const std::string error = "--keep-alive-timeout takes a duration such as 120s (1s..1h)";
  for (const char* value : {"soon", "120", "500ms", "2h", "-5s"}) {
    std::vector<std::string> args = Demo({"--keep-alive-timeout", value});
    args.insert(args.end(), kLoopback.begin(), kLoopback.end());
    ExpectRefused({value, args, error});
  }
}

TEST(ServeTest, MissingOrUnreadableCertificatesAreRefusedNamingTheFile) {
  TempDir dir;
  ASSERT_TRUE(testing_support::MakeTestCerts(dir.path()).ok());
  std::string cert = dir.File("tls.crt"), key = dir.File("tls.key");
  std::string not_pem = dir.File("not.pem");
  Write(not_pem, "not a certificate\n");
  auto with = [&](std::vector<std::string> args) {
    args = Demo(args);
    args.insert(args.end(), kLoopback.begin(), kLoopback.end());
    return args;
  };
  std::vector<RefusalRow> rows = {
      {"no certificate file", with({"--tls-cert", dir.File("nope.crt"), "--tls-key", key}),
       "cannot read certificate " + dir.File("nope.crt"), false},
      {"no key file", with({"--tls-cert", cert, "--tls-key", dir.File("nope.key")}),
       "cannot read private key " + dir.File("nope.key"), false},
      {"a certificate that is not PEM", with({"--tls-cert", not_pem, "--tls-key", key}),
       not_pem + ": no PEM certificate", false},
      {"a certificate without its key",
       {"--tls-cert", cert, "--policy", dir.File("policy.yaml")},
       "--tls-key is required with --tls-cert"},
      {"a key without its certificate",
       {"--tls-key", key, "--policy", dir.File("policy.yaml")},
       "--tls-cert is required with --tls-key"},
      {"demo with a certificate but no key", Demo({"--tls-cert", cert}),
       "--tls-key is required with --tls-cert"},
      {"neither, without --demo",
       {"--policy", dir.File("policy.yaml")},
       "--tls-cert and --tls-key are required (or use --demo)"},
  };
  for (const RefusalRow& row : rows) ExpectRefused(row);
  // A client CA that cannot be read: the log line names the file.
  CommandResult r = RunServe(
      with({"--tls-cert", cert, "--tls-key", key, "--client-ca", dir.File("nope-ca.crt")}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "cannot load client CA")) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, dir.File("nope-ca.crt"))) << r.err;
}

// The file fills in what the command line leaves out: its body limit is the one enforced, and
// its listen addresses lose to the ones ServeProcess passes.
TEST(ServeTest, AConfigFileIsMergedUnderTheFlags) {
  TempDir dir;
  Write(dir.File("serve.yaml"), "listen: nowhere\nmetrics-listen: nowhere\nmax-body-bytes: 2048\n");
  absl::StatusOr<std::unique_ptr<ServeProcess>> from_file =
      ServeProcess::Start({"--demo", "--config", dir.File("serve.yaml")});
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  std::string body = absl::StrCat("{}", std::string(3000, ' '));
  ServeProcess::Response r = (*from_file)->Post("/extender/filter", body);
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_TRUE(absl::StrContains(r.body, "over 2048 bytes")) << r.body;
  from_file->reset();

  absl::StatusOr<std::unique_ptr<ServeProcess>> from_flag = ServeProcess::Start(
      {"--demo", "--config", dir.File("serve.yaml"), "--max-body-bytes", "8192"});
  ASSERT_TRUE(from_flag.ok()) << from_flag.status();
  r = (*from_flag)->Post("/extender/filter", body);
  EXPECT_NE(r.status, 413) << r.body;
  EXPECT_NE(r.status, 0);
}

}  // namespace
