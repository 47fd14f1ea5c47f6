// HttpEndpoint, over Boost.Beast's asynchronous HTTP (and HTTPS, on OpenSSL) on one io_context;
// see http_endpoint.h.
#include "ddprun/monitoring/http_endpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <optional>
#include <thread>

#include "ddprun/base/bound_socket.h"
#include "ddprun/base/secret_token.h"

namespace ddprun {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

constexpr size_t kMaxHeadBytes = 16 * 1024;
constexpr std::chrono::seconds kIdleTimeout{30};
constexpr size_t kMaxConnections = 64;

// Whether `authorization` starts with the scheme `scheme` and a space; its name is
// case-insensitive (RFC 9110, 11.1).
bool HasScheme(std::string_view authorization, std::string_view scheme) {
  if (authorization.size() <= scheme.size() || authorization[scheme.size()] != ' ') return false;
  for (size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) !=
        std::tolower(static_cast<unsigned char>(scheme[i]))) {
      return false;
    }
  }
  return true;
}

// Standard base64 (RFC 4648, 4), padding optional; nullopt for any other character.
std::optional<std::string> DecodeBase64(std::string_view text) {
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    int value;
    if (c >= 'A' && c <= 'Z') {
      value = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      value = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      value = c - '0' + 52;
    } else if (c == '+') {
      value = 62;
    } else if (c == '/') {
      value = 63;
    } else if (c == '=') {
      break;
    } else {
      return std::nullopt;
    }
    bits = (bits << 6) | static_cast<uint32_t>(value);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xff);
    }
  }
  return out;
}

// The token a request presents: `Bearer <token>` (Prometheus), or the password of
// `Basic base64(user:password)` (a browser's prompt, for the live page); empty for neither.
std::string PresentedToken(std::string_view authorization) {
  if (HasScheme(authorization, "Bearer")) return std::string(authorization.substr(7));
  if (!HasScheme(authorization, "Basic")) return {};
  const auto credentials = DecodeBase64(authorization.substr(6));
  if (!credentials) return {};
  const size_t colon = credentials->find(':');
  return colon == std::string::npos ? std::string() : credentials->substr(colon + 1);
}

HttpResponse PlainAnswer(int status, std::string body) {
  return HttpResponse{status, "text/plain; charset=utf-8", std::move(body)};
}

// What the endpoint answers `request` with: 401 without the token, 405 for other methods, 404
// for other paths, else the route's handler's answer.
HttpResponse Answer(const HttpEndpointOptions& options,
                    const http::request<http::empty_body>& request) {
  if (!options.token.empty()) {
    const auto authorization = request[http::field::authorization];
    const std::string presented =
        PresentedToken(std::string_view(authorization.data(), authorization.size()));
    if (presented.empty() || !SecretsEqual(presented, options.token)) {
      return PlainAnswer(401,
                         "401 Unauthorized: send the daemon's token as 'Authorization: Bearer "
                         "<token>' (or as the password of Basic credentials, any user name)\n");
    }
  }
  if (request.method() != http::verb::get && request.method() != http::verb::head) {
    return PlainAnswer(405, "405 Method Not Allowed: only GET and HEAD\n");
  }
  const std::string_view target(request.target().data(), request.target().size());
  HttpRequest parsed;
  parsed.method = std::string(request.method_string());
  const size_t question = target.find('?');
  parsed.path = std::string(target.substr(0, question));
  if (question != std::string_view::npos) parsed.query = std::string(target.substr(question + 1));
  const auto accept = request[http::field::accept];
  parsed.accept = std::string(accept.data(), accept.size());
  auto route = options.routes.find(parsed.path);
  if (route == options.routes.end()) {
    std::string known;
    for (const auto& [path, handler] : options.routes) known += (known.empty() ? "" : ", ") + path;
    return PlainAnswer(404,
                       "404 Not Found: " + parsed.path + "; this endpoint serves " + known + "\n");
  }
  return route->second(parsed);
}

