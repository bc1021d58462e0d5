// Shared pieces of the kube-apiserver emulation's tests (fake_apiserver_test.cc and the
// apiserver_*_test.cc beside it): a fixture with a fresh emulation per test, clients over real
// HTTPS (httplib, a watch read line by line, raw TLS where the chunked bytes matter), JSON
// accessors, and the Pod and Binding bodies the tests send. The captures from a real v1.28
// apiserver they compare with are in test/testdata/apiserver/.
#ifndef GPU_TENANCY_TEST_SUPPORT_FAKE_APISERVER_TEST_UTIL_H_
#define GPU_TENANCY_TEST_SUPPORT_FAKE_APISERVER_TEST_UTIL_H_

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "test/support/fake_apiserver.h"
#include "test/support/serve_process.h"  // ParseOrDie, ReadTestData

namespace testing_support::apiserver_test {

using std::chrono::milliseconds;
using std::chrono::seconds;

inline constexpr char kToken[] = "test-token";

std::set<std::string> Keys(const rapidjson::Value& v);  // member names of an object
std::string Str(const rapidjson::Value& obj, const char* key);
std::string Meta(const rapidjson::Value& obj, const char* key);  // metadata.KEY
std::vector<std::string> ItemNames(const rapidjson::Value& list);
void EraseMetadataField(rapidjson::Value& obj, const char* key);
bool ContainsIgnoreCase(absl::string_view haystack, absl::string_view needle);
// "too old resource version: 1 (295)" and "... 7 (9)" compare equal.
std::string NoDigits(const std::string& s);
// Splits a raw chunked body into its chunks; *terminated says whether the 0-chunk was seen.
std::vector<std::string> Chunks(const std::string& raw, bool* terminated);
// A captured Status reply: the JSON, then a line "HTTP 409".
std::pair<std::string, int> CapturedReply(const std::string& text);
// The lines of the capture watch-pods.raw, one per chunk.
std::vector<std::string> CapturedWatchLines();

std::string PodJson(const std::string& ns, const std::string& name, const std::string& node = "",
                    const std::string& app = "w");
std::string BindingJson(const std::string& ns, const std::string& name, const std::string& node,
                        const std::string& extra_meta = "");

std::unique_ptr<httplib::SSLClient> MakeClient(const FakeApiServer& server,
                                               const std::string& token = kToken);

// A watch read through httplib in a background thread, line by line.
class WatchStream {
 public:
  WatchStream(const FakeApiServer& server, const std::string& path,
              const std::string& token = kToken)
      : client_(MakeClient(server, token)) {
    client_->set_read_timeout(30, 0);
    thread_ = std::thread([this, path] {
      httplib::Result r = client_->Get(path.c_str(), [this](const char* data, size_t n) {
        std::lock_guard<std::mutex> lock(mu_);
        buffer_.append(data, n);
        for (size_t nl; (nl = buffer_.find('\n')) != std::string::npos;) {
          lines_.push_back(buffer_.substr(0, nl));
          buffer_.erase(0, nl + 1);
        }
        cv_.notify_all();
        return !cancel_.load();
      });
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
      ok_ = static_cast<bool>(r);
      status_ = r ? r->status : 0;
      body_ = r ? r->body : "";
      cv_.notify_all();
    });
  }

  ~WatchStream() {
    cancel_ = true;
    client_->stop();
    thread_.join();
  }

  // The next line, or "" when none came within the timeout or the stream ended.
  std::string Next(milliseconds timeout = milliseconds(5000)) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [this] { return !lines_.empty() || done_; });
    if (lines_.empty()) return "";
    std::string line = lines_.front();
    lines_.pop_front();
    return line;
  }

  // The next line whose type is `type` (others are skipped), or "".
  std::string NextOfType(const std::string& type, milliseconds timeout = milliseconds(5000)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      std::string line = Next(
          std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now()));
      if (line.empty()) return "";
      if (absl::StrContains(line, absl::StrCat(R"({"type":")", type, "\""))) return line;
    }
    return "";
  }

  // The next event that is not a BOOKMARK.
  std::string NextEvent(milliseconds timeout = milliseconds(5000)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      std::string line = Next(
          std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now()));
      if (line.empty() || !absl::StrContains(line, R"({"type":"BOOKMARK")")) return line;
    }
    return "";
  }

  bool WaitDone(milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return done_; });
  }
  bool ok() {  // the response completed (terminating chunk seen)
    std::lock_guard<std::mutex> lock(mu_);
    return ok_;
  }
  int status() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  std::unique_ptr<httplib::SSLClient> client_;
  std::thread thread_;
  std::atomic<bool> cancel_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::string buffer_;
  std::deque<std::string> lines_;
  bool done_ = false;
  bool ok_ = false;
  int status_ = 0;
  std::string body_;
};

struct RawResponse {
  std::string head;  // status line and headers
  std::string body;  // exactly as sent (chunk sizes included)
};

// One HTTP/1.1 request over TLS with OpenSSL directly, reading until the chunked body ends, the
// server closes, or 10 s pass: what a tcpdump of the exchange would show.
RawResponse RawHttps(int port, const std::string& ca_file, const std::string& target,
                     const std::string& token = kToken);

class FakeApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeApiServer::Options options;
    options.bookmark_interval = milliseconds(200);
    auto server = FakeApiServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }

  std::unique_ptr<FakeApiServer> server_;
};

#define ASSERT_OK(expr)                                \
  do {                                                 \
    absl::Status gt_s_ = (expr);                       \
    ASSERT_TRUE(gt_s_.ok()) << #expr << ": " << gt_s_; \
  } while (0)

}  // namespace testing_support::apiserver_test

#endif  // GPU_TENANCY_TEST_SUPPORT_FAKE_APISERVER_TEST_UTIL_H_
