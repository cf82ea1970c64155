#include "socket_channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "errors.h"

namespace dcp {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

int ms_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
}

sockaddr_un make_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  DCP_CHECK(path.size() < sizeof(addr.sun_path), HarnessError,
            "socket path too long ({} bytes, limit {}): {}", path.size(), sizeof(addr.sun_path) - 1,
            path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

}  // namespace

void LineBuffer::append(std::string_view bytes) {
  if (consumed_ > 0 && consumed_ == data_.size()) {
    data_.clear();
    consumed_ = 0;
  }
  data_.append(bytes);
  DCP_CHECK(buffered_bytes() <= kMaxLineBytes || data_.find('\n', consumed_) != std::string::npos,
            HarnessError, "socket message longer than {} bytes without a newline", kMaxLineBytes);
}

std::optional<std::string> LineBuffer::next_line() {
  size_t end = data_.find('\n', consumed_);
  if (end == std::string::npos) {
    if (consumed_ > 0) {  // compact so the buffer does not grow without bound
      data_.erase(0, consumed_);
      consumed_ = 0;
    }
    return std::nullopt;
  }
  std::string line = data_.substr(consumed_, end - consumed_);
  consumed_ = end + 1;
  return line;
}

SocketChannel::SocketChannel(int fd) : fd_(fd) {}

SocketChannel SocketChannel::connect(const std::string& path, double timeout_s) {
  const sockaddr_un addr = make_address(path);
  const auto deadline = deadline_after(timeout_s);
  while (true) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    DCP_CHECK(fd >= 0, HarnessError, "socket(): {}", std::strerror(errno));
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
      return SocketChannel(fd);
    }
    int err = errno;
    ::close(fd);
    DCP_CHECK(Clock::now() < deadline, HarnessError, "cannot connect to {}: {}", path,
              std::strerror(err));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

SocketChannel::SocketChannel(SocketChannel&& other) noexcept { *this = std::move(other); }

SocketChannel& SocketChannel::operator=(SocketChannel&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    eof_ = other.eof_;
    in_ = std::move(other.in_);
  }
  return *this;
}

SocketChannel::~SocketChannel() { close(); }

void SocketChannel::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  eof_ = true;
}

void SocketChannel::send(const nlohmann::json& msg, double timeout_s) {
  std::string line = msg.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line.push_back('\n');
  const std::lock_guard<std::mutex> lock(send_mu_);
  const auto deadline = deadline_after(timeout_s);
  size_t sent = 0;
  while (sent < line.size()) {
    DCP_CHECK(fd_ >= 0, HarnessError, "send on a closed socket");
    ssize_t n = ::send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      DCP_THROW(HarnessError, "socket send failed: {}", std::strerror(errno));
    }
    DCP_CHECK(Clock::now() < deadline, HarnessError, "socket send timed out after {} s", timeout_s);
    pollfd p{fd_, POLLOUT, 0};
    poll(&p, 1, std::max(1, std::min(ms_until(deadline), 100)));
  }
}

bool SocketChannel::pump() {
  char buf[65536];
  while (fd_ >= 0 && !eof_) {
    ssize_t n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      in_.append(std::string_view(buf, static_cast<size_t>(n)));
      continue;
    }
    if (n == 0) {
      eof_ = true;
      break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    eof_ = true;  // ECONNRESET and friends: the peer is gone
  }
  return !eof_;
}

std::optional<nlohmann::json> SocketChannel::next() {
  auto line = in_.next_line();
  if (!line) return std::nullopt;
  nlohmann::json msg = nlohmann::json::parse(*line, nullptr, /*allow_exceptions=*/false);
  DCP_CHECK(msg.is_object(), HarnessError, "malformed socket message: {:.200}", *line);
  return msg;
}

std::optional<nlohmann::json> SocketChannel::receive(double timeout_s) {
  const auto deadline = deadline_after(timeout_s);
  while (true) {
    if (auto msg = next()) return msg;
    DCP_CHECK(!eof_, HarnessError, "the peer closed the connection");
    pollfd p{fd_, POLLIN, 0};
    int rc = poll(&p, 1, ms_until(deadline));
    if (rc < 0 && errno != EINTR) DCP_THROW(HarnessError, "poll: {}", std::strerror(errno));
    if (rc > 0) {
      pump();
      continue;
    }
    if (Clock::now() >= deadline) return std::nullopt;
  }
}

UnixListener::UnixListener(const std::string& path) : path_(path) {
  const sockaddr_un addr = make_address(path);
  fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  DCP_CHECK(fd_ >= 0, HarnessError, "socket(): {}", std::strerror(errno));
  if (bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd_, 256) != 0) {
    int err = errno;
    ::close(fd_);
    fd_ = -1;
    DCP_THROW(HarnessError, "cannot listen on {}: {}", path, std::strerror(err));
  }
}

UnixListener::~UnixListener() {
  if (fd_ >= 0) {
    ::close(fd_);
    unlink(path_.c_str());
  }
}

std::optional<SocketChannel> UnixListener::accept_now() {
  int fd = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return std::nullopt;
  return SocketChannel(fd);
}

std::string hex_encode(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

std::string hex_decode(std::string_view hex) {
  auto nibble = [&](char ch) -> int {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    DCP_THROW(HarnessError, "bad hex digit '{}' in a rendezvous payload", ch);
  };
  DCP_CHECK(hex.size() % 2 == 0, HarnessError, "odd-length hex payload ({} digits)", hex.size());
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<char>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  }
  return out;
}

}  // namespace dcp
