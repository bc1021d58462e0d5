#include "cmd/webhook_guard.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/prometheus_text.h"
#include "common/thread_name.h"
#include "webhook/match_conditions.h"
#include "webhook/match_conditions_check.h"

namespace cmd {
namespace {

constexpr char kRegenerate[] =
    "gpu-tenancy webhook-config --policy POLICY_FILE | kubectl apply -f -";

struct Target {
  const char* label;         // the gauge's webhook label
  const char* webhook_name;  // webhooks[].name
  webhook::ReviewKind kind;
  const char* resource;  // under /apis/admissionregistration.k8s.io/v1/
};

constexpr Target kTargets[2] = {
    {"validate", webhook::kValidateWebhookName, webhook::ReviewKind::kValidate,
     "validatingwebhookconfigurations"},
    {"mutate", webhook::kMutateWebhookName, webhook::ReviewKind::kMutate,
     "mutatingwebhookconfigurations"},
};

}  // namespace

WebhookGuard::WebhookGuard(kube::Api& api, WebhookGuardOptions options)
    : api_(api), options_(std::move(options)) {}

WebhookGuard::~WebhookGuard() { Stop(); }

void WebhookGuard::Start(std::shared_ptr<const topology::Policy> policy) {
  {
    common::MutexLock lock(&mu_);
    policy_ = std::move(policy);
    recheck_ = true;
  }
  thread_ = std::thread([this] {
    common::NameThisThread("webhook-guard");
    Run();
  });
}

void WebhookGuard::Recheck(std::shared_ptr<const topology::Policy> policy) {
  {
    common::MutexLock lock(&mu_);
    policy_ = std::move(policy);
    recheck_ = true;
  }
  wake_.NotifyAll();
}

void WebhookGuard::Stop() {
  {
    common::MutexLock lock(&mu_);
    stop_ = true;
  }
  wake_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void WebhookGuard::Run() {
  while (true) {
    std::shared_ptr<const topology::Policy> policy;
    {
      common::MutexLock lock(&mu_);
      // Waits out the period, unless a recheck or Stop() comes first.
      const auto until = std::chrono::steady_clock::now() + options_.period;
      while (!stop_ && !recheck_) {
        const auto left =
            std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
        if (left <= std::chrono::milliseconds::zero()) break;
        wake_.WaitFor(&mu_, left);
      }
      if (stop_) return;
      recheck_ = false;
      policy = policy_;
    }
    if (policy) CheckAll(*policy);  // no lock across API calls
  }
}

void WebhookGuard::CheckAll(const topology::Policy& policy) {
  for (size_t i = 0; i < 2; ++i) {
    const Target& t = kTargets[i];
    const std::string& config = t.kind == webhook::ReviewKind::kValidate
                                    ? options_.validating_config
                                    : options_.mutating_config;
    const std::string path =
        absl::StrCat("/apis/admissionregistration.k8s.io/v1/", t.resource, "/", config);
    absl::StatusOr<kube::ApiResponse> r = api_.Get(path);
    if (!r.ok() || (r->status != 200 && r->status != 404)) {
      // Unreadable (no RBAC, API server down): unknown, not stale.
      current_[i].store(-1);
      common::Log(
          common::LogLevel::kWarn, "cannot read the webhook configuration",
          {{"webhook", t.webhook_name},
           {"path", path},
           {"error", r.ok() ? kube::DescribeError(*r) : std::string(r.status().message())}});
      continue;
    }
    webhook::ConditionsCheck check;
    if (r->status == 404) {
      check.problem = absl::StrCat("the configuration ", config, " does not exist");
    } else {
      absl::StatusOr<std::vector<webhook::MatchCondition>> served =
          webhook::ServedMatchConditions(r->body, t.webhook_name);
      if (served.ok()) {
        check = webhook::CheckMatchConditions(*served,
                                              {webhook::WebhookMatchCondition(policy, t.kind)});
      } else {
        check.problem = std::string(served.status().message());
      }
    }
    current_[i].store(check.current ? 1 : 0);
    if (!check.current) {
      common::Log(common::LogLevel::kError,
                  "webhook matchConditions do not match the policy; requests the rules act on "
                  "may skip the webhook",
                  {{"webhook", t.webhook_name},
                   {"configuration", absl::StrCat(t.resource, "/", config)},
                   {"problem", check.problem},
                   {"regenerate", kRegenerate}});
    }
  }
}

void WebhookGuard::Collect(common::MetricsText& out) const {
  out.Family("gpu_tenancy_webhook_conditions_current", common::MetricsText::kGauge,
             "1 when the webhook's served matchConditions are the ones the running policy makes, "
             "0 when stale or missing.");
  for (size_t i = 0; i < 2; ++i) {
    const int v = current_[i].load();
    if (v < 0) continue;
    out.Sample("gpu_tenancy_webhook_conditions_current", {{"webhook", kTargets[i].label}}, v);
  }
}

}  // namespace cmd
