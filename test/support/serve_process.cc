#include "test/support/serve_process.h"

#include <fcntl.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace testing_support {

const char kDemoMigFilterRequest[] =
    R"({"Pod":{"metadata":{"name":"llm-b","namespace":"acme","uid":"hostile-1"},)"
    R"("spec":{"containers":[{"name":"server","resources":{"limits":{"nvidia.com/mig-3g.40gb":"1"},)"
    R"("requests":{"nvidia.com/mig-3g.40gb":"1"}}}]},"status":{"phase":"Pending"}},)"
    R"("Nodes":null,"NodeNames":["mig-a","mig-b","mig-c","mig-1g","ts-a","excl-a","cpu-a"]})";

TempDir::TempDir() {
  char templ[] = "/tmp/gpu-tenancy-test-XXXXXX";
  char* made = mkdtemp(templ);
  path_ = made ? made : "/tmp";
}

TempDir::~TempDir() {
  std::error_code ec;
  if (path_ != "/tmp") std::filesystem::remove_all(path_, ec);
}

absl::Status MakeTestCerts(const std::string& dir) {
  std::string script = absl::StrCat(
      "set -e; cd '", dir, "';",
      "openssl ecparam -name prime256v1 -genkey -noout -out ca.key 2>/dev/null;",
      "openssl req -x509 -new -key ca.key -sha256 -days 2 -subj '/CN=gpu-tenancy test CA' "
      "-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign "
      "-out ca.crt 2>/dev/null;",
      "for who in tls client; do ",
      "openssl ecparam -name prime256v1 -genkey -noout -out $who.key 2>/dev/null;",
      "openssl req -new -key $who.key -subj \"/CN=$who\" -out $who.csr 2>/dev/null;",
      "printf "
      "'subjectAltName=DNS:localhost,IP:127.0.0.1\\nextendedKeyUsage=serverAuth,clientAuth\\n' "
      "> $who.ext;",
      "openssl x509 -req -in $who.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -sha256 "
      "-extfile $who.ext -out $who.crt 2>/dev/null; done");
  std::string script_path = dir + "/make-certs.sh";
  std::ofstream(script_path) << script << "\n";
  int rc = std::system(absl::StrCat("bash '", script_path, "'").c_str());
  if (rc != 0) return absl::InternalError("openssl failed to make test certificates");
  return absl::OkStatus();
}

