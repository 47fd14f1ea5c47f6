// Status and Result: how errors cross module boundaries in ddprun.
//
// A Status is a canonical code (the same numbering as gRPC's, so it maps one-to-one onto
// grpc::Status) and a message that says what was being done, with what, and what to do about it.
// Result<T> holds either a value or a non-OK Status. Both are small value types; copy freely.
//
// An error passed up through RETURN_IF_ERROR or ASSIGN_OR_RETURN (status_macros.h) collects the
// places it went through, innermost first: trace() says where it came from without changing the
// message users see.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace ddprun {

// Numbered as grpc::StatusCode.
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// The code's canonical name, e.g. "DEADLINE_EXCEEDED".
const char* StatusCodeName(StatusCode code);

// `text` made fit for a one-line message: each control character escaped ("\n", "\r", "\t",
// else "\xNN"), everything else kept. Errors quote what the user gave, which may hold anything.
std::string OneLine(std::string text);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  // The message is kept on one line (OneLine): every error is one line, whatever it quotes.
  Status(StatusCode code, std::string message)
      : code_(code), message_(OneLine(std::move(message))) {}

  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "CODE: message", or "OK".
  std::string ToString() const;
  // The places the error was passed up through, innermost first: "ring.cc:88 < group.cc:40";
  // empty when it went through none.
  const std::string& trace() const { return trace_; }
  // ToString() and, when there is one, " [at <trace>]": for logs and bug reports.
  std::string DebugString() const;
  // This status with `file`'s base name and `line` added to its trace. For the macros.
  Status WithTrace(const char* file, int line) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string trace_;
};

inline Status InvalidArgumentError(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFoundError(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status DeadlineExceededError(std::string m) {
  return {StatusCode::kDeadlineExceeded, std::move(m)};
}
inline Status ResourceExhaustedError(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status FailedPreconditionError(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status UnavailableError(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status UnauthenticatedError(std::string m) {
  return {StatusCode::kUnauthenticated, std::move(m)};
}

// A system call's failure: "<what>: <strerror(errno_value)>", code INTERNAL.
Status ErrnoError(const std::string& what, int errno_value);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : state_(std::move(status)) {}  // NOLINT: must not be OK

  bool ok() const { return std::holds_alternative<T>(state_); }
  // The error; OK when a value is held.
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(state_); }
  // Precondition: ok().
  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  // The value, or `fallback` when there is none.
  T value_or(T fallback) const& { return ok() ? std::get<T>(state_) : std::move(fallback); }
  T value_or(T fallback) && { return ok() ? std::get<T>(std::move(state_)) : std::move(fallback); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace ddprun
