// Test support: a simulated NVIDIA mig-manager (and the device plugin behind it) for one Node of
// the kube-apiserver emulation, for scenario tests of `gpu-tenancy reconfigure`. Like the real
// one it reacts to a change of the node's nvidia.com/mig.config label: it sets
// nvidia.com/mig.config.state=pending and every nvidia.com/gpu.deploy.* label that is not
// "false" to paused-for-mig-change, works for `delay`, then finishes as the scenario says for
// that config: success (the allocatable and labels the device plugin and GFD would publish,
// which a scenario may get wrong on purpose), failed (state failed, allocatable untouched) or
// never (stays pending). The deploy labels are restored either way except for never.
// It reads the node in-process (no HTTP) every few milliseconds; writes go through the store,
// so clients see them as watch events.
//
// It can also play the kubelet for smoke pods: pods bound to the node with the label
// app.kubernetes.io/name=gpu-tenancy-smoke get status.phase `smoke_phase`.
#ifndef GPU_TENANCY_TEST_SUPPORT_MIG_MANAGER_SIM_H_
#define GPU_TENANCY_TEST_SUPPORT_MIG_MANAGER_SIM_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "test/support/fake_apiserver.h"

namespace testing_support {

struct MigManagerOutcome {
  enum class Kind { kSuccess, kFailed, kNever };
  Kind kind = Kind::kSuccess;
  // kSuccess: the node's nvidia.com/gpu and nvidia.com/mig-* allocatable (and capacity)
  // afterwards; every other such resource is removed.
  std::map<std::string, int64_t> allocatable;
  std::map<std::string, std::string> labels;  // kSuccess: labels GFD sets (gpu.product, ...)
};

class MigManagerSim {
 public:
  MigManagerSim(FakeApiServer& api, std::string node, std::chrono::milliseconds delay);
  ~MigManagerSim();  // stops the thread
  MigManagerSim(const MigManagerSim&) = delete;
  MigManagerSim& operator=(const MigManagerSim&) = delete;

  // What applying `config` ends in. A config without an outcome ends in kFailed, as mig-manager
  // fails on a name its ConfigMap does not have.
  void SetOutcome(const std::string& config, MigManagerOutcome outcome);
  // Smoke pods on the node get this phase ("" leaves them alone, the default).
  void SetSmokePhase(const std::string& phase);

  int changes_seen() const { return changes_.load(); }  // reconfigurations started

 private:
  void Run();
  void Reconfigure(const std::string& config);
  void PlayKubelet();

  FakeApiServer& api_;
  const std::string node_;
  const std::chrono::milliseconds delay_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::map<std::string, MigManagerOutcome> outcomes_;
  std::string smoke_phase_;
  std::set<std::string> paused_;  // deploy labels this simulation paused (its thread only)
  std::atomic<int> changes_{0};
  std::thread thread_;
};

}  // namespace testing_support

#endif  // GPU_TENANCY_TEST_SUPPORT_MIG_MANAGER_SIM_H_