// The endpoint's state, all of it used on its io thread but `options` and `tls`, set before it
// starts.
struct EndpointCore {
  HttpEndpointOptions options;
  std::optional<boost::asio::ssl::context> tls;  // with a certificate: HTTPS only
  size_t connections = 0;  // open now; the io thread's (declared before io, which outlives it)
  boost::asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::thread thread;

  void Accept();
};

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One client connection over `Stream` (beast::tcp_stream, or TlsStream after its handshake):
// reads requests one after another (keep-alive) and writes each answer.
template <class Stream>
class Connection : public std::enable_shared_from_this<Connection<Stream>> {
 public:
  Connection(Stream stream, EndpointCore& endpoint)
      : stream_(std::move(stream)), endpoint_(endpoint) {
    ++endpoint_.connections;
  }
  ~Connection() { --endpoint_.connections; }

  // Begins: the TLS handshake first where there is one, bounded as a request is.
  void Start() {
    if constexpr (std::is_same_v<Stream, TlsStream>) {
      beast::get_lowest_layer(stream_).expires_after(kIdleTimeout);
      stream_.async_handshake(boost::asio::ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code error) {
                                if (!error) self->Read();
                              });
    } else {
      Read();
    }
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->header_limit(kMaxHeadBytes);
    beast::get_lowest_layer(stream_).expires_after(kIdleTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = this->shared_from_this()](beast::error_code error, size_t) {
                       if (!error) self->Respond();
                     });
  }

  void Respond() {
    const auto& request = parser_->get();
    const HttpResponse answer = Answer(endpoint_.options, request);
    response_ = {};
    response_.version(request.version());
    response_.result(static_cast<unsigned>(answer.status));
    response_.set(http::field::server, "ddprun");
    response_.set(http::field::content_type, answer.content_type);
    response_.set(http::field::cache_control, "no-store");
    // The live page runs its own script and reads this origin only; nothing may frame it.
    response_.set("Content-Security-Policy",
                  "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'");
    response_.set("X-Content-Type-Options", "nosniff");
    if (answer.status == 401) {
      // A browser prompts for Basic credentials; a scraper sends its bearer token unasked.
      response_.set(http::field::www_authenticate,
                    "Bearer realm=\"ddprun\", Basic realm=\"ddprun\", charset=\"UTF-8\"");
    }
    response_.body() = answer.body;
    response_.keep_alive(request.keep_alive());
    response_.prepare_payload();
    if (request.method() == http::verb::head) response_.body().clear();  // keeps Content-Length
    http::async_write(stream_, response_,
                      [self = this->shared_from_this()](beast::error_code error, size_t) {
                        if (error || !self->response_.keep_alive()) {
                          self->Close();
                          return;
                        }
                        self->Read();
                      });
  }

  // Ends the connection: TLS's close_notify, or the socket's send side.
  void Close() {
    if constexpr (std::is_same_v<Stream, TlsStream>) {
      beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(5));
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) {});
    } else {
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    }
  }

  Stream stream_;
  EndpointCore& endpoint_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> parser_;
  http::response<http::string_body> response_;
};

void EndpointCore::Accept() {
  acceptor.async_accept([this](beast::error_code error, tcp::socket socket) {
    if (error == boost::asio::error::operation_aborted || !acceptor.is_open()) return;
    if (!error && connections < kMaxConnections) {
      if (tls) {
        std::make_shared<Connection<TlsStream>>(TlsStream(std::move(socket), *tls), *this)->Start();
      } else {
        std::make_shared<Connection<beast::tcp_stream>>(beast::tcp_stream(std::move(socket)), *this)
            ->Start();
      }
    }  // else the socket closes here
    Accept();
  });
}

