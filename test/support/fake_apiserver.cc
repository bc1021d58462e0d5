// The public face of the kube-apiserver emulation: starting it, and the scripting, fault and
// request-log methods tests call, each under the server's mutex. The pieces behind it:
//   apiserver_objects   resource table, JSON accessors, identity
//   apiserver_status    replies and Status bodies
//   apiserver_selectors label and field selectors
//   apiserver_patch     merge, strategic-merge and JSON patches
//   apiserver_store     revisions, watch events, the API verbs, lists
//   apiserver_binding   pods/binding
//   apiserver_watch     watch streams
//   apiserver_route     URL paths to resources
//   apiserver_sockets   the connections cpp-httplib keeps to itself
//   apiserver_server    the HTTPS server and the request path
#include "test/support/fake_apiserver.h"

#include <signal.h>

#include <fstream>
#include <mutex>
#include <sstream>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "test/support/apiserver_objects.h"
#include "test/support/apiserver_server.h"
#include "test/support/apiserver_status.h"

namespace testing_support {

absl::StatusOr<std::unique_ptr<FakeApiServer>> FakeApiServer::Start(Options options) {
  signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the test
  auto impl = std::make_unique<Impl>(std::move(options));
  absl::Status s = impl->Init();
  if (!s.ok()) return s;
  return std::unique_ptr<FakeApiServer>(new FakeApiServer(std::move(impl)));
}

FakeApiServer::FakeApiServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FakeApiServer::~FakeApiServer() { impl_->Stop(); }

int FakeApiServer::port() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->port_;
}
std::string FakeApiServer::host() const { return "127.0.0.1"; }
std::string FakeApiServer::url() const { return absl::StrCat("https://127.0.0.1:", port()); }
const std::string& FakeApiServer::cert_dir() const { return impl_->cert_dir_; }
std::string FakeApiServer::ca_file() const { return impl_->cert_dir_ + "/ca.crt"; }
std::string FakeApiServer::client_cert_file() const { return impl_->cert_dir_ + "/client.crt"; }
std::string FakeApiServer::client_key_file() const { return impl_->cert_dir_ + "/client.key"; }

std::string FakeApiServer::Kubeconfig(const std::string& user_yaml) const {
  std::ifstream ca(ca_file(), std::ios::binary);
  std::stringstream pem;
  pem << ca.rdbuf();
  return absl::StrCat(R"(apiVersion: v1
kind: Config
current-context: emulator
clusters:
- name: emulator
  cluster:
    server: )",
                      url(), R"(
    certificate-authority-data: )",
                      absl::Base64Escape(pem.str()), R"(
users:
- name: tester
  user:
)",
                      user_yaml, R"(
contexts:
- name: emulator
  context:
    cluster: emulator
    user: tester
    namespace: gpu-system
)");
}

absl::Status FakeApiServer::Load(absl::string_view json) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->store_.Load(json);
}

absl::Status FakeApiServer::LoadTestData(absl::string_view relative_path) {
  std::string path = absl::StrCat(GT_TESTDATA_DIR, "/", relative_path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::ostringstream text;
  text << in.rdbuf();
  return Load(text.str());
}

absl::Status FakeApiServer::Add(Resource r, absl::string_view json) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->store_.Add(r, json);
}
absl::Status FakeApiServer::Upsert(Resource r, absl::string_view json) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->store_.Upsert(r, json);
}
absl::Status FakeApiServer::Delete(Resource r, absl::string_view ns, absl::string_view name) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return apiserver::ToStatus(impl_->store_.Delete(r, ns, name, /*from_api=*/false));
}
absl::Status FakeApiServer::MergePatch(Resource r, absl::string_view ns, absl::string_view name,
                                       absl::string_view patch) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return apiserver::ToStatus(impl_->store_.Patch(r, ns, name, "application/merge-patch+json", patch,
                                                 apiserver::Info(r).api_version));
}
absl::Status FakeApiServer::AddNode(absl::string_view json) { return Add(Resource::kNodes, json); }
absl::Status FakeApiServer::UpsertNode(absl::string_view json) {
  return Upsert(Resource::kNodes, json);
}
absl::Status FakeApiServer::DeleteNode(absl::string_view name) {
  return Delete(Resource::kNodes, "", name);
}
absl::Status FakeApiServer::AddPod(absl::string_view json) { return Add(Resource::kPods, json); }
absl::Status FakeApiServer::UpsertPod(absl::string_view json) {
  return Upsert(Resource::kPods, json);
}
absl::Status FakeApiServer::DeletePod(absl::string_view ns, absl::string_view name) {
  return Delete(Resource::kPods, ns, name);
}
absl::Status FakeApiServer::AddNamespace(absl::string_view name) {
  return Add(
      Resource::kNamespaces,
      absl::StrCat(R"({"metadata":{"name":)", apiserver::JsonString(name),
                   R"(,"labels":{"kubernetes.io/metadata.name":)", apiserver::JsonString(name),
                   R"(}},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}})"));
}

