// The operators' HTTP endpoint's own parsing (monitoring/http_endpoint.h), whatever a client
// sends: the bytes as one request, parsed as the endpoint parses it (Beast's parser, the head's
// bound), then its Authorization header (Bearer, or Basic in base64) checked against a token,
// its target split into path and query, and the query's `job` decoded. Every answer is one of
// the endpoint's codes; a handler runs only for a request that carried credentials; a decoded
// value is never longer than the query it came from.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "ddprun/monitoring/http_endpoint.h"
#include "fuzz_support.h"

namespace {

ddprun::HttpEndpointOptions* options = nullptr;
bool handled = false;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ddprun::fuzz::PrepareProcess();
  options = new ddprun::HttpEndpointOptions();
  options->token = "fuzz-token";
  options->routes["/metrics"] = [](const ddprun::HttpRequest& request) {
    handled = true;
    const std::string job = ddprun::QueryParameter(request.query, "job");
    if (job.size() > request.query.size()) {
      std::fprintf(stderr, "fuzz: a query value longer than its query\n");
      std::abort();
    }
    return ddprun::HttpResponse{200, "text/plain", job};
  };
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = ddprun::fuzz::AsText(data, size);
  handled = false;
  const ddprun::HttpResponse answer = ddprun::AnswerRawRequest(*options, bytes);
  static const std::set<int> kCodes = {200, 400, 401, 404, 405};
  if (!kCodes.contains(answer.status)) {
    std::fprintf(stderr, "fuzz: an answer the endpoint never gives: %d\n", answer.status);
    std::abort();
  }
  std::string lower(bytes);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (handled && lower.find("authorization") == std::string::npos) {  // names ignore case
    std::fprintf(stderr, "fuzz: a handler ran for a request without credentials\n");
    std::abort();
  }
  return 0;
}
