// StopSignalWatch: the stop signals this process gets, told on its loop in the order they came,
// each once, and taken at once by whoever asks first. Real signals, raised on this thread (raise
// runs the handler before it returns), and a real io_context.
#include "stop_signal_watch.h"

#include <signal.h>

#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>
#include <vector>

using namespace ddprun;

namespace {

// The handler SIGTERM has now.
void* HandlerOf(int signal_number) {
  struct sigaction now {};
  REQUIRE(::sigaction(signal_number, nullptr, &now) == 0);
  return reinterpret_cast<void*>(now.sa_handler);
}

}  // namespace

TEST_CASE("a stop signal received before news already posted is taken first, and told no more") {
  boost::asio::io_context io;
  auto watch = StopSignalWatch::Start(io).value();
  std::vector<int> told;
  watch->AsyncWait([&](int signal_number) { told.push_back(signal_number); });
  std::optional<int> taken;
  // The news was posted first, the signal came while the loop's thread was elsewhere: the news's
  // handler asks, and finds it.
  boost::asio::post(io, [&] {
    taken = watch->Take();
    watch->Cancel();
  });
  ::raise(SIGTERM);
  io.run();
  CHECK(taken == SIGTERM);
  CHECK(told.empty());
  CHECK_FALSE(watch->Take().has_value());
}

TEST_CASE("stop signals are told in the order they came, each once") {
  boost::asio::io_context io;
  auto watch = StopSignalWatch::Start(io).value();
  ::raise(SIGHUP);
  ::raise(SIGINT);  // both in the pipe before the first wait: one edge for two
  std::vector<int> told;
  std::function<void(int)> record = [&](int signal_number) {
    told.push_back(signal_number);
    if (told.size() == 2) {
      ::raise(SIGQUIT);  // while nobody waits: told when the next wait begins
    }
    if (told.size() < 3) watch->AsyncWait(record);
  };
  watch->AsyncWait(record);
  io.run();
  CHECK(told == std::vector<int>{SIGHUP, SIGINT, SIGQUIT});
}

TEST_CASE("one stop signal watch at a time, and the handlers before it come back when it ends") {
  boost::asio::io_context io;
  void* const before = HandlerOf(SIGTERM);
  {
    auto watch = StopSignalWatch::Start(io).value();
    CHECK(HandlerOf(SIGTERM) != before);
    auto second = StopSignalWatch::Start(io);
    REQUIRE_FALSE(second.ok());
    CHECK(second.status().message() == "a stop signal watch runs already");
  }
  CHECK(HandlerOf(SIGTERM) == before);
  CHECK(StopSignalWatch::Start(io).ok());
}