// The TLS context of a certificate and key in PEM; INVALID_ARGUMENT saying which was refused.
Result<boost::asio::ssl::context> TlsContext(const std::string& cert_pem,
                                             const std::string& key_pem) {
  boost::asio::ssl::context context(boost::asio::ssl::context::tls_server);
  context.set_options(boost::asio::ssl::context::default_workarounds |
                      boost::asio::ssl::context::no_sslv2 | boost::asio::ssl::context::no_sslv3 |
                      boost::asio::ssl::context::no_tlsv1 | boost::asio::ssl::context::no_tlsv1_1);
  beast::error_code error;
  context.use_certificate_chain(boost::asio::buffer(cert_pem), error);
  if (error) return InvalidArgumentError("the HTTPS certificate: " + error.message());
  context.use_private_key(boost::asio::buffer(key_pem), boost::asio::ssl::context::pem, error);
  if (error) return InvalidArgumentError("the HTTPS certificate's key: " + error.message());
  return context;
}

}  // namespace

HttpResponse AnswerRawRequest(const HttpEndpointOptions& options, std::string_view bytes) {
  http::request_parser<http::empty_body> parser;
  parser.header_limit(kMaxHeadBytes);
  parser.eager(true);
  beast::error_code error;
  const size_t used = parser.put(boost::asio::buffer(bytes.data(), bytes.size()), error);
  if (error || used > bytes.size() || !parser.is_done()) {
    return PlainAnswer(400, "400 Bad Request\n");
  }
  return Answer(options, parser.get());
}

std::string QueryParameter(std::string_view query, std::string_view name) {
  size_t at = 0;
  while (at <= query.size()) {
    const size_t end = std::min(query.find('&', at), query.size());
    const std::string_view pair = query.substr(at, end - at);
    if (pair.size() > name.size() && pair.substr(0, name.size()) == name &&
        pair[name.size()] == '=') {
      std::string value;
      const auto hex = [&](size_t j) {
        return std::isxdigit(static_cast<unsigned char>(pair[j])) != 0;
      };
      for (size_t i = name.size() + 1; i < pair.size(); ++i) {
        if (pair[i] == '%' && i + 2 < pair.size() && hex(i + 1) && hex(i + 2)) {
          value += static_cast<char>(std::stoi(std::string(pair.substr(i + 1, 2)), nullptr, 16));
          i += 2;
        } else {
          value += pair[i] == '+' ? ' ' : pair[i];
        }
      }
      return value;
    }
    at = end + 1;
  }
  return "";
}

struct HttpEndpoint::Impl {
  EndpointCore core;
};

Result<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Start(HttpEndpointOptions options) {
  auto bound = BoundSocket::Bind(options.bind_host, options.port);
  if (!bound.ok()) return bound.status();
  if (Status listening = bound->Listen(); !listening.ok()) return listening;
  // Asio takes a descriptor of its own; the BoundSocket closes the original.
  const int fd = ::fcntl(bound->fd(), F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return ErrnoError("taking the HTTP endpoint's socket", errno);
  std::unique_ptr<HttpEndpoint> endpoint(new HttpEndpoint());
  endpoint->port_ = bound->port();
  endpoint->impl_ = std::make_unique<Impl>();
  EndpointCore& impl = endpoint->impl_->core;
  if (!options.tls_cert_pem.empty() || !options.tls_key_pem.empty()) {
    auto tls = TlsContext(options.tls_cert_pem, options.tls_key_pem);
    if (!tls.ok()) return tls.status();
    impl.tls.emplace(std::move(tls).value());
  }
  impl.options = std::move(options);
  beast::error_code error;
  impl.acceptor.assign(tcp::v4(), fd, error);
  if (error) {
    ::close(fd);
    return UnavailableError("serving HTTP on " + impl.options.bind_host + ": " + error.message());
  }
  impl.Accept();
  impl.thread = std::thread([&impl] { impl.io.run(); });
  return endpoint;
}

HttpEndpoint::~HttpEndpoint() {
  if (!impl_) return;
  impl_->core.io.stop();
  if (impl_->core.thread.joinable()) impl_->core.thread.join();
}

}  // namespace ddprun
