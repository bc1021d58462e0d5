#include "cmd/options.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace cmd {

absl::string_view OutputFormatName(OutputFormat format) {
  switch (format) {
    case OutputFormat::kText:
      return "text";
    case OutputFormat::kYaml:
      return "yaml";
    case OutputFormat::kJson:
      return "json";
    case OutputFormat::kHtml:
      return "html";
    case OutputFormat::kMarkdown:
      return "markdown";
  }
  return "text";
}

absl::StatusOr<std::string> NonEmptyFlag(const ParsedFlags& flags, const std::string& flag,
                                         absl::string_view what) {
  if (!flags.Has(flag)) return std::string();
  std::string value = flags.Get(flag);
  if (value.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, " takes ", what, ", not \"\""));
  }
  return value;
}

absl::StatusOr<InputOptions> ParseInputOptions(const ParsedFlags& flags) {
  InputOptions out;
  ASSIGN_OR_RETURN(out.policy_file, NonEmptyFlag(flags, "policy", "a file"));
  ASSIGN_OR_RETURN(out.cluster_file, NonEmptyFlag(flags, "cluster-file", "a file"));
  out.demo = flags.Has("demo");
  return out;
}

absl::StatusOr<KubeOptions> ParseKubeOptions(const ParsedFlags& flags) {
  KubeOptions out;
  ASSIGN_OR_RETURN(out.kubeconfig, NonEmptyFlag(flags, "kubeconfig", "a file"));
  ASSIGN_OR_RETURN(out.context, NonEmptyFlag(flags, "context", "a context name"));
  if (!out.context.empty() && out.kubeconfig.empty()) {
    return absl::InvalidArgumentError(
        "--context needs --kubeconfig (the in-cluster service account has no contexts)");
  }
  return out;
}

absl::Status CheckOneClusterSource(const ParsedFlags& flags) {
  for (const char* live : {"kubeconfig", "context"}) {
    if (!flags.Has(live)) continue;
    for (const char* fixed : {"cluster-file", "demo"}) {
      if (flags.Has(fixed)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--", live, " and --", fixed, " exclude each other (a live cluster or a fixed one)"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<AuditSourceFiles> ParseAuditSourceFiles(const ParsedFlags& flags) {
  AuditSourceFiles out;
  ASSIGN_OR_RETURN(out.mig_parted_config, NonEmptyFlag(flags, "mig-parted-config", "a file"));
  ASSIGN_OR_RETURN(out.scheduler_config, NonEmptyFlag(flags, "scheduler-config", "a file"));
  return out;
}

absl::StatusOr<OutputFormat> ParseOutputFormat(const ParsedFlags& flags,
                                               const std::vector<OutputFormat>& allowed) {
  if (!flags.Has("output")) return OutputFormat::kText;
  const std::string given = flags.Get("output");
  for (OutputFormat format : allowed) {
    if (OutputFormatName(format) == given) return format;
  }
  std::string names;
  for (size_t i = 0; i < allowed.size(); ++i) {
    if (i > 0) names += i + 1 == allowed.size() ? " or " : ", ";
    absl::StrAppend(&names, OutputFormatName(allowed[i]));
  }
  return absl::InvalidArgumentError(absl::StrCat("-o must be ", names, ", not \"", given, "\""));
}

absl::StatusOr<std::optional<common::LogLevel>> ParseLogLevelFlag(const ParsedFlags& flags) {
  if (!flags.Has("log-level")) return std::nullopt;
  const std::string given = flags.Get("log-level");
  absl::StatusOr<common::LogLevel> level = common::ParseLogLevel(given);
  if (!level.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-level takes debug, info, warn or error, not \"", given, "\""));
  }
  return *level;
}

absl::Status CheckNoArguments(const ParsedFlags& flags) {
  if (flags.positional.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("unexpected argument \"", flags.positional.front(), "\""));
}

}  // namespace cmd
