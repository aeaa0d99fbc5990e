//===- CublasLtLibraryTest.cpp - cuBLASLt opened at run time --------------===//
//
// The runtime opens cuBLASLt with dlopen (CublasLtLibrary.h). Without a GPU
// the library still opens where the CUDA toolkit is installed: every
// function the runtime calls must be found in it, and a file that is not
// there or lacks them must give a message that names it.
//
//===----------------------------------------------------------------------===//
#include "backend/cuda/CublasLtLibrary.h"

#include <gtest/gtest.h>

#include <string>
#include <sys/stat.h>

using namespace cellrun;
using namespace cellrun::cuda;

namespace {

bool anyCandidateOnDisk() {
  for (const std::string &file : cublasLtCandidates()) {
    struct stat info;
    if (file.find('/') != std::string::npos && stat(file.c_str(), &info) == 0)
      return true;
  }
  return false;
}

TEST(CublasLtLibraryTest, OpensTheToolkitsLibraryWithEveryFunction) {
  Result<CublasLt> opened = openCublasLt(cublasLtCandidates());
  if (!opened.ok() && !anyCandidateOnDisk())
    GTEST_SKIP() << "no cuBLASLt on this machine: "
                 << opened.status().message();
  ASSERT_TRUE(opened.ok()) << opened.status().toString();
  const CublasLt &table = opened.value();
  EXPECT_NE(
      table.file.find("libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR)),
      std::string::npos)
      << table.file;
#define CELL_EXPECT_RESOLVED(name) EXPECT_NE(table.name, nullptr) << #name;
  CELL_CUBLASLT_FUNCTIONS(CELL_EXPECT_RESOLVED)
#undef CELL_EXPECT_RESOLVED
  // Calls through the table reach the library (no device needed for this).
  EXPECT_STREQ(table.cublasLtGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED),
               "CUBLAS_STATUS_NOT_SUPPORTED");
  // The process's table is the same library, opened once.
  Result<const CublasLt *> process = loadCublasLt();
  ASSERT_TRUE(process.ok()) << process.status().toString();
  EXPECT_EQ(process.value(), loadCublasLt().value());
  EXPECT_EQ(process.value()->cublasLtMatmul, table.cublasLtMatmul);
}

TEST(CublasLtLibraryTest, AMissingFileIsNamedInTheError) {
  Result<CublasLt> opened =
      openCublasLt({"/nonexistent/libcublasLt.so.99", "libcublasLt.so.0"});
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::Unavailable);
  std::string message = opened.status().message();
  EXPECT_NE(message.find("could not be loaded"), std::string::npos) << message;
  EXPECT_NE(message.find("/nonexistent/libcublasLt.so.99"), std::string::npos)
      << message;
  EXPECT_NE(message.find("libcublasLt.so.0"), std::string::npos) << message;
}

TEST(CublasLtLibraryTest, ALibraryWithoutTheFunctionsIsRefused) {
  // The C library opens, but has none of cuBLASLt's functions.
  Result<CublasLt> opened = openCublasLt({"libc.so.6"});
  ASSERT_FALSE(opened.ok());
  std::string message = opened.status().message();
  EXPECT_NE(message.find("libc.so.6 lacks cublasLtCreate"), std::string::npos)
      << message;
  EXPECT_NE(message.find("cublasLtMatrixLayoutDestroy"), std::string::npos)
      << message;
}

} // namespace
