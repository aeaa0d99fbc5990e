//===- Status.cpp - Names of the runtime's error codes --------------------===//
#include "cellrun/Status.h"

namespace cellrun {

const char *statusCodeName(StatusCode code) {
  switch (code) {
  case StatusCode::Ok:
    return "Ok";
  case StatusCode::InvalidArgument:
    return "InvalidArgument";
  case StatusCode::NotFound:
    return "NotFound";
  case StatusCode::OutOfRange:
    return "OutOfRange";
  case StatusCode::IoError:
    return "IoError";
  case StatusCode::DataLoss:
    return "DataLoss";
  case StatusCode::Unsupported:
    return "Unsupported";
  case StatusCode::ResourceExhausted:
    return "ResourceExhausted";
  case StatusCode::Unavailable:
    return "Unavailable";
  case StatusCode::Internal:
    return "Internal";
  case StatusCode::Cancelled:
    return "Cancelled";
  }
  return "Unknown";
}

std::string Status::toString() const {
  if (isOk())
    return "Ok";
  return std::string(statusCodeName(code_)) + ": " + message_;
}

} // namespace cellrun
