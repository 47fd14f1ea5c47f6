// HttpGet: one HTTP/1.1 GET over a real TCP connection, as a scraper or a probe sends it, for
// the tests of the operators' endpoint (monitoring/http_endpoint.h). Plain sockets, so that the
// tests do not share the server's HTTP code.
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace ddprun::testing {

struct HttpAnswer {
  int status = 0;                              // 0: no answer (the error says why)
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  std::string error;
};

// GET `path` from host:port with `headers` ("Authorization" -> "Bearer ..."), the connection
// closed after the answer. Gives up after `timeout`.
HttpAnswer HttpGet(const std::string& host, int port, const std::string& path,
                   const std::map<std::string, std::string>& headers = {},
                   std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace ddprun::testing
