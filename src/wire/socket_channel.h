// JSON messages over a local Unix stream socket, one object per `\n`-terminated
// line (DESIGN.md "Processes"). Every blocking operation takes a timeout, so
// neither the supervisor nor a worker can wait forever on the other.
#pragma once

#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace dcp {

// Splits a byte stream into lines. Pure, so framing is testable without sockets.
class LineBuffer {
 public:
  static constexpr size_t kMaxLineBytes = size_t{64} << 20;
  void append(std::string_view bytes);     // throws HarnessError past kMaxLineBytes unterminated
  std::optional<std::string> next_line();  // without the '\n'
  size_t buffered_bytes() const { return data_.size() - consumed_; }

 private:
  std::string data_;
  size_t consumed_ = 0;
};

class SocketChannel {
 public:
  explicit SocketChannel(int fd);  // takes ownership of a connected stream socket
  // Retries until timeout_s: the listener exists before any worker starts, but
  // connect() can fail transiently (EAGAIN while the backlog is full).
  static SocketChannel connect(const std::string& path, double timeout_s);
  SocketChannel(SocketChannel&& other) noexcept;
  SocketChannel& operator=(SocketChannel&& other) noexcept;
  SocketChannel(const SocketChannel&) = delete;
  SocketChannel& operator=(const SocketChannel&) = delete;
  ~SocketChannel();

  int fd() const { return fd_; }
  bool eof() const { return eof_; }
  void close();

  // Writes one message; throws HarnessError when the peer is gone or the
  // socket stays full for timeout_s. Never raises SIGPIPE. Safe to call from
  // several threads at once (lines never interleave); reading is not.
  void send(const nlohmann::json& msg, double timeout_s = 10);
  // Reads whatever is available now without blocking; returns false once the
  // peer has closed the connection (buffered messages stay readable).
  bool pump();
  // The next complete buffered message, if any. Throws HarnessError on a line
  // that is not a JSON object.
  std::optional<nlohmann::json> next();
  // Waits up to timeout_s for one message; nullopt on timeout. Throws
  // HarnessError when the peer closed the connection.
  std::optional<nlohmann::json> receive(double timeout_s);

 private:
  int fd_ = -1;
  bool eof_ = false;
  LineBuffer in_;
  std::mutex send_mu_;  // not moved: each object has its own
};

// A listening Unix socket; the destructor closes it and unlinks the path.
class UnixListener {
 public:
  explicit UnixListener(const std::string& path);
  UnixListener(const UnixListener&) = delete;
  UnixListener& operator=(const UnixListener&) = delete;
  ~UnixListener();
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // Accepts one pending connection without blocking (poll fd() first).
  std::optional<SocketChannel> accept_now();

 private:
  int fd_ = -1;
  std::string path_;
};

// Rendezvous payloads are binary; JSON strings carry them hex-encoded.
std::string hex_encode(std::string_view bytes);
std::string hex_decode(std::string_view hex);  // throws HarnessError on bad input

}  // namespace dcp
