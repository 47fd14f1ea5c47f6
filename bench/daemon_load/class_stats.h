// ClassStats: one class of the load generator's clients: its calls, how they ended, and (for
// the good ones) their latency by phase. Thread-safe: a class's threads record into one.
#pragma once

#include <grpcpp/grpcpp.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ddprun::daemon_load {

class ClassStats {
 public:
  explicit ClassStats(std::string name) : name_(std::move(name)) {}

  // `expected`: the outcome this class should get (OK for a good client, the refusal for a bad
  // one); anything else is a failure that should not happen. `phase`: g_phase's at the call.
  void Record(const grpc::Status& status, bool expected, double ms, int phase);
  // An unexpected outcome that is not a call's status.
  void Note(const std::string& example);

  const std::string& name() const { return name_; }
  long calls();
  long calls_in(int phase);
  long unexpected();

  // "p50 / p99 / max" of the phase, in ms; "-" when it has no samples.
  std::string Latency(int phase);

  // A row "| name | calls | ok | refused | unexpected |" of the report.
  void Print();
  void PrintExamples();
  void PrintRefusals();

 private:
  const std::string name_;
  std::mutex mu_;
  long calls_[2] = {0, 0};
  long ok_ = 0;
  long unexpected_ = 0;
  std::map<std::string, long> refused_;
  std::map<std::string, std::string> first_message_;  // by code
  std::vector<std::string> examples_;
  std::vector<float> latency_[2];
};

}  // namespace ddprun::daemon_load
