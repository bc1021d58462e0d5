// Certificate rotation under load, the way Kubernetes updates a mounted Secret: the serving pair
// lives behind a "..data" symlink that kubelet swaps atomically. While clients post filter
// requests on fresh connections, on keep-alive connections and on one connection opened before
// the swap, the pair is swapped; no request may fail, new handshakes must see the new
// certificate, and the old connection must keep working. A broken new pair must be refused
// (and logged) while the old one keeps serving.
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/server/tls_test_client.h"
#include "test/support/serve_process.h"

namespace {

namespace fs = std::filesystem;
using testing_support::CertificateFileSerial;
using testing_support::ClientCredentials;
using testing_support::MakeTestCerts;
using testing_support::ServeProcess;
using testing_support::TempDir;
using testing_support::TlsConnection;

using testing_support::kDemoMigFilterRequest;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A second serving pair (tls.crt, tls.key in out_dir) from the CA that MakeTestCerts made.
void IssueServingPair(const std::string& ca_dir, const std::string& out_dir) {
  fs::create_directories(out_dir);
  std::string script = absl::StrCat(
      "set -e; cd '", out_dir, "';",
      "openssl ecparam -name prime256v1 -genkey -noout -out tls.key 2>/dev/null;",
      "openssl req -new -key tls.key -subj /CN=tls-next -out tls.csr 2>/dev/null;",
      "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\nextendedKeyUsage=serverAuth\\n' > "
      "tls.ext;",
      "openssl x509 -req -in tls.csr -CA '", ca_dir, "/ca.crt' -CAkey '", ca_dir,
      "/ca.key' -set_serial 0x$(openssl rand -hex 16) -days 2 -sha256 -extfile tls.ext "
      "-out tls.crt 2>/dev/null");
  ASSERT_EQ(std::system(absl::StrCat("bash -c \"", script, "\"").c_str()), 0);
}

// A directory laid out like a Secret volume that kubelet maintains:
//   tls.crt -> ..data/tls.crt, tls.key -> ..data/tls.key, ..data -> ..<generation>/
// Publish() writes a new generation and swaps ..data with one rename(2), as kubelet does.
class SecretVolume {
 public:
  explicit SecretVolume(std::string dir) : dir_(std::move(dir)) { fs::create_directories(dir_); }
  std::string cert() const { return dir_ + "/tls.crt"; }
  std::string key() const { return dir_ + "/tls.key"; }

  void Publish(const std::string& cert_src, const std::string& key_src) {
    std::string generation = absl::StrCat("..gen_", ++generation_);
    fs::create_directories(dir_ + "/" + generation);
    fs::copy_file(cert_src, dir_ + "/" + generation + "/tls.crt");
    fs::copy_file(key_src, dir_ + "/" + generation + "/tls.key");
    fs::create_directory_symlink(generation, dir_ + "/..data_tmp");
    fs::rename(dir_ + "/..data_tmp", dir_ + "/..data");
    if (generation_ == 1) {
      fs::create_symlink("..data/tls.crt", cert());
      fs::create_symlink("..data/tls.key", key());
    }
  }

 private:
  std::string dir_;
  int generation_ = 0;
};

// Clients that post filter requests until stopped, counting every outcome.
class Load {
 public:
  Load(int port, std::string ca_file) : port_(port), ca_file_(std::move(ca_file)) {}
  ~Load() { Stop(); }

  // `fresh` threads open a new connection (full handshake) per request; `keep_alive` threads
  // reuse one client; one more thread holds a single connection opened now, before any swap.
  void Start(int fresh, int keep_alive) {
    absl::StatusOr<std::unique_ptr<TlsConnection>> held =
        TlsConnection::Open(port_, ClientCredentials{ca_file_, "", ""});
    ASSERT_TRUE(held.ok()) << held.status();
    held_serial_at_start_ = (*held)->PeerSerial();
    held_ = *std::move(held);
    for (int i = 0; i < fresh; ++i) threads_.emplace_back([this] { HttplibLoop(false); });
    for (int i = 0; i < keep_alive; ++i) threads_.emplace_back([this] { HttplibLoop(true); });
    threads_.emplace_back([this] { HeldConnectionLoop(); });
  }

