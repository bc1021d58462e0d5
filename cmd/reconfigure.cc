// gpu-tenancy reconfigure: changes one node's MIG geometry through the gate of
// kube/reconfigure_gate.h (cordon, traffic check, drain, apply, wait, validate, smoke,
// uncordon; rollback on failure). This file parses its options, loads the mig-parted config,
// wires Ctrl-C to the gate and prints the report as text or JSON.
#include "cmd/reconfigure.h"

#include <pthread.h>
#include <signal.h>

#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/inputs.h"
#include "common/audit_log.h"
#include "common/config_loader.h"
#include "common/flag_table.h"
#include "common/log.h"
#include "kube/api_client.h"
#include "kube/config.h"
#include "kube/node_ops.h"
#include "kube/reconfigure_gate.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "wire/mig_parted_codec.h"

namespace cmd {
namespace {

const common::FlagTable kReconfigureFlags{
    {"gpu-tenancy reconfigure NODE --to CONFIG\n"
     "                               [--mig-parted-config FILE | --mig-parted-configmap NS/NAME]\n"
     "                               [--kubeconfig FILE [--context NAME]] [--timeout 30m]\n"
     "                               [--settle 2m] [--smoke-image IMAGE [--smoke-namespace NS]]\n"
     "                               [--skip-traffic-check] [--dry-run] [--audit-log FILE|-]\n"
     "                               [--log-level debug|info|warn|error] [-o text|json]"},
    "Changes NODE's nvidia.com/mig.config to CONFIG safely: pre-checks the layout against the\n"
    "node's GPU model, cordons, waits for the GPU pods' owners to be ready elsewhere, drains the\n"
    "GPU pods through the Eviction API, applies CONFIG, waits for mig-manager's\n"
    "nvidia.com/mig.config.state=success, checks the allocatable CONFIG predicts, runs an\n"
    "optional smoke pod and uncordons. A failure after CONFIG is applied rolls back to the\n"
    "previous config.\n"
    "Exit codes: 0 done (or planned), 1 a step failed (the report names it), 2 bad usage or input.",
    {{"to", "CONFIG", "the mig-parted config to apply (a name in the mig-parted config)"},
     {"mig-parted-config", "FILE",
      "the mig-parted config, from a file (may be `gpu-tenancy plan -o yaml`)"},
     {"mig-parted-configmap", "NS/NAME",
      "the mig-parted config, from a ConfigMap\n"
      "(default gpu-operator/default-mig-parted-config)"},
     {"kubeconfig", "FILE", "the API server to use (default: in-cluster service account)"},
     {"context", "NAME", "the kubeconfig context (default: its current-context)"},
     {"timeout", "DURATION", "how long each wait may take (default 30m)"},
     {"settle", "DURATION",
      "how long the allocatable may take to match after success (default 2m)"},
     {"smoke-image", "IMAGE", "run a pod of this image on the new slices before uncordoning"},
     {"smoke-namespace", "NS", "where the smoke pod runs (default \"default\")"},
     {"skip-traffic-check", "", "do not wait for the drained pods' owners to be ready elsewhere"},
     {"dry-run", "", "check and print the steps; change nothing"},
     {"audit-log", "FILE|-",
      "append one JSON line per step and one for the outcome (\"-\": stdout)"},
     {"log-level", "LEVEL", "debug, info, warn or error (default warn)"},
     {"output", "FORMAT", "text or json (default text)", 'o'}}};

void Write(rapidjson::Writer<rapidjson::StringBuffer>& w, absl::string_view key,
           absl::string_view value) {
  w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
  w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

void WriteList(rapidjson::Writer<rapidjson::StringBuffer>& w, absl::string_view key,
               const std::vector<std::string>& items) {
  w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
  w.StartArray();
  for (const std::string& s : items) w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  w.EndArray();
}

std::string ReportJson(const kube::GateReport& r) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  Write(w, "node", r.node);
  Write(w, "from", r.previous_config);
  Write(w, "to", r.target_config);
  w.Key("dryRun");
  w.Bool(r.dry_run);
  w.Key("ok");
  w.Bool(r.ok);
  if (r.failed_step) {
    Write(w, "failedStep", topology::StepName(*r.failed_step));
    Write(w, "error", r.error);
  }
  w.Key("interrupted");
  w.Bool(r.interrupted);
  w.Key("rolledBack");
  w.Bool(r.rolled_back);
  if (r.rolled_back) {
    w.Key("rollbackOk");
    w.Bool(r.rollback_ok);
  }
  w.Key("cordonedBefore");
  w.Bool(r.cordoned_before);
  w.Key("cordoned");
  w.Bool(r.left_cordoned);
  Write(w, "outcome", r.outcome);
  WriteList(w, "geometryBefore", r.geometry_before);
  WriteList(w, "geometryAfter", r.geometry_after);
  if (!r.skipped_entries.empty()) WriteList(w, "skippedEntries", r.skipped_entries);
  w.Key("expectedAllocatable");
  w.StartObject();
  for (const auto& [name, count] : r.expected.allocatable) {
    w.Key(name.data(), static_cast<rapidjson::SizeType>(name.size()));
    w.Int64(count);
  }
  w.EndObject();
  if (r.expected.product) Write(w, "expectedProduct", *r.expected.product);
  WriteList(w, "evictions", r.evictions);
  w.Key("steps");
  w.StartArray();
  for (const kube::StepRecord& s : r.steps) {
    w.StartObject();
    Write(w, "step", topology::StepName(s.step));
    w.Key("ok");
    w.Bool(s.ok);
    w.Key("durationMs");
    w.Int64(absl::ToInt64Milliseconds(s.took));
    Write(w, "message", s.message);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

std::string StepLine(const kube::StepRecord& s) {
  return absl::StrCat(s.ok ? "ok    " : "FAIL  ",
                      absl::StrFormat("%-18s", topology::StepName(s.step)),
                      absl::StrFormat("%8s", kube::ShortDuration(s.took)), "  ", s.message, "\n");
}

void PrintPlan(const kube::GateReport& r) {
  std::cout << "plan for " << r.node << ": " << r.previous_config << " -> " << r.target_config
            << "\n  geometry before:\n";
  for (const std::string& g : r.geometry_before) std::cout << "    " << g << "\n";
  std::cout << "  geometry after:\n";
  for (const std::string& g : r.geometry_after) std::cout << "    " << g << "\n";
  for (const std::string& s : r.skipped_entries) std::cout << "  skipped entry: " << s << "\n";
  std::cout << "  allocatable the node must show afterwards:\n";
  for (const auto& [name, count] : r.expected.allocatable) {
    std::cout << "    " << name << ": " << count << "\n";
  }
  if (r.expected.product)
    std::cout << "    nvidia.com/gpu.product: " << *r.expected.product << "\n";
  std::cout << "  GPU pods to evict: " << (r.evictions.empty() ? "none" : "") << "\n";
  for (const std::string& p : r.evictions) std::cout << "    " << p << "\n";
}

absl::StatusOr<topology::MigPartedFile> LoadConfigs(const ReconfigureOptions& options,
                                                    kube::Api& api) {
  if (!options.mig_parted_file.empty()) {
    const std::string& path = options.mig_parted_file;
    absl::StatusOr<std::string> text = ReadFile(path);
    if (!text.ok()) return text.status();
    absl::StatusOr<topology::MigPartedFile> f = wire::ParseMigPartedConfig(*text);
    if (!f.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--mig-parted-config ", path, ": ", f.status().message()));
    }
    return f;
  }
  const std::string ref = absl::StrCat(options.configmap_namespace, "/", options.configmap_name);
  absl::StatusOr<std::string> cm =
      kube::GetConfigMap(api, options.configmap_namespace, options.configmap_name);
  if (!cm.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--mig-parted-configmap ", ref, ": ", cm.status().message()));
  }
  absl::StatusOr<topology::MigPartedFile> f = wire::ParseMigPartedConfigMap(*cm);
  if (!f.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--mig-parted-configmap ", ref, ": ", f.status().message()));
  }
  return f;
}

}  // namespace

const common::FlagTable& ReconfigureFlags() { return kReconfigureFlags; }

absl::StatusOr<ReconfigureOptions> ParseReconfigureOptions(const ParsedFlags& flags) {
  ReconfigureOptions out;
  ASSIGN_OR_RETURN(out.output,
                   ParseOutputFormat(flags, {OutputFormat::kText, OutputFormat::kJson}));
  if (flags.positional.size() != 1) {
    return absl::InvalidArgumentError(flags.positional.empty() ? "NODE is required"
                                                               : "exactly one NODE, please");
  }
  kube::GateOptions& gate = out.gate;
  gate.node = flags.positional.front();
  ASSIGN_OR_RETURN(gate.target, NonEmptyFlag(flags, "to", "a config name"));
  if (gate.target.empty()) return absl::InvalidArgumentError("--to is required");
  if (flags.Has("mig-parted-config") && flags.Has("mig-parted-configmap")) {
    return absl::InvalidArgumentError(
        "--mig-parted-config and --mig-parted-configmap exclude each other");
  }
  ASSIGN_OR_RETURN(out.mig_parted_file, NonEmptyFlag(flags, "mig-parted-config", "a file"));
  if (flags.Has("mig-parted-configmap")) {
    const std::string ref = flags.Get("mig-parted-configmap");
    std::vector<std::string> parts = absl::StrSplit(ref, '/');
    if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--mig-parted-configmap \"", ref, "\" is not NAMESPACE/NAME"));
    }
    out.configmap_namespace = parts[0];
    out.configmap_name = parts[1];
  }
  ASSIGN_OR_RETURN(out.api_server, ParseKubeOptions(flags));
  gate.dry_run = flags.Has("dry-run");
  gate.skip_traffic_check = flags.Has("skip-traffic-check");
  ASSIGN_OR_RETURN(gate.smoke_image, NonEmptyFlag(flags, "smoke-image", "an image"));
  if (flags.Has("smoke-namespace")) {
    if (gate.smoke_image.empty()) {
      return absl::InvalidArgumentError("--smoke-namespace needs --smoke-image");
    }
    ASSIGN_OR_RETURN(gate.smoke_namespace, NonEmptyFlag(flags, "smoke-namespace", "a namespace"));
  }
  ASSIGN_OR_RETURN(gate.timeout,
                   common::DurationFlag(flags, "timeout", absl::Minutes(30), absl::Milliseconds(1),
                                        absl::Hours(24), "30m"));
  ASSIGN_OR_RETURN(gate.settle,
                   common::DurationFlag(flags, "settle", absl::Minutes(2), absl::Milliseconds(1),
                                        absl::Hours(24), "90s"));
  ASSIGN_OR_RETURN(std::optional<common::LogLevel> level, ParseLogLevelFlag(flags));
  if (level) out.log_level = *level;
  if (flags.Has("audit-log")) {
    ASSIGN_OR_RETURN(out.audit_log, NonEmptyFlag(flags, "audit-log", "a file or \"-\""));
  }
  return out;
}

