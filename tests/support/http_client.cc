// HttpGet; see http_client.h.
#include "support/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ddprun::testing {
namespace {

// The bytes of the answer until the server closes the connection or `deadline` passes.
std::string ReadAll(int fd, std::chrono::steady_clock::time_point deadline, std::string& error) {
  std::string data;
  char buffer[65536];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      error = "no complete answer in time";
      return data;
    }
    pollfd ready{fd, POLLIN, 0};
    if (::poll(&ready, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) {
      error = std::string("poll: ") + std::strerror(errno);
      return data;
    }
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n == 0) return data;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      error = std::string("read: ") + std::strerror(errno);
      return data;
    }
    data.append(buffer, static_cast<size_t>(n));
  }
}

void Parse(const std::string& data, HttpAnswer& answer) {
  const size_t head_end = data.find("\r\n\r\n");
  if (head_end == std::string::npos || data.rfind("HTTP/1.", 0) != 0) {
    answer.error = "not an HTTP answer: '" + data.substr(0, 200) + "'";
    return;
  }
  answer.status = std::atoi(data.c_str() + data.find(' ') + 1);
  size_t line = data.find("\r\n") + 2;
  while (line < head_end) {
    const size_t end = data.find("\r\n", line);
    const std::string header = data.substr(line, end - line);
    const size_t colon = header.find(':');
    if (colon != std::string::npos) {
      std::string name = header.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(), ::tolower);
      answer.headers[name] = header.substr(header.find_first_not_of(' ', colon + 1));
    }
    line = end + 2;
  }
  answer.body = data.substr(head_end + 4);
}

}  // namespace

HttpAnswer HttpGet(const std::string& host, int port, const std::string& path,
                   const std::map<std::string, std::string>& headers,
                   std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  HttpAnswer answer;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    answer.error = std::string("socket: ") + std::strerror(errno);
    return answer;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, host.c_str(), &address.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    answer.error = "connect to " + host + ":" + std::to_string(port) + ": " + std::strerror(errno);
    ::close(fd);
    return answer;
  }
  std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n";
  for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
  request += "\r\n";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    answer.error = std::string("send: ") + std::strerror(errno);
    ::close(fd);
    return answer;
  }
  const std::string data = ReadAll(fd, deadline, answer.error);
  ::close(fd);
  if (answer.error.empty()) Parse(data, answer);
  return answer;
}

}  // namespace ddprun::testing
