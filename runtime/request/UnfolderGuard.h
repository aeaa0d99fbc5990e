//===- UnfolderGuard.h - Calls into user unfolders --------------*- C++ -*-===//
//
// Custom unfolders are user code: an exception thrown from one must fail
// its own request, not unwind through the engine's worker thread.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_SCHED_UNFOLDERGUARD_H
#define CELLRUN_SCHED_UNFOLDERGUARD_H

#include "cellrun/Status.h"

#include <exception>
#include <string>

namespace cellrun {

/// Runs `call` (user unfolder code returning a Status); an exception
/// becomes an Internal status that says so.
template <typename Call> Status callUnfolder(Call &&call) {
  try {
    return call();
  } catch (const std::exception &error) {
    return Status(StatusCode::Internal,
                  std::string("the unfolder threw: ") + error.what());
  } catch (...) {
    return Status(StatusCode::Internal, "the unfolder threw an exception");
  }
}

} // namespace cellrun

#endif // CELLRUN_SCHED_UNFOLDERGUARD_H
