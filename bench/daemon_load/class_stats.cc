// ClassStats; see class_stats.h.
#include "class_stats.h"

#include <algorithm>
#include <cstdio>

#include "load_basics.h"

namespace ddprun::daemon_load {

void ClassStats::Record(const grpc::Status& status, bool expected, double ms, int phase) {
  std::lock_guard lock(mu_);
  ++calls_[phase == kBaseline ? 0 : 1];
  if (status.ok()) {
    ++ok_;
  } else {
    if (++refused_[CodeName(status.error_code())] == 1) {
      first_message_[CodeName(status.error_code())] = status.error_message().substr(0, 140);
    }
  }
  if (!expected) {
    ++unexpected_;
    if (examples_.size() < 4) {
      examples_.push_back(std::string(CodeName(status.error_code())) + ": " +
                          status.error_message().substr(0, 160));
    }
  }
  if (phase == kBaseline || phase == kMix) latency_[phase].push_back(static_cast<float>(ms));
}

void ClassStats::Note(const std::string& example) {
  std::lock_guard lock(mu_);
  ++unexpected_;
  if (examples_.size() < 4) examples_.push_back(example);
}

long ClassStats::calls() {
  std::lock_guard lock(mu_);
  return calls_[0] + calls_[1];
}

long ClassStats::calls_in(int phase) {
  std::lock_guard lock(mu_);
  return calls_[phase == kBaseline ? 0 : 1];
}

long ClassStats::unexpected() {
  std::lock_guard lock(mu_);
  return unexpected_;
}

std::string ClassStats::Latency(int phase) {
  std::lock_guard lock(mu_);
  std::vector<float> v = latency_[phase];
  if (v.empty()) return "-";
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))]; };
  char text[96];
  std::snprintf(text, sizeof(text), "%.2f / %.2f / %.1f", at(0.5), at(0.99), v.back());
  return text;
}

void ClassStats::Print() {
  const long calls = this->calls();
  std::lock_guard lock(mu_);
  std::string refused;
  for (const auto& [code, count] : refused_) {
    if (!refused.empty()) refused += ", ";
    refused += code + " " + std::to_string(count);
  }
  std::printf("| %s | %ld | %ld | %s | %ld |\n", name_.c_str(), calls, ok_,
              refused.empty() ? "-" : refused.c_str(), unexpected_);
}

void ClassStats::PrintExamples() {
  std::lock_guard lock(mu_);
  for (const auto& example : examples_) std::printf("  %s: %s\n", name_.c_str(), example.c_str());
}

void ClassStats::PrintRefusals() {
  std::lock_guard lock(mu_);
  for (const auto& [code, message] : first_message_) {
    std::printf("  %s: %s \"%s\"\n", name_.c_str(), code.c_str(), message.c_str());
  }
}

}  // namespace ddprun::daemon_load
