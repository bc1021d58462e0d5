// A server-side TLS connection over a non-blocking TCP socket, as a Beast/Asio stream
// (async_read_some, async_write_some) plus an async handshake. OpenSSL reads and writes the
// socket itself and does all of TLS; this only waits for the socket when OpenSSL says it wants
// to read or write, and retries.
//
// Why not asio::ssl::stream: it moves every byte through a BIO pair and keeps four 17 KiB
// buffers per connection from its first byte to its close, so an idle keep-alive connection
// held about 74 KiB (measured with 1,000 of them). Here OpenSSL owns the socket, and with
// SSL_MODE_RELEASE_BUFFERS an idle connection keeps no record buffers at all, which is what
// lets the listener hold tens of thousands of connections inside a pod's memory limit.
//
// Used from one thread (the listener's loop). Every operation completes through the socket's
// executor, never inside the call that started it.
#ifndef GPU_TENANCY_SERVER_TLS_SOCKET_H_
#define GPU_TENANCY_SERVER_TLS_SOCKET_H_

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

namespace server {

class TlsSocket {
 public:
  using executor_type = boost::asio::ip::tcp::socket::executor_type;
  using ErrorCode = boost::system::error_code;

  // Takes a connected socket; `ctx` must outlive this object.
  TlsSocket(boost::asio::ip::tcp::socket socket, SSL_CTX* ctx)
      : socket_(std::move(socket)), ssl_(SSL_new(ctx)) {
    ErrorCode ignored;
    socket_.native_non_blocking(true, ignored);
    SSL_set_fd(ssl_, socket_.native_handle());
    SSL_set_accept_state(ssl_);
    SSL_set_mode(ssl_, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
                           SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  }
  ~TlsSocket() { SSL_free(ssl_); }  // the socket closes after, as a member
  TlsSocket(const TlsSocket&) = delete;
  TlsSocket& operator=(const TlsSocket&) = delete;

  executor_type get_executor() { return socket_.get_executor(); }
  boost::asio::ip::tcp::socket& socket() { return socket_; }
  // Decrypted or undecrypted bytes OpenSSL holds that the socket will not signal again.
  bool HasPending() const { return SSL_has_pending(ssl_) == 1; }

  template <typename Token>
  auto async_handshake(Token&& token) {
    return Start<void(ErrorCode, size_t)>([](SSL* ssl) { return SSL_do_handshake(ssl); },
                                          std::forward<Token>(token));
  }

  template <typename MutableBuffers, typename Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    boost::asio::mutable_buffer first = FirstNonEmpty(buffers);
    return Start<void(ErrorCode, size_t)>(
        [first](SSL* ssl) {
          if (first.size() == 0) return kEmptyBuffer;
          return SSL_read(ssl, first.data(),
                          static_cast<int>(std::min<size_t>(first.size(), INT_MAX)));
        },
        std::forward<Token>(token));
  }

  // Writes up to one TLS record: small pieces of a sequence (a reply's head and body) are
  // gathered first, so they leave in one record and one packet.
  template <typename ConstBuffers, typename Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    constexpr size_t kRecord = 16 * 1024;
    boost::asio::const_buffer first = FirstNonEmpty(buffers);
    std::vector<char> gathered;
    if (first.size() < kRecord && boost::asio::buffer_size(buffers) > first.size()) {
      gathered.resize(std::min(kRecord, boost::asio::buffer_size(buffers)));
      boost::asio::buffer_copy(boost::asio::buffer(gathered), buffers);
    }
    return Start<void(ErrorCode, size_t)>(
        [first, gathered = std::move(gathered)](SSL* ssl) {
          const void* data = gathered.empty() ? first.data() : gathered.data();
          size_t size = gathered.empty() ? first.size() : gathered.size();
          if (size == 0) return kEmptyBuffer;
          return SSL_write(ssl, data, static_cast<int>(std::min<size_t>(size, INT_MAX)));
        },
        std::forward<Token>(token));
  }

  // One non-blocking attempt at close_notify; the caller closes the socket either way.
  void SendCloseNotify() {
    ERR_clear_error();
    (void)SSL_shutdown(ssl_);
    ERR_clear_error();
  }

 private:
  // What a read or write call returns when handed no bytes: it completes at once with 0 bytes
  // and no error, as a socket would (OpenSSL has no meaning for a zero-length SSL_read).
  static constexpr int kEmptyBuffer = INT_MIN;

  template <typename Buffers>
  static auto FirstNonEmpty(const Buffers& buffers) {
    auto it = boost::asio::buffer_sequence_begin(buffers);
    auto end = boost::asio::buffer_sequence_end(buffers);
    using Buffer = std::decay_t<decltype(*it)>;
    for (; it != end; ++it) {
      if (Buffer(*it).size() > 0) return Buffer(*it);
    }
    return Buffer();
  }

  // Calls `call` (an SSL_* function returning > 0 on progress) until it makes progress or
  // fails, waiting for the socket whenever OpenSSL wants it.
  template <typename Call>
  struct Op {
    TlsSocket* stream;
    Call call;
    bool waited = false;

    template <typename Self>
    void operator()(Self& self, ErrorCode ec = {}) {
      if (ec) return Finish(self, ec, 0);  // the socket was closed under the wait
      // Closed after the wait had already completed and queued this: the descriptor number may
      // be a connection accepted since, which OpenSSL must neither read nor write.
      if (!stream->socket_.is_open()) {
        return Finish(self, boost::asio::error::operation_aborted, 0);
      }
      ERR_clear_error();
      errno = 0;
      int n = call(stream->ssl_);
      if (n == kEmptyBuffer) return Finish(self, {}, 0);
      if (n > 0) return Finish(self, {}, static_cast<size_t>(n));
      switch (SSL_get_error(stream->ssl_, n)) {
        case SSL_ERROR_WANT_READ:
          waited = true;
          stream->socket_.async_wait(boost::asio::ip::tcp::socket::wait_read, std::move(self));
          return;
        case SSL_ERROR_WANT_WRITE:
          waited = true;
          stream->socket_.async_wait(boost::asio::ip::tcp::socket::wait_write, std::move(self));
          return;
        case SSL_ERROR_ZERO_RETURN:  // close_notify
          return Finish(self, boost::asio::error::eof, 0);
        case SSL_ERROR_SYSCALL: {
          int error = errno;
          ERR_clear_error();
          // errno 0: the peer closed the TCP connection without close_notify.
          return Finish(self,
                        error ? ErrorCode(error, boost::system::system_category())
                              : ErrorCode(boost::asio::error::eof),
                        0);
        }
        default:  // a TLS protocol error, or nothing to read into
          ERR_clear_error();
          return Finish(self, ErrorCode(EPROTO, boost::system::system_category()), 0);
      }
    }

    template <typename Self>
    void Finish(Self& self, ErrorCode ec, size_t n) {
      if (waited) return self.complete(ec, n);
      boost::asio::post(stream->socket_.get_executor(),
                        [self = std::move(self), ec, n]() mutable { self.complete(ec, n); });
    }
  };

  template <typename Signature, typename Call, typename Token>
  auto Start(Call call, Token&& token) {
    return boost::asio::async_compose<Token, Signature>(Op<Call>{this, std::move(call)}, token,
                                                        socket_);
  }

  boost::asio::ip::tcp::socket socket_;
  SSL* ssl_;
};

}  // namespace server

#endif  // GPU_TENANCY_SERVER_TLS_SOCKET_H_