  void Stop() {
    stop_ = true;
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

  int ok() const { return ok_.load(); }
  int failed() const { return failed_.load(); }
  int held_ok() const { return held_ok_.load(); }
  std::string held_serial_at_start() const { return held_serial_at_start_; }
  std::string held_serial_now() const { return held_ ? held_->PeerSerial() : ""; }
  std::string errors() {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }

 private:
  void Record(bool ok, const std::string& what) {
    if (ok) {
      ++ok_;
      return;
    }
    ++failed_;
    std::lock_guard<std::mutex> lock(mu_);
    if (errors_.size() < 2000) absl::StrAppend(&errors_, what, "\n");
  }

  void HttplibLoop(bool keep_alive) {
    std::unique_ptr<httplib::SSLClient> client;
    while (!stop_) {
      if (!client || !keep_alive) {
        client = std::make_unique<httplib::SSLClient>("127.0.0.1", port_);
        client->set_ca_cert_path(ca_file_.c_str());
        client->enable_server_certificate_verification(true);
        client->set_keep_alive(keep_alive);
        client->set_read_timeout(10, 0);
      }
      httplib::Result r =
          client->Post("/extender/filter", kDemoMigFilterRequest, "application/json");
      if (!r) {
        Record(false, absl::StrCat(keep_alive ? "keep-alive" : "fresh", ": ",
                                   httplib::to_string(r.error())));
      } else {
        Record(r->status == 200, absl::StrCat("HTTP ", r->status, ": ", r->body.substr(0, 200)));
      }
    }
  }

  void HeldConnectionLoop() {
    while (!stop_) {
      absl::StatusOr<int> status = held_->Post("/extender/filter", kDemoMigFilterRequest);
      bool ok = status.ok() && *status == 200;
      Record(ok, absl::StrCat("held connection: ", status.ok() ? absl::StrCat("HTTP ", *status)
                                                               : status.status().ToString()));
      if (ok) ++held_ok_;
      // Well inside the server's keep-alive timeout, so only a dropped connection can fail.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  int port_;
  std::string ca_file_;
  std::atomic<bool> stop_{false};
  std::atomic<int> ok_{0};
  std::atomic<int> failed_{0};
  std::atomic<int> held_ok_{0};
  std::mutex mu_;
  std::string errors_;
  std::unique_ptr<TlsConnection> held_;
  std::string held_serial_at_start_;
  std::vector<std::thread> threads_;
};

// The serial a new handshake sees, or the error.
std::string HandshakeSerial(int port, const std::string& ca_file) {
  absl::StatusOr<std::unique_ptr<TlsConnection>> c =
      TlsConnection::Open(port, ClientCredentials{ca_file, "", ""});
  return c.ok() ? (*c)->PeerSerial() : c.status().ToString();
}

// Polls until a new handshake sees `serial` (true) or `timeout` passes (false).
bool WaitForSerial(int port, const std::string& ca_file, const std::string& serial,
                   std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (HandshakeSerial(port, ca_file) == serial) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

bool WaitForLog(const std::string& log_file, const std::string& text, size_t occurrences,
                std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string log = ReadFile(log_file);
    size_t count = 0;
    for (size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++count;
    if (count >= occurrences) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

class TlsRotationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.File("a"));
    ASSERT_TRUE(MakeTestCerts(dir_.File("a")).ok());
    IssueServingPair(dir_.File("a"), dir_.File("b"));
    ca_ = dir_.File("a/ca.crt");
    serial_a_ = CertificateFileSerial(dir_.File("a/tls.crt"));
    serial_b_ = CertificateFileSerial(dir_.File("b/tls.crt"));
    ASSERT_FALSE(serial_a_.empty());
    ASSERT_FALSE(serial_b_.empty());
    ASSERT_NE(serial_a_, serial_b_);
    volume_.Publish(dir_.File("a/tls.crt"), dir_.File("a/tls.key"));
    log_ = dir_.File("server.log");
    absl::StatusOr<std::unique_ptr<ServeProcess>> s = ServeProcess::Start(
        {"--demo", "--tls-cert", volume_.cert(), "--tls-key", volume_.key()}, log_);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    ASSERT_EQ(HandshakeSerial(server_->tls_port(), ca_), serial_a_);
  }

  TempDir dir_;
  SecretVolume volume_{dir_.File("mount")};
  std::string ca_, serial_a_, serial_b_, log_;
  std::unique_ptr<ServeProcess> server_;
};

TEST_F(TlsRotationTest, SymlinkSwapUnderLoadLosesNoRequest) {
  Load load(server_->tls_port(), ca_);
  load.Start(/*fresh=*/2, /*keep_alive=*/2);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  int before_swap = load.ok();
  int held_before_swap = load.held_ok();

  volume_.Publish(dir_.File("b/tls.crt"), dir_.File("b/tls.key"));
  auto swapped = std::chrono::steady_clock::now();
  bool rotated = WaitForSerial(server_->tls_port(), ca_, serial_b_, std::chrono::seconds(15));
  double reload_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - swapped).count();
  std::this_thread::sleep_for(std::chrono::seconds(1));  // keep the load on the new pair
  int held_after_swap = load.held_ok() - held_before_swap;
  load.Stop();

  std::cout << "rotation under load: " << load.ok() << " requests ok (" << before_swap
            << " before the swap), " << load.failed() << " failed; new certificate served "
            << reload_seconds << " s after the swap\n";
  RecordProperty("requests_ok", load.ok());
  RecordProperty("requests_failed", load.failed());
  EXPECT_TRUE(rotated) << "new handshakes never saw the new certificate; last saw "
                       << HandshakeSerial(server_->tls_port(), ca_);
  EXPECT_EQ(load.failed(), 0) << load.errors();
  EXPECT_GE(load.ok(), 100) << "too little load to say anything";
  EXPECT_GT(load.ok(), before_swap) << "no request succeeded after the swap";
  // The connection opened before the swap was never dropped: it kept its old certificate and
  // went on serving requests after the new one was in use.
  EXPECT_EQ(load.held_serial_at_start(), serial_a_);
  EXPECT_EQ(load.held_serial_now(), serial_a_);
  EXPECT_GT(held_after_swap, 0);
  EXPECT_TRUE(WaitForLog(log_, "certificate reloaded", 1, std::chrono::seconds(1)));
}

TEST_F(TlsRotationTest, BrokenPairKeepsTheOldOneAndSaysWhy) {
  // A certificate whose key is another's, and a certificate file that is not PEM.
  std::ofstream(dir_.File("garbage.crt")) << "-----BEGIN CERTIFICATE-----\nnot base64\n";
  struct Case {
    const char* name;
    std::string cert;
    std::string key;
    const char* reason;  // in the log line
  };
  const std::vector<Case> cases = {
      {"key does not match the certificate", dir_.File("b/tls.crt"), dir_.File("a/tls.key"),
       "does not match"},
      {"certificate is not PEM", dir_.File("garbage.crt"), dir_.File("b/tls.key"),
       "no PEM certificate"},
  };
  Load load(server_->tls_port(), ca_);
  load.Start(/*fresh=*/2, /*keep_alive=*/1);
  size_t rejections = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    volume_.Publish(c.cert, c.key);
    ++rejections;
    EXPECT_TRUE(
        WaitForLog(log_, "certificate reload rejected", rejections, std::chrono::seconds(15)))
        << ReadFile(log_);
    EXPECT_NE(ReadFile(log_).find(c.reason), std::string::npos) << ReadFile(log_);
    EXPECT_EQ(HandshakeSerial(server_->tls_port(), ca_), serial_a_);
  }
  // A good pair after the broken ones is picked up.
  volume_.Publish(dir_.File("b/tls.crt"), dir_.File("b/tls.key"));
  EXPECT_TRUE(WaitForSerial(server_->tls_port(), ca_, serial_b_, std::chrono::seconds(15)));
  load.Stop();
  std::cout << "broken pairs under load: " << load.ok() << " requests ok, " << load.failed()
            << " failed\n";
  EXPECT_EQ(load.failed(), 0) << load.errors();
  EXPECT_GT(load.ok(), 0);
}

}  // namespace
