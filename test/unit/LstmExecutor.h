//===- LstmExecutor.h - An executor over the LSTM example -------*- C++ -*-===//
//
// The row tests of the executor (RowPlacesTest, RowColumnsTest) run single
// tasks of the LSTM example's cell on the backend their binary is built for:
// an executor of 16 rows a pool over its artifact, from the examples' build
// directory ($CELL_EXAMPLES_BUILD_DIR when set, else the one configured).
//
//===----------------------------------------------------------------------===//
#ifndef CELL_TEST_LSTMEXECUTOR_H
#define CELL_TEST_LSTMEXECUTOR_H

#include "exec/Executor.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

namespace cellc::testing {

/// Makes `executor` and sets `cell` to its "lstm" cell; a failure fails the
/// calling test (check HasFatalFailure after).
inline void makeLstmExecutor(const cellrun::ExecutorOptions &options,
                             std::unique_ptr<cellrun::Executor> &executor,
                             const cellpack::CellType *&cell) {
  const char *override = std::getenv("CELL_EXAMPLES_BUILD_DIR");
  std::string examples = override ? override : CELL_EXAMPLES_BUILD_DIR;
  auto artifact = cellrun::loadArtifact(examples + "/lstm/model.cellpack");
  ASSERT_TRUE(artifact.ok()) << artifact.status().toString();
  auto created = cellrun::Executor::create(artifact.value(), 16, options);
  ASSERT_TRUE(created.ok()) << created.status().toString();
  executor = std::move(created).value();
  cell = executor->artifact().cell("lstm").value();
}

} // namespace cellc::testing

#endif // CELL_TEST_LSTMEXECUTOR_H
