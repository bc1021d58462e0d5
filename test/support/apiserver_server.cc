// Test support, part of the kube-apiserver emulation: its HTTPS server and request path
// (see apiserver_server.h).
#include "test/support/apiserver_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "test/support/apiserver_binding.h"
#include "test/support/apiserver_discovery.h"
#include "test/support/apiserver_eviction.h"
#include "test/support/apiserver_objects.h"
#include "test/support/apiserver_sockets.h"

namespace testing_support {

using apiserver::BadRequest;
using apiserver::Bind;
using apiserver::Info;
using apiserver::InjectedFailure;
using apiserver::MethodNotAllowed;
using apiserver::NewUid;
using apiserver::ParseBool;
using apiserver::ParseRoute;
using apiserver::PeerCommonName;
using apiserver::Reply;
using apiserver::ResourceInfo;
using apiserver::Route;
using apiserver::ShutdownConnections;
using apiserver::StatusReply;
using apiserver::StringAt;
using apiserver::UnknownPath;
using apiserver::Value;

namespace {

std::string BodyApiVersion(const Route& route, const Value& doc) {
  std::string sent = StringAt(doc, "apiVersion");
  return sent.empty() ? route.api_version : sent;
}

std::optional<std::string> ParamIfPresent(const httplib::Request& req, const char* name) {
  if (!req.has_param(name)) return std::nullopt;
  return req.get_param_value(name);
}

apiserver::CollectionQuery CollectionQueryOf(const Route& route, const httplib::Request& req) {
  apiserver::CollectionQuery q;
  q.resource = route.resource;
  q.ns = route.ns;
  q.api_version = route.api_version;
  q.label_selector = req.get_param_value("labelSelector");
  q.field_selector = req.get_param_value("fieldSelector");
  q.resource_version = req.get_param_value("resourceVersion");
  q.continue_token = req.get_param_value("continue");
  q.limit = ParamIfPresent(req, "limit");
  q.allow_bookmarks = req.get_param_value("allowWatchBookmarks");
  q.timeout_seconds = ParamIfPresent(req, "timeoutSeconds");
  return q;
}

}  // namespace

FakeApiServer::Impl::Impl(Options options)
    : options_(std::move(options)),
      tokens_(options_.tokens),
      store_([this](Resource r) { resource_cv_[static_cast<size_t>(r)].notify_all(); }) {
  watch_control_.bookmark_interval = options_.bookmark_interval;
}

FakeApiServer::Impl::~Impl() { Stop(); }

absl::Status FakeApiServer::Impl::Init() {
  if (options_.cert_dir.empty()) {
    temp_ = std::make_unique<TempDir>();
    cert_dir_ = temp_->path();
    absl::Status s = MakeTestCerts(cert_dir_);
    if (!s.ok()) return s;
  } else {
    cert_dir_ = options_.cert_dir;
  }
  return Listen(options_.port);
}

absl::Status FakeApiServer::Impl::Listen(int port) {
  auto server = std::make_unique<httplib::SSLServer>(
      (cert_dir_ + "/tls.crt").c_str(), (cert_dir_ + "/tls.key").c_str(),
      options_.require_client_cert ? (cert_dir_ + "/ca.crt").c_str() : nullptr);
  if (!server->is_valid()) return absl::InternalError("cannot load the test certificates");
  int threads = options_.threads;
  server->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  listen_fd_ = -1;
  server->set_socket_options([this](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd_ = sock;
  });
  server->set_tcp_nodelay(true);
  server->set_keep_alive_max_count(1000);
  server->set_read_timeout(10, 0);
  server->set_write_timeout(10, 0);
  auto handler = [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); };
  server->Get(".*", handler);
  server->Post(".*", handler);
  server->Put(".*", handler);
  server->Patch(".*", handler);
  server->Delete(".*", handler);

