// The check macros of ddprun's one error convention (NCCL's NCCLCHECK, Abseil's
// RETURN_IF_ERROR): pass an error up to the caller and record where it went through (see
// Status::trace), so that every failure carries its back-trace.
//
//   RETURN_IF_ERROR(store.Set(key, value));            // a Status
//   ASSIGN_OR_RETURN(auto socket, BoundSocket::Bind(host, 0));   // a Result<T>
//   ASSIGN_OR_RETURN(options.round, ParseRound(text));
//
// Both return from the enclosing function, which must return Status or a Result.
// ASSIGN_OR_RETURN is several statements: inside an if or a loop, give it braces.
#pragma once

#include <utility>

#include "ddprun/base/status.h"

#if defined(RETURN_IF_ERROR) || defined(ASSIGN_OR_RETURN)
#error "RETURN_IF_ERROR or ASSIGN_OR_RETURN is already defined by another header"
#endif

#define DDPRUN_STATUS_CONCAT_INNER(a, b) a##b
#define DDPRUN_STATUS_CONCAT(a, b) DDPRUN_STATUS_CONCAT_INNER(a, b)

// Evaluates `expr` (a Status) once; returns it, traced, when it is an error.
#define RETURN_IF_ERROR(expr)                                                      \
  do {                                                                             \
    const ::ddprun::Status ddprun_status_ = (expr);                                \
    if (!ddprun_status_.ok()) return ddprun_status_.WithTrace(__FILE__, __LINE__); \
  } while (false)

// Evaluates `expr` (a Result<T>) once; returns its error, traced, or moves its value into `lhs`
// (a declaration such as `auto x`, or an lvalue).
#define ASSIGN_OR_RETURN(lhs, expr) \
  DDPRUN_ASSIGN_OR_RETURN_IMPL(DDPRUN_STATUS_CONCAT(ddprun_result_, __LINE__), lhs, expr)

#define DDPRUN_ASSIGN_OR_RETURN_IMPL(result, lhs, expr)                   \
  auto result = (expr);                                                   \
  if (!result.ok()) return result.status().WithTrace(__FILE__, __LINE__); \
  lhs = std::move(result).value()
