// agent/pod_resources_client: the kubelet's PodResources API read over real gRPC on a unix
// socket. What the kubelet assigned comes back per pod, container and resource in the kubelet's
// order (a MIG instance, whole GPUs, time-slicing replicas); a socket that is absent, answers
// garbage or stays silent is an error naming it, within the call's deadline, never a hang.
#include "agent/pod_resources_client.h"

#include <unistd.h>

#include <chrono>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "test/support/fake_kubelet.h"

namespace agent {
namespace {

using testing_support::FakeKubelet;
using testing_support::NotAKubelet;

// A short path: unix socket paths are limited to 107 bytes, and TempDir may be long.
std::string SocketPath(const std::string& name) {
  return "/tmp/gt-agent-" + std::to_string(getpid()) + "-" + name + ".sock";
}

const std::vector<topology::PodDevices> kPods = {
    {"acme", "llm", {{"server", {{"nvidia.com/mig-3g.40gb", {"MIG-5c1d3a2e-aaaa"}}}}}},
    {"research",
     "train",
     {{"main", {{"nvidia.com/gpu", {"GPU-0f2b", "GPU-9c41"}}}},
      {"sidecar", {{"nvidia.com/gpu.shared", {"GPU-77aa::3"}}}}}},
    {"web", "frontend", {}},  // no devices: listed, with no containers
};

TEST(PodResourcesClientTest, ListsWhatTheKubeletAssigned) {
  absl::StatusOr<std::unique_ptr<FakeKubelet>> kubelet = FakeKubelet::Start(SocketPath("list"));
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  (*kubelet)->SetPods(kPods);
  PodResourcesClient client((*kubelet)->socket_path());
  absl::StatusOr<std::vector<topology::PodDevices>> pods = client.List(absl::Seconds(5));
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_EQ(*pods, kPods);
  EXPECT_EQ((*kubelet)->list_calls(), 1);
  // The kubelet changes its mind; the same client sees it on the next call.
  (*kubelet)->SetPods({kPods[0]});
  pods = client.List(absl::Seconds(5));
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_EQ(*pods, std::vector<topology::PodDevices>{kPods[0]});
}

TEST(PodResourcesClientTest, AllocatableDevicesComeBackPerResource) {
  absl::StatusOr<std::unique_ptr<FakeKubelet>> kubelet = FakeKubelet::Start(SocketPath("alloc"));
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  std::vector<topology::ResourceDevices> devices = {
      {"nvidia.com/gpu.shared", {"GPU-77aa::0", "GPU-77aa::1", "GPU-88bb::0", "GPU-88bb::1"}},
      {"nvidia.com/mig-1g.10gb", {"MIG-GPU-0f2b/7/0", "MIG-GPU-0f2b/8/0"}},
  };
  (*kubelet)->SetAllocatable(devices);
  PodResourcesClient client((*kubelet)->socket_path());
  absl::StatusOr<std::vector<topology::ResourceDevices>> got = client.Allocatable(absl::Seconds(5));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, devices);
  EXPECT_EQ((*kubelet)->allocatable_calls(), 1);
}

TEST(PodResourcesClientTest, AnAbsentSocketIsUnavailableNamingIt) {
  const std::string path = SocketPath("absent");
  unlink(path.c_str());
  PodResourcesClient client(path);
  absl::StatusOr<std::vector<topology::PodDevices>> pods = client.List(absl::Seconds(2));
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(pods.status().message(), path)) << pods.status();
  EXPECT_TRUE(absl::StrContains(pods.status().message(), "does not exist")) << pods.status();
}

// Both within the caller's deadline (a liveness bound, not a speed claim).
TEST(PodResourcesClientTest, ASocketThatIsNotAKubeletIsAnErrorNotAHang) {
  for (auto [name, behaviour, code] :
       {std::tuple{"garbage", NotAKubelet::Behaviour::kGarbage, absl::StatusCode::kUnavailable},
        std::tuple{"silent", NotAKubelet::Behaviour::kSilent,
                   absl::StatusCode::kDeadlineExceeded}}) {
    SCOPED_TRACE(name);
    absl::StatusOr<std::unique_ptr<NotAKubelet>> other =
        NotAKubelet::Start(SocketPath(name), behaviour);
    ASSERT_TRUE(other.ok()) << other.status();
    PodResourcesClient client(SocketPath(name));
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<topology::PodDevices>> pods = client.List(absl::Seconds(1));
    auto took = std::chrono::steady_clock::now() - start;
    ASSERT_FALSE(pods.ok());
    EXPECT_EQ(pods.status().code(), code) << pods.status();
    EXPECT_TRUE(absl::StrContains(pods.status().message(), SocketPath(name))) << pods.status();
    EXPECT_LT(took, std::chrono::seconds(3)) << pods.status();
    EXPECT_GE((*other)->connections(), 1);
  }
}

}  // namespace
}  // namespace agent