  int bound = -1;
  if (port == 0) {
    bound = server->bind_to_any_port("127.0.0.1");
  } else {
    // The old listener may still be closing; SO_REUSEADDR covers TIME_WAIT.
    for (int i = 0; i < 100 && bound < 0; ++i) {
      if (server->bind_to_port("127.0.0.1", port)) {
        bound = port;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }
  if (bound <= 0) {
    return absl::UnavailableError(absl::StrCat("cannot bind 127.0.0.1:", port));
  }
  // cpp-httplib listens with a backlog of 5; a burst of test clients needs more.
  if (listen_fd_ >= 0) ::listen(listen_fd_, 128);
  httplib::SSLServer* raw = server.get();
  std::thread thread([raw] { raw->listen_after_bind(); });
  // stop() is a no-op until the listen loop runs; wait so a quick Stop() cannot be lost.
  for (int i = 0; i < 5000 && !raw->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::lock_guard<std::mutex> lock(mu_);
  port_ = bound;
  server_ = std::move(server);
  thread_ = std::move(thread);
  return absl::OkStatus();
}

void FakeApiServer::Impl::Stop() {
  std::unique_ptr<httplib::SSLServer> server;
  std::thread thread;
  int port;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (server_ == nullptr) return;
    watch_control_.stopping = true;
    server = std::move(server_);
    thread = std::move(thread_);
    port = port_;
    WakeEveryone();
  }
  server->stop();
  // Idle keep-alive connections would otherwise hold the worker threads for their timeout.
  ShutdownConnections(port);
  thread.join();
  server.reset();
  std::lock_guard<std::mutex> lock(mu_);
  watch_control_.stopping = false;
}

absl::Status FakeApiServer::Impl::Restart(bool keep_state) {
  Stop();
  if (!keep_state) {
    std::lock_guard<std::mutex> lock(mu_);
    store_.Clear();
  }
  return Listen(port_);
}

bool FakeApiServer::Impl::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return server_ != nullptr;
}

bool FakeApiServer::Impl::WaitForWatches(int count, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return watch_control_.open >= count; });
}

int64_t FakeApiServer::Impl::CountRequests(absl::string_view method, absl::string_view prefix,
                                           absl::string_view query) const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t n = 0;
  for (const auto& [id, rec] : requests_) {
    if (!method.empty() && rec.method != method) continue;
    if (!absl::StartsWith(rec.path, prefix)) continue;
    size_t q = rec.target.find('?');
    absl::string_view raw_query =
        q == std::string::npos ? absl::string_view() : absl::string_view(rec.target).substr(q);
    if (!query.empty() && !absl::StrContains(raw_query, query)) continue;
    ++n;
  }
  return n;
}

uint64_t FakeApiServer::Impl::Log(RequestRecord rec) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t id = ++next_request_id_;
  requests_.emplace_back(id, std::move(rec));
  return id;
}

void FakeApiServer::Impl::SetStatus(uint64_t id, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = requests_.rbegin(); it != requests_.rend(); ++it) {
    if (it->first == id) {
      it->second.status = status;
      return;
    }
  }
}

bool FakeApiServer::Impl::StartWatch(const Route& route, const httplib::Request& req,
                                     httplib::Response& res, Reply* refused) {
  auto w = std::make_shared<apiserver::Watch>();
  int port;
  {
    std::lock_guard<std::mutex> lock(mu_);
    port = port_;
  }
  if (std::optional<Reply> bad =
          w->Configure(CollectionQueryOf(route, req), options_.default_watch_timeout,
                       apiserver::FindConnectionFd(port, req.remote_port))) {
    *refused = *std::move(bad);
    return false;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::optional<Reply> bad = w->Begin(store_, watch_control_)) {
      *refused = *std::move(bad);
      return false;
    }
    ++watch_control_.open;
    cv_.notify_all();
  }
  res.status = 200;
  res.set_chunked_content_provider(
      "application/json",
      [this, w](size_t, httplib::DataSink& sink) { return WatchStep(*w, sink); },
      [this](bool) {
        std::lock_guard<std::mutex> lock(mu_);
        --watch_control_.open;
        cv_.notify_all();
      });
  return true;
}

