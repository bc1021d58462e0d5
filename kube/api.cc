#include "kube/api.h"

#include "absl/strings/str_cat.h"
#include "common/json.h"

namespace kube {

Api::Stream::Stream() = default;
Api::Stream::~Stream() = default;

void Api::Stream::Cancel() {
  common::MutexLock lock(&mu_);
  cancelled_.store(true);
  if (active_) active_->Stop();
}

void Api::Stream::Interrupt() {
  common::MutexLock lock(&mu_);
  if (active_) {
    interrupted_.store(true);
    active_->Stop();
  } else {
    interrupt_pending_ = true;
  }
}

absl::Status Api::Stream::Begin(
    absl::FunctionRef<Connection*(std::unique_ptr<Connection>& kept)> connect) {
  common::MutexLock lock(&mu_);
  if (cancelled()) return absl::CancelledError("watch cancelled");
  if (interrupt_pending_) {
    interrupt_pending_ = false;
    return absl::AbortedError("watch interrupted");
  }
  active_ = connect(kept_);
  interrupted_.store(false);
  return absl::OkStatus();
}

void Api::Stream::End() {
  common::MutexLock lock(&mu_);
  active_ = nullptr;
}

std::string DescribeError(const ApiResponse& response) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(response.body);
  if (doc.ok()) {
    absl::string_view message = common::StringOr(*doc, "message");
    if (!message.empty()) return absl::StrCat("HTTP ", response.status, ": ", message);
  }
  return absl::StrCat("HTTP ", response.status, ": ", response.body.substr(0, 200));
}

}  // namespace kube
