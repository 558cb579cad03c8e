// Loopback servers for the actions tests: the Python ones in test_servers.py, started as child
// processes, and a listener that never answers (for timeouts).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "actions/test_util.h"

namespace trainscope::testing {

// A test_servers.py server. port() is 0 when it failed to start (the test then fails with a
// message saying what to install).
class PyServer {
 public:
  explicit PyServer(std::vector<std::string> args) {
    std::vector<std::string> argv = {TestPython(), "-u", TestServersScript()};
    argv.insert(argv.end(), args.begin(), args.end());
    child_ = std::make_unique<Child>(argv);
    if (!child_->started()) return;
    auto line = child_->ReadLine(std::chrono::seconds(20));
    if (line && line->rfind("PORT ", 0) == 0) port_ = std::stoi(line->substr(5));
  }
  int port() const { return port_; }
  std::string url(const std::string& path = "/") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  // The next recorded request or message, as JSON; null JSON after `timeout`.
  nlohmann::json Next(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    auto line = child_->ReadLine(timeout);
    if (!line) return nullptr;
    return nlohmann::json::parse(*line, nullptr, false);
  }

  static std::string Help() {
    return "could not start " + TestServersScript() + " with " + TestPython() +
           "; it needs Python with aiosmtpd and prometheus_client (pip install aiosmtpd "
           "prometheus_client), chosen with TRAINSCOPE_PYTHON";
  }

 private:
  std::unique_ptr<Child> child_;
  int port_ = 0;
};

// A TCP listener on 127.0.0.1 that accepts connections into its backlog and never answers.
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(fd_, 16) != 0) {
      return;
    }
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~SilentListener() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A loopback port with nothing listening on it (connections are refused).
inline int RefusedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace trainscope::testing
