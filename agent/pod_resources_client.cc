#include "agent/pod_resources_client.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/podresources.grpc.pb.h"

namespace agent {
namespace {

absl::StatusCode FromGrpc(grpc::StatusCode code) {
  // gRPC's codes are numbered as absl's (both follow google.rpc.Code).
  return static_cast<absl::StatusCode>(static_cast<int>(code));
}

std::vector<topology::ResourceDevices> Devices(
    const google::protobuf::RepeatedPtrField<v1::ContainerDevices>& devices) {
  std::vector<topology::ResourceDevices> out;
  for (const v1::ContainerDevices& d : devices) {
    if (d.device_ids().empty()) continue;
    // Several entries of one resource (one per NUMA node) become one.
    topology::ResourceDevices* into = nullptr;
    for (topology::ResourceDevices& seen : out) {
      if (seen.resource == d.resource_name()) into = &seen;
    }
    if (!into) into = &out.emplace_back(topology::ResourceDevices{d.resource_name(), {}});
    into->ids.insert(into->ids.end(), d.device_ids().begin(), d.device_ids().end());
  }
  return out;
}

}  // namespace

class PodResourcesClient::Connection {
 public:
  explicit Connection(const std::string& socket_path)
      : stub_(v1::PodResourcesLister::NewStub(grpc::CreateChannel(
            absl::StrCat("unix://", socket_path), grpc::InsecureChannelCredentials()))) {}
  // The kubelet's two calls; the deadline is on the context.
  grpc::Status List(grpc::ClientContext* context, const v1::ListPodResourcesRequest& request,
                    v1::ListPodResourcesResponse* response) {
    return stub_->List(context, request, response);
  }
  grpc::Status Allocatable(grpc::ClientContext* context,
                           const v1::AllocatableResourcesRequest& request,
                           v1::AllocatableResourcesResponse* response) {
    return stub_->GetAllocatableResources(context, request, response);
  }

 private:
  std::unique_ptr<v1::PodResourcesLister::Stub> stub_;
};

PodResourcesClient::PodResourcesClient(std::string socket_path)
    : socket_path_(std::move(socket_path)),
      connection_(std::make_unique<Connection>(socket_path_)) {}

PodResourcesClient::~PodResourcesClient() = default;

namespace {

// Runs one unary call with `timeout`; the status names the socket.
template <typename Request, typename Response, typename Call>
absl::Status Invoke(const std::string& socket_path, absl::Duration timeout, Call call,
                    Response& response) {
  struct stat info;
  if (stat(socket_path.c_str(), &info) != 0) {
    return absl::UnavailableError(absl::StrCat("kubelet pod-resources socket ", socket_path,
                                               " does not exist (is its hostPath mounted?)"));
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
  Request request;
  grpc::Status status = call(&context, request, &response);
  if (status.ok()) return absl::OkStatus();
  return absl::Status(
      FromGrpc(status.error_code()),
      absl::StrCat("kubelet pod-resources ", socket_path, ": ", status.error_message()));
}

}  // namespace

absl::StatusOr<std::vector<topology::PodDevices>> PodResourcesClient::List(
    absl::Duration timeout) const {
  v1::ListPodResourcesResponse response;
  absl::Status status = Invoke<v1::ListPodResourcesRequest>(
      socket_path_, timeout,
      [this](grpc::ClientContext* c, const v1::ListPodResourcesRequest& r,
             v1::ListPodResourcesResponse* out) { return connection_->List(c, r, out); },
      response);
  if (!status.ok()) return status;
  std::vector<topology::PodDevices> pods;
  for (const v1::PodResources& pod : response.pod_resources()) {
    topology::PodDevices p{pod.namespace_(), pod.name(), {}};
    for (const v1::ContainerResources& container : pod.containers()) {
      std::vector<topology::ResourceDevices> devices = Devices(container.devices());
      if (!devices.empty()) p.containers.push_back({container.name(), std::move(devices)});
    }
    pods.push_back(std::move(p));
  }
  return pods;
}

absl::StatusOr<std::vector<topology::ResourceDevices>> PodResourcesClient::Allocatable(
    absl::Duration timeout) const {
  v1::AllocatableResourcesResponse response;
  absl::Status status = Invoke<v1::AllocatableResourcesRequest>(
      socket_path_, timeout,
      [this](grpc::ClientContext* c, const v1::AllocatableResourcesRequest& r,
             v1::AllocatableResourcesResponse* out) { return connection_->Allocatable(c, r, out); },
      response);
  if (!status.ok()) return status;
  return Devices(response.devices());
}

}  // namespace agent
