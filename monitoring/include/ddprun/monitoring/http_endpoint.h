// HttpEndpoint: the small HTTP/1.1 server operators reach a ddprun daemon or launcher through
// (/metrics, /healthz, /readyz, the live page): GET and HEAD of a fixed set of paths, each
// answered by a handler, over HTTP or, with a certificate, HTTPS. It serves on one thread of its
// own, so that a scrape never runs on, or waits for, the rendezvous's threads; handlers run there
// one at a time and must be quick (they read a snapshot).
//
// Access: with a token, every request must carry `Authorization: Bearer <token>` (Prometheus's
// `authorization` setting sends it), or Basic credentials whose password is the token (what a
// browser sends once its user has typed it at the prompt the 401 raises); without either, or with
// another token, the answer is 401 with one line that says what to send, and no handler runs.
// Tokens are compared in constant time.
//
// Bounds, whatever a client sends: a request's head at most 16 KiB and no body; a connection that
// sends nothing for 30 s is closed; at most 64 connections at once (more are closed when they
// are accepted).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "ddprun/base/status.h"

namespace ddprun {

struct HttpRequest {
  std::string method;  // "GET" or "HEAD"
  std::string path;    // the target up to any '?'
  std::string query;   // what follows the '?'; empty: none
  std::string accept;  // the Accept header
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpEndpointOptions {
  std::string bind_host = "127.0.0.1";        // "localhost" or a numeric IPv4 address
  int port = 0;                               // 0: a free port, read back with port()
  std::string token;                          // empty: no Authorization needed
  std::map<std::string, HttpHandler> routes;  // by exact path; others are 404
  // TLS, in PEM: with a certificate and its key, the endpoint speaks HTTPS only (TLS 1.2 or
  // later), as the rendezvous speaks TLS when it has a certificate.
  std::string tls_cert_pem;
  std::string tls_key_pem;
};

// The answer to `bytes`, one whole request as a client would send it: 400 when it is not one
// (malformed, a body, a head over 16 KiB), else what the endpoint answers. For the fuzz target
// of the endpoint's own parsing (the Authorization header, the target).
HttpResponse AnswerRawRequest(const HttpEndpointOptions& options, std::string_view bytes);

// The value of `name` in a query string ("job=a%2Fb&x=1" -> "a/b" for "job"), percent- and
// '+'-decoded; empty when absent.
std::string QueryParameter(std::string_view query, std::string_view name);

class HttpEndpoint {
 public:
  // Binds and starts serving. UNAVAILABLE naming the address when it cannot be bound;
  // INVALID_ARGUMENT when the TLS certificate or key is refused.
  static Result<std::unique_ptr<HttpEndpoint>> Start(HttpEndpointOptions options);

  // Stops serving: open connections are closed, the thread is joined.
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  int port() const { return port_; }

 private:
  struct Impl;
  HttpEndpoint() = default;

  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace ddprun
