// Test support: the kubelet's PodResources gRPC service (agent/podresources.proto, the real wire
// format) on a unix socket, answering from what the test sets; and two sockets that are not a
// kubelet: one that answers any connection with bytes that are not HTTP/2, one that accepts and
// never says anything.
//
//   auto kubelet = testing_support::FakeKubelet::Start(dir + "/kubelet.sock");
//   (*kubelet)->SetPods({{"team", "train", {{"main", {{"nvidia.com/gpu", {"GPU-a"}}}}}}});
//   agent::PodResourcesClient client((*kubelet)->socket_path());
//
// Thread-safe.
#ifndef GPU_TENANCY_TEST_SUPPORT_FAKE_KUBELET_H_
#define GPU_TENANCY_TEST_SUPPORT_FAKE_KUBELET_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "topology/device_ids.h"

namespace testing_support {

class FakeKubelet {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<FakeKubelet>> Start(
      const std::string& socket_path);
  ~FakeKubelet();  // Stop()

  void SetPods(std::vector<topology::PodDevices> pods);
  void SetAllocatable(std::vector<topology::ResourceDevices> devices);
  // Calls answered so far, of List and of GetAllocatableResources.
  int list_calls() const;
  int allocatable_calls() const;
  void Stop();
  const std::string& socket_path() const { return socket_path_; }

 private:
  class Service;
  FakeKubelet() = default;
  std::string socket_path_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<class GrpcServerHolder> server_;
};

// A unix socket that is not a kubelet. kGarbage writes bytes that are not HTTP/2 to each
// connection and closes it; kSilent accepts and holds connections without a byte.
class NotAKubelet {
 public:
  enum class Behaviour { kGarbage, kSilent };
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<NotAKubelet>> Start(
      const std::string& socket_path, Behaviour behaviour);
  ~NotAKubelet();
  int connections() const { return connections_.load(); }

 private:
  NotAKubelet() = default;
  void Run();
  int listen_fd_ = -1;
  int stop_fd_ = -1;  // eventfd: wakes Run() to end
  Behaviour behaviour_ = Behaviour::kGarbage;
  std::atomic<int> connections_{0};
  std::vector<int> held_;  // kSilent's connections, closed at the end; Run() thread only
  std::thread thread_;
};

}  // namespace testing_support

#endif  // GPU_TENANCY_TEST_SUPPORT_FAKE_KUBELET_H_