bool FakeApiServer::Impl::WatchStep(apiserver::Watch& w, httplib::DataSink& sink) {
  std::vector<std::string> lines;
  apiserver::Watch::Turn turn;
  {
    std::unique_lock<std::mutex> lock(mu_);
    turn = w.Next(lock, resource_cv_[static_cast<size_t>(w.resource())], store_, watch_control_,
                  &lines);
  }
  for (const std::string& line : lines) {
    if (!sink.write(line.data(), line.size())) return false;
  }
  if (turn == apiserver::Watch::Turn::kAbort) return false;
  if (turn == apiserver::Watch::Turn::kFinish) sink.done();
  return true;
}

void FakeApiServer::Impl::Handle(const httplib::Request& req, httplib::Response& res) {
  // kube-apiserver compresses only bodies over 128 KiB and never a watch; cpp-httplib would
  // gzip whatever an Accept-Encoding allows, buffering watch events.
  const_cast<httplib::Request&>(req).headers.erase("Accept-Encoding");
  res.set_header("Audit-Id", NewUid());
  res.set_header("Cache-Control", "no-cache, private");

  RequestRecord rec;
  rec.method = req.method;
  rec.target = req.target;
  rec.path = req.path;
  std::string authorization = req.get_header_value("Authorization");
  if (absl::StartsWithIgnoreCase(authorization, "Bearer ")) {
    rec.token = std::string(absl::StripAsciiWhitespace(authorization.substr(7)));
  }
  rec.client_cn = PeerCommonName(req.ssl);
  bool authenticated;
  {
    std::lock_guard<std::mutex> lock(mu_);
    authenticated = tokens_.empty() || (options_.require_client_cert && !rec.client_cn.empty()) ||
                    (!rec.token.empty() &&
                     std::find(tokens_.begin(), tokens_.end(), rec.token) != tokens_.end());
  }
  uint64_t id = Log(rec);
  Reply reply;
  if (!authenticated) {
    reply = StatusReply(401, "Unauthorized", "Unauthorized", nullptr);
  } else if (!ApplyTimedFault(req, &reply) && !Injected(req, &reply) && Serve(req, res, &reply)) {
    SetStatus(id, 200);
    return;  // a watch stream
  }
  res.status = reply.code;
  for (const auto& [k, v] : reply.headers) res.set_header(k.c_str(), v);
  res.set_content(reply.body, "application/json");
  SetStatus(id, reply.code);
}

bool FakeApiServer::Impl::Injected(const httplib::Request& req, Reply* reply) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = failures_.begin(); it != failures_.end(); ++it) {
    if ((!it->method.empty() && it->method != req.method) ||
        !absl::StartsWith(req.path, it->prefix)) {
      continue;
    }
    *reply = InjectedFailure(it->status);
    if (--it->times <= 0) failures_.erase(it);
    return true;
  }
  return false;
}

namespace {

FakeApiServer::RequestKind KindOf(const httplib::Request& req) {
  using Kind = FakeApiServer::RequestKind;
  if (req.method != "GET" && req.method != "HEAD") return Kind::kWrite;
  Route route;
  if (!ParseRoute(req.path, &route) || !route.name.empty()) return Kind::kRead;
  return ParseBool(req.get_param_value("watch")) ? Kind::kWatch : Kind::kList;
}

bool Matches(const FakeApiServer::FaultTarget& t, const httplib::Request& req) {
  return (t.method.empty() || t.method == req.method) &&
         absl::StartsWith(req.path, t.path_prefix) &&
         (t.kind == FakeApiServer::RequestKind::kAny || t.kind == KindOf(req));
}

}  // namespace

