#include "kube/cluster_state.h"

#include "common/log.h"

namespace kube {

void ClusterState::ReplaceAll(topology::ClusterData data) {
  std::lock_guard<std::mutex> lock(write_mu_);
  data_ = std::move(data);
  have_data_ = true;
  PublishLocked();
}

void ClusterState::SetPolicy(std::shared_ptr<const topology::Policy> policy) {
  std::lock_guard<std::mutex> lock(write_mu_);
  policy_ = std::move(policy);
  PublishLocked();
}

std::shared_ptr<const topology::Policy> ClusterState::policy() const {
  std::lock_guard<std::mutex> lock(write_mu_);
  return policy_;
}

void ClusterState::PublishLocked() {
  if (!have_data_ || !policy_) return;
  std::vector<std::string> skipped;
  auto state = std::make_shared<topology::ModelState>();
  state->policy = policy_;
  state->catalog = &catalog_;
  state->snapshot = std::make_shared<const topology::ClusterSnapshot>(
      topology::BuildSnapshot(data_, catalog_, *policy_, &skipped));
  for (const std::string& why : skipped) {
    common::Log(common::LogLevel::kWarn, "pod ignored in accounting", {{"reason", why}});
  }
  current_.store(std::move(state));
}

}  // namespace kube
