#include "server/request_deadline.h"

#include <sys/socket.h>

#include "common/log.h"

namespace server {

RequestDeadlines::RequestDeadlines(std::chrono::milliseconds budget, std::chrono::milliseconds idle)
    : budget_(budget), idle_(idle), thread_([this] { Run(); }) {}

RequestDeadlines::~RequestDeadlines() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

int RequestDeadlines::ExIndex() {
  // One index for the process; its free callback runs for every SSL object freed.
  static const int index =
      SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, &RequestDeadlines::OnFree);
  return index;
}

void RequestDeadlines::Attach(SSL_CTX& ctx) {
  ExIndex();
  // The SSL_CTX carries which watchdog its connections belong to.
  SSL_CTX_set_app_data(&ctx, this);
  SSL_CTX_set_info_callback(&ctx, &RequestDeadlines::OnInfo);
}

void RequestDeadlines::OnInfo(const SSL* ssl, int where, int /*ret*/) {
  if (!(where & (SSL_CB_HANDSHAKE_START | SSL_CB_ACCEPT_LOOP))) return;
  auto* self = static_cast<RequestDeadlines*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  if (self && !SSL_get_ex_data(ssl, ExIndex())) self->Register(ssl);
}

void RequestDeadlines::OnFree(void* parent, void* ptr, CRYPTO_EX_DATA* /*ad*/, int /*index*/,
                              long /*argl*/, void* /*argp*/) {
  // `ptr` is the watchdog Register stored (null for connections it never saw); `parent` is the
  // SSL object being freed, the key it was filed under.
  if (ptr) static_cast<RequestDeadlines*>(ptr)->Forget(static_cast<const SSL*>(parent));
}

void RequestDeadlines::Register(const SSL* ssl) {
  std::lock_guard<std::mutex> lock(mu_);
  SSL_set_ex_data(const_cast<SSL*>(ssl), ExIndex(), this);
  connections_[ssl] = Entry{SSL_get_fd(ssl), Clock::now() + budget_};
}

void RequestDeadlines::Forget(const SSL* ssl) {
  std::lock_guard<std::mutex> lock(mu_);
  connections_.erase(ssl);
}

void RequestDeadlines::Disarm(const SSL* ssl) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = connections_.find(ssl); it != connections_.end()) {
    it->second.deadline = Clock::time_point::max();
  }
}

void RequestDeadlines::Rearm(const SSL* ssl) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = connections_.find(ssl); it != connections_.end()) {
    it->second.deadline = Clock::now() + idle_ + budget_;
  }
}

void RequestDeadlines::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    wake_.wait_for(lock, std::chrono::milliseconds(200));
    const Clock::time_point now = Clock::now();
    for (auto& [ssl, entry] : connections_) {
      if (entry.deadline > now) continue;
      // Under the lock, so SSL_free (and the close after it) waits until this returns.
      ::shutdown(entry.fd, SHUT_RDWR);
      entry.deadline = Clock::time_point::max();
      ++expired_;
      common::Log(common::LogLevel::kInfo, "request deadline passed; connection shut down");
    }
  }
}

}  // namespace server