bool FakeApiServer::Impl::ApplyTimedFault(const httplib::Request& req, Reply* reply) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  for (auto it = timed_faults_.rbegin(); it != timed_faults_.rend(); ++it) {
    if (now >= it->until || it->times == 0 || !Matches(it->target, req)) continue;
    if (it->times > 0) --it->times;
    if (it->status != 0) {
      *reply = InjectedFailure(it->status);
      return true;
    }
    // Stopped during the hold: the connection is being cut; whatever gets out says so.
    if (!cv_.wait_for(lock, it->hold, [this] { return watch_control_.stopping; })) return false;
    *reply = InjectedFailure(503);
    return true;
  }
  return false;
}

bool FakeApiServer::Impl::Serve(const httplib::Request& req, httplib::Response& res, Reply* reply) {
  if (req.method == "GET" || req.method == "HEAD") {
    if (std::optional<Reply> d = apiserver::Discovery(req.path, options_.resource_api_versions)) {
      *reply = *std::move(d);
      return false;
    }
  }
  Route route;
  if (!ParseRoute(req.path, &route) ||
      !apiserver::VersionServed(route.api_version, options_.resource_api_versions)) {
    *reply = UnknownPath();
    return false;
  }
  const ResourceInfo& info = Info(route.resource);
  const std::string& m = req.method;
  bool collection = route.name.empty();
  if (!route.sub.empty() && route.sub != "status" &&
      !((route.sub == "binding" || route.sub == "eviction") && route.resource == Resource::kPods)) {
    *reply = UnknownPath();
    return false;
  }
  if ((m == "GET" || m == "HEAD") && collection) {
    if (ParseBool(req.get_param_value("watch"))) return StartWatch(route, req, res, reply);
    std::lock_guard<std::mutex> lock(mu_);
    *reply = store_.List(CollectionQueryOf(route, req));
    return false;
  }
  if (m == "POST" && route.sub == "binding") {
    std::chrono::milliseconds latency;
    {
      std::unique_lock<std::mutex> lock(mu_);
      latency = latency_;
      max_bindings_in_flight_ = std::max(max_bindings_in_flight_, ++bindings_in_flight_);
      // Waits without holding the lock across the client's call; Stop() cuts it short.
      cv_.wait_for(lock, latency, [this] { return watch_control_.stopping; });
      *reply = Bind(store_, route.ns, route.name, req.body);
      --bindings_in_flight_;
    }
    return false;
  }
  if (m == "POST" && route.sub == "eviction") {
    std::lock_guard<std::mutex> lock(mu_);
    *reply = apiserver::Evict(store_, route.ns, route.name, req.body);
    return false;
  }
  std::string content_type = req.get_header_value("Content-Type");
  content_type = std::string(absl::StripAsciiWhitespace(
      absl::string_view(content_type).substr(0, content_type.find(';'))));
  std::lock_guard<std::mutex> lock(mu_);
  if (m == "GET" || m == "HEAD") {
    *reply = store_.Get(route.resource, route.ns, route.name);
  } else if (m == "POST" && collection && route.sub.empty()) {
    if (info.namespaced && route.ns.empty()) {
      *reply = MethodNotAllowed();
      return false;
    }
    absl::StatusOr<rapidjson::Document> doc = common::ParseJson(req.body);
    if (!doc.ok()) {
      *reply = BadRequest(doc.status().message());
      return false;
    }
    *reply = store_.Create(route.resource, *doc, route.ns, BodyApiVersion(route, *doc), true);
  } else if (m == "PUT" && !collection) {
    absl::StatusOr<rapidjson::Document> doc = common::ParseJson(req.body);
    if (!doc.ok()) {
      *reply = BadRequest(doc.status().message());
      return false;
    }
    *reply = store_.Update(route.resource, *doc, route.ns, route.name, BodyApiVersion(route, *doc),
                           true);
  } else if (m == "PATCH" && !collection) {
    *reply = store_.Patch(route.resource, route.ns, route.name, content_type, req.body,
                          route.api_version);
  } else if (m == "DELETE" && !collection && route.sub.empty()) {
    *reply = store_.Delete(route.resource, route.ns, route.name, true);
  } else {
    *reply = MethodNotAllowed();
  }
  return false;
}

}  // namespace testing_support
