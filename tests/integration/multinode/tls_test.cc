// TLS between agents, workers and the rendezvous daemon, with certificates made for the test by
// the openssl command. Skipped, with the reason, where openssl is missing.
#include <unistd.h>

#include "multinode_support.h"
#include "support/http_client.h"
#include "support/skip.h"
#include "support/test_paths.h"

using namespace ddprun;
using namespace ddprun::testing;

namespace {

constexpr const char* kOpenssl = "/usr/bin/openssl";
const std::string kTrainExample = paths::kTrainExample;

// A self-signed certificate for 127.0.0.1 (it is its own CA) in `dir`: cert.pem and key.pem.
bool MakeCertificate(const ScratchDir& dir) {
  auto result = Run({kOpenssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                     dir / "key.pem", "-out", dir / "cert.pem", "-days", "1", "-subj",
                     "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"},
                    {}, 60s);
  INFO(result.err);
  return result.code() == 0;
}

}  // namespace

TEST_CASE("with TLS, agents and their workers' store reach the daemon only through its CA") {
  if (::access(kOpenssl, X_OK) != 0) return SkipTest(std::string(kOpenssl) + " is missing");
  ScratchDir dir;
  REQUIRE(MakeCertificate(dir));
  WriteFile(dir / "token", "tls-token\n");
  Daemon daemon({"--tls-cert=" + (dir / "cert.pem"), "--tls-key=" + (dir / "key.pem"),
                 "--token-file=" + (dir / "token")});
  // join_timeout also bounds how long an agent tries to reach the server: long for the agents
  // that must get through (slow under sanitizers), short for the one that must not.
  auto flags = [&](std::vector<std::string> more, const std::string& join_timeout = "60") {
    std::vector<std::string> args = {"--nnodes=2",
                                     "--nproc_per_node=2",
                                     "--rdzv_endpoint=" + daemon.endpoint(),
                                     "--rdzv_id=tls",
                                     "--token-file=" + (dir / "token"),
                                     "--rdzv_conf=join_timeout=" + join_timeout};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int i = 0; i < 2; ++i) {
    auto args = flags({"--tls-ca=" + (dir / "cert.pem"), kTestWorker, "store"});
    agents.push_back(StartAgent(args));
  }
  for (auto& agent : agents) {
    CHECK(ExitCode(*agent) == 0);
    INFO(agent->stdout_text() << agent->stderr_text());
    CHECK(Count(agent->stdout_text(), "FAILED") == 0);
    CHECK(Count(agent->stdout_text(), "ok barrier") == 2);
  }
  auto status = RunStatus({"--rdzv_endpoint=" + daemon.endpoint(), "--tls-ca=" + (dir / "cert.pem"),
                           "--token-file=" + (dir / "token")});
  CHECK(status.code() == 0);
  CHECK(Count(status.out, "job tls: complete") == 1);
  // Plain text to a TLS server never gets through: the agent gives up after join_timeout.
  auto plain = StartAgent(flags({kTestWorker, "env"}, "3"));
  CHECK(ExitCode(*plain) == 1);
  INFO(plain->stderr_text());
  CHECK(Count(plain->stderr_text(), "cannot reach the rendezvous server") == 1);
  CHECK(Count(plain->stdout_text(), "RANK=") == 0);
}

TEST_CASE(
    "the C++ trainer trains under a daemon that speaks only TLS, with and without client "
    "certificates") {
  if (::access(kOpenssl, X_OK) != 0) return SkipTest(std::string(kOpenssl) + " is missing");
  ScratchDir dir;
  REQUIRE(MakeCertificate(dir));
  WriteFile(dir / "token", "tls-token\n");
  const std::string cert = dir / "cert.pem";
  const std::string key = dir / "key.pem";
  for (const bool mutual : {false, true}) {
    DYNAMIC_SECTION((mutual ? "mutual TLS" : "server TLS")) {
      // With --tls-ca the daemon requires client certificates signed by that CA; the
      // self-signed certificate is its own CA, so it serves as the client's too.
      std::vector<std::string> daemon_args = {"--tls-cert=" + cert, "--tls-key=" + key,
                                              "--token-file=" + (dir / "token")};
      if (mutual) daemon_args.push_back("--tls-ca=" + cert);
      Daemon daemon(daemon_args);
      std::vector<std::string> args = {"--nnodes=1",
                                       "--nproc_per_node=2",
                                       "--rdzv_endpoint=" + daemon.endpoint(),
                                       "--rdzv_id=tls-train",
                                       "--token-file=" + (dir / "token"),
                                       "--tls-ca=" + cert};
      if (mutual) args.insert(args.end(), {"--tls-cert=" + cert, "--tls-key=" + key});
      args.insert(args.end(), {kTrainExample, "--epochs", "1", "--samples", "256"});
      auto agent = StartAgent(args);
      const int code = ExitCode(*agent);
      INFO(agent->stdout_text() << agent->stderr_text());
      CHECK(code == 0);
      CHECK(Count(agent->stdout_text(), "held-out loss") >= 1);
    }
  }
}