std::string ReadTestData(const std::string& relative_path) {
  std::ifstream in(std::string(GT_TESTDATA_DIR) + "/" + relative_path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string ReadSource(const std::string& relative_path) {
  std::ifstream in(std::string(GT_SOURCE_DIR) + "/" + relative_path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

absl::StatusOr<std::unique_ptr<ServeProcess>> ServeProcess::Start(std::vector<std::string> args,
                                                                  const std::string& stderr_file) {
  signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<ServeProcess> p(new ServeProcess());
  absl::Status certs = MakeTestCerts(p->certs_.path());
  if (!certs.ok()) return certs;
  bool has_cert = false;
  for (const std::string& a : args) has_cert |= a == "--tls-cert";
  std::vector<std::string> argv = {GT_BINARY, "serve"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto has = [&](const std::string& flag) {
    for (const std::string& a : args) {
      if (a == flag) return true;
    }
    return false;
  };
  if (!has("--listen")) argv.insert(argv.end(), {"--listen", "127.0.0.1:0"});
  if (!has("--metrics-listen")) argv.insert(argv.end(), {"--metrics-listen", "127.0.0.1:0"});
  if (!has_cert) {
    argv.insert(argv.end(),
                {"--tls-cert", p->certs_.File("tls.crt"), "--tls-key", p->certs_.File("tls.key")});
  }
  int out_pipe[2];
  if (pipe(out_pipe) != 0) return absl::InternalError("pipe failed");
  pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    close(out_pipe[0]);
    close(out_pipe[1]);
    int devnull = open("/dev/null", O_WRONLY);
    if (!stderr_file.empty()) {
      int log = open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      dup2(log >= 0 ? log : devnull, STDERR_FILENO);
    } else if (std::getenv("GT_SERVER_LOGS") == nullptr) {
      dup2(devnull, STDERR_FILENO);
    }
    // Default signal dispositions, as in a container: a test binary (or the shell that ran
    // it) that ignores SIGPIPE must not hide a server that would die of it.
    signal(SIGPIPE, SIG_DFL);
    std::vector<char*> cargs;
    for (std::string& a : argv) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    execv(cargs[0], cargs.data());
    _exit(127);
  }
  close(out_pipe[1]);
  p->pid_ = pid;
  p->stdout_fd_ = out_pipe[0];
  // Read until the ready line, for at most 15 s.
  std::string seen;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd pfd{p->stdout_fd_, POLLIN, 0};
    if (poll(&pfd, 1, 200) <= 0) continue;
    char buf[512];
    ssize_t n = read(p->stdout_fd_, buf, sizeof(buf));
    if (n <= 0) break;
    seen.append(buf, static_cast<size_t>(n));
    size_t at = seen.find("ready tls_port=");
    size_t eol = at == std::string::npos ? std::string::npos : seen.find('\n', at);
    if (eol != std::string::npos) {
      std::string line = seen.substr(at, eol - at);
      size_t m = line.find(" metrics_port=");
      if (!absl::SimpleAtoi(line.substr(15, m - 15), &p->tls_port_) ||
          !absl::SimpleAtoi(line.substr(m + 14), &p->metrics_port_)) {
        return absl::InternalError("unreadable ready line: " + line);
      }
      p->client_ = std::make_unique<httplib::SSLClient>("127.0.0.1", p->tls_port_);
      p->client_->set_ca_cert_path(p->certs_.File("ca.crt").c_str());
      p->client_->enable_server_certificate_verification(true);
      p->client_->set_keep_alive(true);
      // As kube-scheduler's and kube-apiserver's Go clients: without it, Nagle holds a POST's
      // body until the server's delayed ACK of its headers, about 40 ms a request.
      p->client_->set_tcp_nodelay(true);
      p->client_->set_read_timeout(10, 0);
      return p;
    }
  }
  return absl::InternalError("server did not become ready; stdout: " + seen);
}

ServeProcess::~ServeProcess() {
  if (pid_ > 0) Terminate();
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

int ServeProcess::Terminate() {
  if (pid_ <= 0) return -1;
  client_.reset();
  kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 200; ++i) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return status;
    }
    usleep(50 * 1000);
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

int ServeProcess::WaitForExit(int timeout_millis) {
  if (pid_ <= 0) return -1;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_millis);
  do {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return status;
    }
    usleep(10 * 1000);
  } while (std::chrono::steady_clock::now() < deadline);
  return -1;
}

ServeProcess::Response ServeProcess::Post(const std::string& path, const std::string& body,
                                          const std::string& content_type) {
  Response out;
  httplib::Result r = client_->Post(path.c_str(), body, content_type.c_str());
  if (!r && r.error() == httplib::Error::Write) {
    // The keep-alive connection went stale: the server closed it after its idle timeout (5 s)
    // and this httplib reuses it anyway, so the request could not be sent. Go's net/http,
    // which kube-scheduler and kube-apiserver use, retries an unsent request once on a fresh
    // connection; so do we.
    r = client_->Post(path.c_str(), body, content_type.c_str());
  }
  if (!r) return out;
  out.status = r->status;
  out.body = r->body;
  out.content_type = r->get_header_value("Content-Type");
  return out;
}

ServeProcess::Response ServeProcess::Get(const std::string& path) {
  Response out;
  httplib::Client plain("127.0.0.1", metrics_port_);
  httplib::Result r = plain.Get(path.c_str());
  if (!r) return out;
  out.status = r->status;
  out.body = r->body;
  out.content_type = r->get_header_value("Content-Type");
  return out;
}

std::string PromtoolProblems(const std::string& exposition) {
  TempDir dir;
  std::string file = dir.File("metrics.txt"), report = dir.File("promtool.out");
  std::ofstream(file) << exposition;
  int rc = std::system(("promtool check metrics < " + file + " > " + report + " 2>&1").c_str());
  if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0) return "";
  std::ifstream in(report);
  std::ostringstream out;
  out << "promtool check metrics failed (status " << rc << "):\n" << in.rdbuf();
  return out.str();
}

std::optional<double> SampleValue(const std::string& exposition, const std::string& series) {
  for (size_t at = exposition.find(series); at != std::string::npos;
       at = exposition.find(series, at + 1)) {
    bool line_start = at == 0 || exposition[at - 1] == '\n';
    size_t value_at = at + series.size();
    if (!line_start || value_at >= exposition.size() || exposition[value_at] != ' ') continue;
    size_t end = exposition.find('\n', value_at);
    double v = 0;
    if (absl::SimpleAtod(exposition.substr(value_at + 1, end - value_at - 1), &v)) return v;
  }
  return std::nullopt;
}

rapidjson::Document ParseOrDie(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse(text.c_str(), text.size());
  EXPECT_FALSE(doc.HasParseError()) << "not JSON: " << text.substr(0, 300);
  return doc;
}

}  // namespace testing_support
