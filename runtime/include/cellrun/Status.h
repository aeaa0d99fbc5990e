//===- Status.h - Errors of the cellrun runtime -----------------*- C++ -*-===//
//
// Status (an error code and a message) and Result<T> (a T or a failed
// Status). Every fallible function of the runtime's API returns one of them;
// no exception crosses that API. Messages are complete sentences for the
// user ("model.cellpack: cell 'lstm' has no batch plans"); codes are for the
// program (the server maps them to HTTP/gRPC statuses).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_STATUS_H
#define CELLRUN_STATUS_H

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace cellrun {

enum class StatusCode {
  Ok = 0,
  InvalidArgument,   // the caller asked for something malformed
  NotFound,          // a named thing (file, cell, plan) does not exist
  OutOfRange,        // a size or index beyond what is supported
  IoError,           // the operating system refused (open, read)
  DataLoss,          // a corrupted, truncated or malformed file
  Unsupported,       // well formed but not for this build or device
  ResourceExhausted, // a budget or queue is full
  Unavailable,       // a device or service is not there
  Internal,          // a bug in cellrun
  Cancelled,         // ended early by its submitter (Engine::cancel)
};

/// The code's name, e.g. "DataLoss".
const char *statusCodeName(StatusCode code);

/// Success, or an error code with a message. Cheap to copy when Ok.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

  bool isOk() const { return code_ == StatusCode::Ok; }
  StatusCode code() const { return code_; }
  const std::string &message() const { return message_; }

  /// "DataLoss: <message>", or "Ok".
  std::string toString() const;

private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

/// A value of type T or the failed Status that explains why there is none.
/// Reading the value of a failed Result is a bug: it aborts with the message.
template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : storage_(std::move(value)) {}
  /// `status` must be a failure; an Ok status without a value is turned
  /// into an Internal error rather than silently producing a default T.
  Result(Status status) : storage_(std::move(status)) {
    if (std::get<Status>(storage_).isOk())
      storage_ = Status(StatusCode::Internal,
                        "Result constructed from an Ok status without value");
  }

  bool ok() const { return std::holds_alternative<T>(storage_); }
  explicit operator bool() const { return ok(); }

  /// The error, or an Ok status when there is a value.
  Status status() const { return ok() ? Status() : std::get<Status>(storage_); }

  T &value() & { return checkedValue(); }
  const T &value() const & {
    return const_cast<Result *>(this)->checkedValue();
  }
  T &&value() && { return std::move(checkedValue()); }

  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

private:
  T &checkedValue() {
    if (!ok()) {
      std::fprintf(stderr, "cellrun: value of a failed Result: %s\n",
                   std::get<Status>(storage_).toString().c_str());
      std::abort();
    }
    return std::get<T>(storage_);
  }

  std::variant<T, Status> storage_;
};

} // namespace cellrun

#endif // CELLRUN_STATUS_H
