// gpu-tenancy ui: the sharing-mode picker on a local port, no cluster needed. The same pages,
// with the live GPU map, are under `serve`'s operator port at /ui/.
#include "cmd/ui.h"

#include <signal.h>

#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/inputs.h"
#include "common/config_loader.h"
#include "common/flag_table.h"
#include "extender/gpu_map.h"
#include "server/listener.h"
#include "views/audit.h"
#include "views/audit_render.h"
#include "views/ui_json.h"
#include "wire/extender_codec.h"

namespace cmd {
namespace {

const common::FlagTable kUiFlags{
    {"gpu-tenancy ui [--listen HOST:PORT] [--policy FILE]"},
    "Serves the sharing-mode picker at http://HOST:PORT/ui/.",
    {{"listen", "HOST:PORT", "where to serve (default 127.0.0.1:8090; port 0 picks a free one)"},
     {"policy", "FILE", "the policy whose GPU-memory annotation the plans' pod snippets use"}}};

}  // namespace

server::UiHandlers MakeUiHandlers(
    std::shared_ptr<const topology::Policy> policy,
    std::function<std::shared_ptr<const topology::ModelState>()> state, AuditSources audit) {
  server::UiHandlers h;
  h.catalog = [] { return views::CatalogJson(common::BuiltinCatalog()); };
  h.plan = [policy, state](absl::string_view input) -> absl::StatusOr<std::string> {
    std::shared_ptr<const topology::ModelState> current = state ? state() : nullptr;
    const topology::Policy& live = current ? *current->policy : *policy;
    return views::PlanJson(input, common::BuiltinCatalog(), live);
  };
  if (state) {
    h.map = [state] {
      std::shared_ptr<const topology::ModelState> current = state();
      // Before the first sync there is no state to draw: an empty map, not an error.
      return current ? extender::GpuMapJson(*current)
                     : std::string(R"({"nodes":[],"tenants":[],"pools":[]})");
    };
    // The live snapshot keeps no pod security fields and the service reads its webhook
    // configurations only to compare their conditions: those items say so, and that
    // `gpu-tenancy audit` inspects them.
    auto report = [state, audit]() -> std::optional<views::AuditReport> {
      std::shared_ptr<const topology::ModelState> current = state();
      if (!current) return std::nullopt;
      views::AuditInputs in;
      in.state = current.get();
      in.wiring.extenders = audit.extenders;
      in.escape_hatches_unseen =
          "the service's watch keeps no pod security fields (gpu-tenancy audit lists them)";
      in.wiring.webhooks_unseen =
          "the service reads only its own webhook configurations, to compare their conditions";
      if (audit.contract) {
        in.contract = audit.contract();
      } else {
        in.contract_unseen = "no contract guard runs here";
      }
      return views::BuildAuditReport(in);
    };
    h.audit_html = [report] {
      std::optional<views::AuditReport> r = report();
      return r ? views::AuditHtml(*r, /*served=*/true)
               : std::string(
                     "<!DOCTYPE html><title>GPU isolation audit</title><p>The cluster "
                     "has not been listed yet; reload in a moment.</p>");
    };
    h.audit_json = [report] {
      std::optional<views::AuditReport> r = report();
      return r ? views::AuditJson(*r) : std::string(R"({"error":"cache not synced"})");
    };
  }
  return h;
}

const common::FlagTable& UiFlags() { return kUiFlags; }

absl::StatusOr<UiOptions> ParseUiOptions(const ParsedFlags& flags) {
  UiOptions out;
  RETURN_IF_ERROR(CheckNoArguments(flags));
  RETURN_IF_ERROR(SplitHostPort("--listen", flags.Get("listen", "127.0.0.1:8090"), out.listen_host,
                                out.listen_port));
  ASSIGN_OR_RETURN(out.inputs, ParseInputOptions(flags));
  return out;
}

int RunUi(const std::vector<std::string>& args) {
  ParsedFlags flags;
  if (std::optional<int> exit_code = kUiFlags.ParseOrExit(args, flags)) return *exit_code;
  absl::StatusOr<UiOptions> options = ParseUiOptions(flags);
  if (!options.ok()) return kUiFlags.Refuse(options.status());
  const std::string& host = options->listen_host;
  absl::StatusOr<topology::Policy> policy = ReadPolicy(options->inputs);
  if (!policy.ok()) return Fail(policy.status());

  sigset_t signals = BlockShutdownSignals();

  server::OperatorPortOptions at;
  at.host = host;
  at.port = options->listen_port;
  absl::StatusOr<std::unique_ptr<server::Listener>> listener = server::Listener::BindOperatorPort(
      std::move(at), server::UiRoutes(MakeUiHandlers(
                         std::make_shared<const topology::Policy>(*std::move(policy)))));
  if (!listener.ok()) return Fail(listener.status());
  (*listener)->Start();
  const bool v6 = host.find(':') != std::string::npos;
  std::cout << "ui: http://" << (v6 ? absl::StrCat("[", host, "]") : host) << ":"
            << (*listener)->operator_port() << "/ui/" << std::endl;
  int received = 0;
  sigwait(&signals, &received);
  (*listener)->Stop();
  return 0;
}

}  // namespace cmd