TEST_CASE(
    "a job submitted over mutual TLS runs, and the daemon logs the certificate that started it") {
  if (::access(kOpenssl, X_OK) != 0) return SkipTest(std::string(kOpenssl) + " is missing");
  ScratchDir dir;
  REQUIRE(MakeCertificate(dir));
  WriteFile(dir / "token", "tls-token\n");
  const std::string cert = dir / "cert.pem", key = dir / "key.pem";
  Daemon daemon({"--tls-cert=" + cert, "--tls-key=" + key, "--tls-ca=" + cert,
                 "--token-file=" + (dir / "token"), "--allow-root-jobs",
                 "--agent-program=" + kDdprun});
  const std::vector<std::string> security = {"--tls-ca=" + cert, "--tls-cert=" + cert,
                                             "--tls-key=" + key, "--token-file=" + (dir / "token")};
  std::vector<std::string> args = {"--hosts=" + daemon.endpoint(), "--nproc_per_node=2",
                                   "--rdzv_id=tls-submitted"};
  args.insert(args.end(), security.begin(), security.end());
  args.insert(args.end(), {kTestWorker, "store"});
  auto submitted = Run(Ddprun(args), {}, 120s);
  INFO(submitted.out << submitted.err);
  CHECK(submitted.code() == 0);
  CHECK(Count(submitted.out, "ok barrier") == 2);
  // Without a client certificate the daemon's door stays shut.
  auto refused = Run(Ddprun({"--hosts=" + daemon.endpoint(), "--tls-ca=" + cert,
                             "--token-file=" + (dir / "token"), "true"}),
                     {}, 60s);
  CHECK(refused.code() == 1);
  CHECK(Count(refused.err, "nothing was started") == 1);
  daemon.process().Signal(SIGTERM);
  REQUIRE(daemon.process().Wait(30s));
  INFO(daemon.process().stderr_text());
  const std::string& log = daemon.process().stderr_text();
  const size_t started = log.find("started job tls-submitted (host 1 of 1) for ipv4:127.0.0.1:");
  REQUIRE(started != std::string::npos);
  const std::string line = log.substr(started, log.find('\n', started) - started);
  CHECK(Count(line, " (certificate CN=127.0.0.1): agent pid ") == 1);
}

TEST_CASE(
    "with a certificate, the daemon's metrics endpoint speaks HTTPS only, with that certificate") {
  if (::access(kOpenssl, X_OK) != 0) return SkipTest(std::string(kOpenssl) + " is missing");
  ScratchDir dir;
  REQUIRE(MakeCertificate(dir));
  WriteFile(dir / "token", "tls-token\n");
  Daemon daemon({"--tls-cert=" + (dir / "cert.pem"), "--tls-key=" + (dir / "key.pem"),
                 "--token-file=" + (dir / "token"), "--metrics-port=0"});
  CHECK(Count(daemon.process().stdout_text(), "ddprund metrics on https://127.0.0.1:") == 1);
  // openssl's client, trusting only the test's certificate, sends one request.
  auto get = [&](const std::string& path, const std::string& token) {
    WriteFile(dir / "request", "GET " + path +
                                   " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                                   token + "\r\nConnection: close\r\n\r\n");
    return Run({"/bin/sh", "-c",
                std::string(kOpenssl) + " s_client -quiet -verify_return_error -CAfile " +
                    (dir / "cert.pem") + " -connect 127.0.0.1:" +
                    std::to_string(daemon.metrics_port()) + " < " + (dir / "request")},
               {}, 30s);
  };
  auto metrics = get("/metrics", "tls-token");
  INFO(metrics.out << metrics.err);
  CHECK(metrics.out.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(Count(metrics.out, "ddprun_jobs{state=\"running\"} 0") == 1);
  CHECK(get("/healthz", "wrong").out.rfind("HTTP/1.1 401 ", 0) == 0);
  // Plain HTTP gets no answer: the endpoint waits for a TLS handshake, and the request is none.
  auto plain = HttpGet("127.0.0.1", daemon.metrics_port(), "/metrics",
                       {{"Authorization", "Bearer tls-token"}}, 5s);
  CHECK(plain.status == 0);
}
