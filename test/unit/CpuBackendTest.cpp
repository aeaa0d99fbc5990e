//===- CpuBackendTest.cpp - Every example cell on the CPU vs PyTorch -----===//
//
// The CPU backend (region interpreter for the kernels, OpenBLAS for the
// GEMMs) on every example cell and batch size, against PyTorch's outputs;
// see ExampleTasks.h for what each task checks.
//
//===----------------------------------------------------------------------===//
#include "ExampleTasks.h"

namespace {

class CpuBackendTest : public ::testing::TestWithParam<const char *> {};

TEST_P(CpuBackendTest, EveryCellAndBatchSizeMatchesPyTorch) {
  // Cases of 1, 3, 8 and 64 rows on every plan they fit.
  EXPECT_GE(cellc::testing::checkExampleAgainstPyTorch(GetParam()), 10);
}

INSTANTIATE_TEST_SUITE_P(Examples, CpuBackendTest,
                         ::testing::Values("lstm", "gru", "seq2seq",
                                           "treelstm"));

} // namespace