int RunReconfigure(const std::vector<std::string>& args) {
  ParsedFlags flags;
  if (std::optional<int> exit_code = kReconfigureFlags.ParseOrExit(args, flags)) return *exit_code;
  absl::StatusOr<ReconfigureOptions> parsed = ParseReconfigureOptions(flags);
  if (!parsed.ok()) return kReconfigureFlags.Refuse(parsed.status());
  ReconfigureOptions& command = *parsed;
  kube::GateOptions& options = command.gate;
  common::SetLogLevel(command.log_level);

  std::unique_ptr<common::AuditLog> audit;
  if (!command.audit_log.empty()) {
    absl::StatusOr<std::unique_ptr<common::AuditLog>> opened =
        common::AuditLog::Open(command.audit_log);
    if (!opened.ok()) return Fail(opened.status());
    audit = *std::move(opened);
  }
  absl::StatusOr<kube::ApiConfig> config = ApiConfigOf(command.api_server);
  if (!config.ok()) return Fail(config.status());
  absl::StatusOr<std::unique_ptr<kube::ApiClient>> api = kube::ApiClient::Create(*config);
  if (!api.ok()) return Fail(api.status());
  absl::StatusOr<topology::MigPartedFile> configs = LoadConfigs(command, **api);
  if (!configs.ok()) return Fail(configs.status());
  options.configs = *std::move(configs);
  if (options.configs.Find(options.target) == nullptr) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("--to ", options.target, ": no such config in the mig-parted config (it has ",
                     absl::StrJoin(options.configs.Names(), ", "), ")")));
  }

  kube::ReconfigureGate gate(**api, common::BuiltinCatalog(), kube::Clock::Real());
  gate.SetAuditLog(audit.get());
  const bool text = command.output == OutputFormat::kText;
  gate.OnStep([text](const kube::StepRecord& s) {
    // Text: progress as it happens; JSON keeps stdout for the report and logs steps to stderr.
    (text ? std::cout : std::cerr) << StepLine(s) << std::flush;
  });

  // Ctrl-C and SIGTERM reach only this thread (blocked everywhere else), which tells the gate.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);  // our own wake-up once the gate is done
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::thread signal_thread([&gate, &signals] {
    int received = 0;
    sigwait(&signals, &received);
    if (received != SIGUSR1) gate.Cancel();
  });

  if (text) {
    std::cout << "reconfigure " << options.node << " to " << options.target
              << (options.dry_run ? " (dry run)" : "") << "\n";
  }
  kube::GateReport report = gate.Run(options);
  pthread_kill(signal_thread.native_handle(), SIGUSR1);
  signal_thread.join();

  if (!text) {
    std::cout << ReportJson(report) << "\n";
  } else {
    if (report.dry_run && report.ok) PrintPlan(report);
    if (!report.ok && report.failed_step) {
      std::cout << "failed at " << topology::StepName(*report.failed_step) << ": " << report.error
                << "\n";
    }
    std::cout << report.outcome << "\n";
  }
  return report.ok ? 0 : 1;
}

}  // namespace cmd