bool FakeApiServer::DeleteSilently(Resource r, absl::string_view ns, absl::string_view name) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->store_.DeleteSilently(r, ns, name);
}
std::string FakeApiServer::GetObject(Resource r, absl::string_view ns,
                                     absl::string_view name) const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->store_.GetObject(r, ns, name);
}
std::vector<std::string> FakeApiServer::ListObjects(Resource r, absl::string_view ns) const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->store_.ListObjects(r, ns);
}
std::vector<std::string> FakeApiServer::Events() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->store_.Events();
}
int64_t FakeApiServer::resource_version() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->store_.resource_version();
}

void FakeApiServer::DropWatches(bool graceful) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  ++impl_->watch_control_.drop_generation;
  impl_->watch_control_.drop_graceful = graceful;
  impl_->WakeEveryone();
}
void FakeApiServer::Compact() {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->store_.Compact();
}
void FakeApiServer::SetBookmarkInterval(std::chrono::milliseconds interval) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->watch_control_.bookmark_interval = interval;
  impl_->WakeEveryone();
}
int FakeApiServer::OpenWatches() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->watch_control_.open;
}
bool FakeApiServer::WaitForWatches(int count, std::chrono::milliseconds timeout) const {
  return impl_->WaitForWatches(count, timeout);
}

void FakeApiServer::Stop() { impl_->Stop(); }
absl::Status FakeApiServer::Restart(bool keep_state) { return impl_->Restart(keep_state); }
bool FakeApiServer::running() const { return impl_->running(); }

void FakeApiServer::AcceptTokens(std::vector<std::string> tokens) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->tokens_ = std::move(tokens);
}

void FakeApiServer::SetLatency(std::chrono::milliseconds latency) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->latency_ = latency;
}
void FakeApiServer::InjectFailure(absl::string_view method, absl::string_view path_prefix,
                                  int http_status, int times) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->failures_.push_back({std::string(method), std::string(path_prefix), http_status, times});
}

void FakeApiServer::FailRequests(const FaultTarget& target, int http_status,
                                 std::chrono::steady_clock::time_point until, int times) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->timed_faults_.push_back({target, http_status, std::chrono::milliseconds(0), until, times});
}
void FakeApiServer::StallRequests(const FaultTarget& target, std::chrono::milliseconds hold,
                                  std::chrono::steady_clock::time_point until, int times) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->timed_faults_.push_back({target, 0, hold, until, times});
}
void FakeApiServer::ClearFaults() {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->timed_faults_.clear();
  impl_->failures_.clear();
}
void FakeApiServer::AdvanceResourceVersion(int64_t by) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->store_.Advance(by);
}

std::vector<RequestRecord> FakeApiServer::Requests() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  std::vector<RequestRecord> out;
  for (const auto& [id, rec] : impl_->requests_) out.push_back(rec);
  return out;
}
int64_t FakeApiServer::CountRequests(absl::string_view method, absl::string_view path_prefix,
                                     absl::string_view query_substring) const {
  return impl_->CountRequests(method, path_prefix, query_substring);
}
void FakeApiServer::ClearRequests() {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->requests_.clear();
  impl_->max_bindings_in_flight_ = impl_->bindings_in_flight_;
}
int FakeApiServer::MaxConcurrentBindings() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->max_bindings_in_flight_;
}

}  // namespace testing_support
