#include "test/support/fake_kubelet.h"

#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "agent/podresources.grpc.pb.h"
#include "common/mutex.h"

namespace testing_support {

class GrpcServerHolder {
 public:
  std::unique_ptr<grpc::Server> server;
};

namespace {

void FillDevices(const std::vector<topology::ResourceDevices>& from,
                 google::protobuf::RepeatedPtrField<v1::ContainerDevices>* to) {
  for (const topology::ResourceDevices& r : from) {
    v1::ContainerDevices* d = to->Add();
    d->set_resource_name(r.resource);
    for (const std::string& id : r.ids) d->add_device_ids(id);
    d->mutable_topology()->add_nodes()->set_id(0);
  }
}

}  // namespace

class FakeKubelet::Service final : public v1::PodResourcesLister::Service {
 public:
  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* response) override {
    common::MutexLock lock(&mu_);
    ++list_calls_;
    for (const topology::PodDevices& pod : pods_) {
      v1::PodResources* p = response->add_pod_resources();
      p->set_namespace_(pod.namespace_name);
      p->set_name(pod.name);
      for (const topology::ContainerDevices& c : pod.containers) {
        v1::ContainerResources* container = p->add_containers();
        container->set_name(c.container);
        FillDevices(c.resources, container->mutable_devices());
      }
    }
    return grpc::Status::OK;
  }
  grpc::Status GetAllocatableResources(grpc::ServerContext*, const v1::AllocatableResourcesRequest*,
                                       v1::AllocatableResourcesResponse* response) override {
    common::MutexLock lock(&mu_);
    ++allocatable_calls_;
    FillDevices(allocatable_, response->mutable_devices());
    return grpc::Status::OK;
  }

  mutable common::Mutex mu_;
  std::vector<topology::PodDevices> pods_ ABSL_GUARDED_BY(mu_);
  std::vector<topology::ResourceDevices> allocatable_ ABSL_GUARDED_BY(mu_);
  int list_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int allocatable_calls_ ABSL_GUARDED_BY(mu_) = 0;
};

absl::StatusOr<std::unique_ptr<FakeKubelet>> FakeKubelet::Start(const std::string& socket_path) {
  std::unique_ptr<FakeKubelet> k(new FakeKubelet());
  k->socket_path_ = socket_path;
  k->service_ = std::make_unique<Service>();
  k->server_ = std::make_unique<GrpcServerHolder>();
  unlink(socket_path.c_str());
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("unix:", socket_path), grpc::InsecureServerCredentials());
  builder.RegisterService(k->service_.get());
  k->server_->server = builder.BuildAndStart();
  if (!k->server_->server) {
    return absl::UnavailableError(absl::StrCat("cannot serve PodResources on ", socket_path));
  }
  return k;
}

FakeKubelet::~FakeKubelet() { Stop(); }

void FakeKubelet::Stop() {
  if (server_ && server_->server) {
    server_->server->Shutdown(std::chrono::system_clock::now());
    server_->server->Wait();
    server_->server.reset();
    unlink(socket_path_.c_str());
  }
}

void FakeKubelet::SetPods(std::vector<topology::PodDevices> pods) {
  common::MutexLock lock(&service_->mu_);
  service_->pods_ = std::move(pods);
}

void FakeKubelet::SetAllocatable(std::vector<topology::ResourceDevices> devices) {
  common::MutexLock lock(&service_->mu_);
  service_->allocatable_ = std::move(devices);
}

int FakeKubelet::list_calls() const {
  common::MutexLock lock(&service_->mu_);
  return service_->list_calls_;
}

int FakeKubelet::allocatable_calls() const {
  common::MutexLock lock(&service_->mu_);
  return service_->allocatable_calls_;
}

absl::StatusOr<std::unique_ptr<NotAKubelet>> NotAKubelet::Start(const std::string& socket_path,
                                                                Behaviour behaviour) {
  std::unique_ptr<NotAKubelet> n(new NotAKubelet());
  n->behaviour_ = behaviour;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError("socket path too long");
  }
  std::strncpy(address.sun_path, socket_path.c_str(), sizeof(address.sun_path) - 1);
  unlink(socket_path.c_str());
  n->listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (n->listen_fd_ < 0 ||
      bind(n->listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(n->listen_fd_, 16) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", socket_path));
  }
  n->stop_fd_ = eventfd(0, EFD_CLOEXEC);
  n->thread_ = std::thread([raw = n.get()] { raw->Run(); });
  return n;
}

NotAKubelet::~NotAKubelet() {
  if (stop_fd_ >= 0) {
    uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof(one));
  }
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
}

void NotAKubelet::Run() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents) break;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    connections_.fetch_add(1);
    if (behaviour_ == Behaviour::kSilent) {
      held_.push_back(fd);
      continue;
    }
    static constexpr char kNoise[] = "HTTP/1.1 400 Bad Request\r\n\r\nnot a kubelet\n";
    (void)!write(fd, kNoise, sizeof(kNoise) - 1);
    close(fd);
  }
  for (int fd : held_) close(fd);
}

}  // namespace testing_support
