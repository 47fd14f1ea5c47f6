// Status formatting.
#include "ddprun/base/status.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace ddprun {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kCancelled:
      return "CANCELLED";
    case StatusCode::kUnknown:
      return "UNKNOWN";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kAlreadyExists:
      return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied:
      return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case StatusCode::kAborted:
      return "ABORTED";
    case StatusCode::kOutOfRange:
      return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented:
      return "UNIMPLEMENTED";
    case StatusCode::kInternal:
      return "INTERNAL";
    case StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case StatusCode::kDataLoss:
      return "DATA_LOSS";
    case StatusCode::kUnauthenticated:
      return "UNAUTHENTICATED";
  }
  return "UNKNOWN";
}

std::string OneLine(std::string text) {
  const auto is_control = [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; };
  if (std::none_of(text.begin(), text.end(), is_control)) return text;
  std::string line;
  line.reserve(text.size() + 8);
  for (const char c : text) {
    if (!is_control(c)) {
      line += c;
    } else if (c == '\n') {
      line += "\\n";
    } else if (c == '\r') {
      line += "\\r";
    } else if (c == '\t') {
      line += "\\t";
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", static_cast<unsigned char>(c));
      line += escaped;
    }
  }
  return line;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

std::string Status::DebugString() const {
  if (trace_.empty()) return ToString();
  return ToString() + " [at " + trace_ + "]";
}

Status Status::WithTrace(const char* file, int line) const {
  const char* slash = std::strrchr(file, '/');
  Status traced = *this;
  if (!traced.trace_.empty()) traced.trace_ += " < ";
  traced.trace_ += std::string(slash ? slash + 1 : file) + ":" + std::to_string(line);
  return traced;
}

Status ErrnoError(const std::string& what, int errno_value) {
  return InternalError(what + ": " + std::strerror(errno_value));
}

}  // namespace ddprun
