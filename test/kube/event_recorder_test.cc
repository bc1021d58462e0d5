// kube::EventRecorder and EventJson: the core/v1 Event a pod gets (involved object, type,
// reason, message, timestamps, source), posting on a background thread to the pod's namespace,
// failures counted as dropped, the oldest pending events dropped when the queue is full, and
// the queue drained when the recorder is destroyed. Against the kube-apiserver emulation; a
// TCP relay that holds its first connection keeps the poster busy while a test fills the queue.
#include "kube/event_recorder.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "test/kube/live_test_util.h"

namespace kube_test {
namespace {

kube::PodEvent Event(const std::string& pod, bool warning = false) {
  return kube::PodEvent{
      "team", pod, UidOf("team", pod), warning, "GpuTenancyBound", absl::StrCat("Bound ", pod)};
}

// The involvedObject.name of every Event the API server stored, oldest first.
std::vector<std::string> EventPods(const FakeApiServer& api) {
  std::vector<std::string> out;
  for (const std::string& json : api.Events()) {
    absl::StatusOr<rapidjson::Document> doc = common::ParseJson(json);
    const common::JsonValue* involved = doc.ok() ? common::FindMember(*doc, "involvedObject") : 0;
    out.push_back(involved ? std::string(common::StringOr(*involved, "name")) : "<unreadable>");
  }
  return out;
}

// Relays TCP connections from its own loopback port to `target_port`, except that it holds
// every connection (accepted, nothing relayed) until Release().
class HoldingRelay {
 public:
  explicit HoldingRelay(int target_port) : target_port_(target_port) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(listen_fd_, 16) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "relay cannot listen";
    }
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { Accept(); });
  }
  ~HoldingRelay() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    changed_.notify_all();
    acceptor_.join();
    for (std::thread& t : pumps_) t.join();
    close(listen_fd_);
  }
  int port() const { return port_; }
  // True once a connection has come in (within `limit`).
  bool AwaitConnection(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, limit, [&] { return accepted_ > 0; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    changed_.notify_all();
  }

 private:
  bool Stopping() {
    std::lock_guard<std::mutex> lock(mu_);
    return stop_;
  }
  void Accept() {
    while (!Stopping()) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      std::lock_guard<std::mutex> lock(mu_);
      ++accepted_;
      changed_.notify_all();
      pumps_.emplace_back([this, fd] { Pump(fd); });
    }
  }
  void Pump(int client) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [&] { return released_ || stop_; });
    }
    int server = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(target_port_));
    bool up = !Stopping() && connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    char buf[16384];
    while (up && !Stopping()) {
      pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (poll(p, 2, 20) <= 0) continue;
      for (int i = 0; i < 2 && up; ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = read(p[i].fd, buf, sizeof(buf));
        int to = i == 0 ? server : client;
        up = n > 0 && write(to, buf, static_cast<size_t>(n)) == n;
      }
    }
    close(server);
    close(client);
  }

  int target_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable changed_;
  bool stop_ = false;
  bool released_ = false;
  int accepted_ = 0;
  std::thread acceptor_;
  std::vector<std::thread> pumps_;
};

TEST(EventJsonTest, ANormalAndAWarningEventAboutThePod) {
  for (bool warning : {false, true}) {
    SCOPED_TRACE(warning ? "warning" : "normal");
    kube::PodEvent e{
        "acme", "train-0", "uid-1", warning, "GpuTenancyBindFailed", "no free \"3g\"\nslice"};
    absl::Time before = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()));
    absl::StatusOr<rapidjson::Document> doc = common::ParseJson(kube::EventJson(e, absl::Now()));
    absl::Time after = absl::Now();
    ASSERT_TRUE(doc.ok()) << doc.status();
    EXPECT_EQ(common::StringOr(*doc, "apiVersion"), "v1");
    EXPECT_EQ(common::StringOr(*doc, "kind"), "Event");
    const common::JsonValue* meta = common::FindMember(*doc, "metadata");
    ASSERT_NE(meta, nullptr);
    EXPECT_EQ(common::StringOr(*meta, "generateName"), "train-0.");
    EXPECT_EQ(common::StringOr(*meta, "namespace"), "acme");
    const common::JsonValue* involved = common::FindMember(*doc, "involvedObject");
    ASSERT_NE(involved, nullptr);
    for (const auto& [key, value] :
         std::vector<std::pair<const char*, const char*>>{{"apiVersion", "v1"},
                                                          {"kind", "Pod"},
                                                          {"namespace", "acme"},
                                                          {"name", "train-0"},
                                                          {"uid", "uid-1"}}) {
      EXPECT_EQ(common::StringOr(*involved, key), value) << key;
    }
    EXPECT_EQ(common::StringOr(*doc, "type"), warning ? "Warning" : "Normal");
    EXPECT_EQ(common::StringOr(*doc, "reason"), "GpuTenancyBindFailed");
    EXPECT_EQ(common::StringOr(*doc, "message"), "no free \"3g\"\nslice");  // escaped, intact
    const common::JsonValue* source = common::FindMember(*doc, "source");
    ASSERT_NE(source, nullptr);
    EXPECT_EQ(common::StringOr(*source, "component"), "gpu-tenancy");
    EXPECT_EQ(common::StringOr(*doc, "reportingComponent"), "gpu-tenancy");
    EXPECT_EQ(common::StringOr(*doc, "reportingInstance"), "gpu-tenancy");
    EXPECT_EQ(common::StringOr(*doc, "action"), "Binding");
    const common::JsonValue* count = common::FindMember(*doc, "count");
    ASSERT_TRUE(count && count->IsInt());
    EXPECT_EQ(count->GetInt(), 1);
    // RFC 3339 in UTC: seconds for the legacy fields, microseconds for eventTime.
    const std::pair<const char*, const char*> times[] = {{"firstTimestamp", "%Y-%m-%dT%H:%M:%SZ"},
                                                         {"lastTimestamp", "%Y-%m-%dT%H:%M:%SZ"},
                                                         {"eventTime", "%Y-%m-%dT%H:%M:%E6SZ"}};
    for (const auto& [key, format] : times) {
      SCOPED_TRACE(key);
      std::string text(common::StringOr(*doc, key));
      absl::Time at;
      std::string error;
      ASSERT_TRUE(absl::ParseTime(format, text, absl::UTCTimeZone(), &at, &error)) << text;
      EXPECT_GE(at, before);
      EXPECT_LE(at, after);
    }
    EXPECT_EQ(common::StringOr(*doc, "firstTimestamp"), common::StringOr(*doc, "lastTimestamp"));
  }
}

class EventRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start({});
    ASSERT_TRUE(api.ok()) << api.status();
    api_ = *std::move(api);
    for (const char* ns : {"team", "other"}) ASSERT_TRUE(api_->AddNamespace(ns).ok());
    absl::StatusOr<std::unique_ptr<kube::ApiClient>> c = kube::ApiClient::Create(ConfigFor(*api_));
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = *std::move(c);
  }
  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<kube::ApiClient> client_;
};

TEST_F(EventRecorderTest, EachEventIsPostedToItsPodsNamespace) {
  kube::EventRecorder recorder(*client_);
  recorder.Record(Event("a"));
  kube::PodEvent other = Event("b", /*warning=*/true);
  other.pod_namespace = "other";
  recorder.Record(other);
  ASSERT_TRUE(WaitFor([&] { return recorder.posted() == 2; })) << recorder.posted();
  EXPECT_EQ(recorder.dropped(), 0u);
  EXPECT_EQ(api_->CountRequests("POST", "/api/v1/namespaces/team/events"), 1);
  EXPECT_EQ(api_->CountRequests("POST", "/api/v1/namespaces/other/events"), 1);
  ASSERT_EQ(api_->Events().size(), 2u);
  absl::StatusOr<rapidjson::Document> stored = common::ParseJson(api_->Events()[1]);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(common::StringOr(*stored, "type"), "Warning");
  EXPECT_EQ(common::StringOr(*stored, "message"), "Bound b");
  const common::JsonValue* meta = common::FindMember(*stored, "metadata");
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(common::StringOr(*meta, "namespace"), "other");
}

TEST_F(EventRecorderTest, RefusedAndUndeliverableEventsAreCountedAsDropped) {
  kube::EventRecorder recorder(*client_);
  api_->InjectFailure("POST", "/api/v1/namespaces/team/events", 500);
  recorder.Record(Event("refused"));
  ASSERT_TRUE(WaitFor([&] { return recorder.dropped() == 1; }));
  recorder.Record(Event("accepted"));  // the recorder goes on after a failure
  ASSERT_TRUE(WaitFor([&] { return recorder.posted() == 1; }));
  EXPECT_EQ(EventPods(*api_), std::vector<std::string>{"accepted"});

  api_->Stop();
  recorder.Record(Event("unreachable"));
  ASSERT_TRUE(WaitFor([&] { return recorder.dropped() == 2; }));
  EXPECT_EQ(recorder.posted(), 1u);
}

TEST_F(EventRecorderTest, AFullQueueDropsItsOldestEvents) {
  HoldingRelay relay(api_->port());
  kube::ApiConfig config = ConfigFor(*api_);
  config.port = relay.port();
  absl::StatusOr<std::unique_ptr<kube::ApiClient>> held = kube::ApiClient::Create(config);
  ASSERT_TRUE(held.ok()) << held.status();
  {
    kube::EventRecorder recorder(**held, /*max_pending=*/2);
    recorder.Record(Event("e1"));
    // The poster took e1 and is stuck connecting through the relay: the queue is empty.
    ASSERT_TRUE(relay.AwaitConnection(10s));
    for (const char* pod : {"e2", "e3", "e4", "e5"}) recorder.Record(Event(pod));
    EXPECT_EQ(recorder.dropped(), 2u) << "Record() must drop at once, never wait";
    relay.Release();
    ASSERT_TRUE(WaitFor([&] { return recorder.posted() == 3; }, 15s)) << recorder.posted();
    EXPECT_EQ(recorder.dropped(), 2u);
  }
  EXPECT_EQ(EventPods(*api_), (std::vector<std::string>{"e1", "e4", "e5"}));
}

TEST_F(EventRecorderTest, DestroyingTheRecorderPostsWhatIsQueuedFirst) {
  {
    kube::EventRecorder recorder(*client_);
    for (const char* pod : {"p1", "p2", "p3"}) recorder.Record(Event(pod));
  }
  EXPECT_EQ(EventPods(*api_), (std::vector<std::string>{"p1", "p2", "p3"}));
}

}  // namespace
}  // namespace kube_test
