//===- EmulatedKernelTest.cpp - The generated CUDA kernels, run on the CPU =//
//
// The CUDA source cellc generates for each example is also compiled as C++
// with CudaEmulation.h (test/CMakeLists.txt), and every kernel step of every
// plan runs through its `<kernel>__emulate` launcher with the launch geometry
// the artifact records (a grid of ceil(rows * row_width / block_size) blocks,
// or one block per row for row reductions) and its parameter list. The GEMMs
// run on OpenBLAS. Outputs must match PyTorch as in CpuBackendTest; this
// checks the kernels' arithmetic, indexing, gather/scatter and masking of
// padding rows without a GPU.
//
//===----------------------------------------------------------------------===//
#include "ExampleTasks.h"
#include "KernelGrid.h"

#include <algorithm>
#include <cstring>
#include <dlfcn.h>

using namespace cellrun;
using namespace cellrun::cpu;

namespace {

using Launch = void (*)(void **args, unsigned grid, unsigned block);

Status launch(void *library, const cellpack::KernelStep &step, int64_t rows,
              const std::vector<InputView> &inputs,
              const std::vector<OutputView> &outputs) {
  std::string symbol = step.name()->str() + "__emulate";
  auto function = reinterpret_cast<Launch>(dlsym(library, symbol.c_str()));
  if (!function)
    return Status(StatusCode::NotFound, "no kernel " + symbol);
  // As cudaLaunchKernel: one pointer to each parameter's value.
  std::vector<const void *> pointers;
  pointers.reserve(step.params()->size());
  std::vector<void *> args;
  int count = static_cast<int>(rows);
  for (const cellpack::KernelParam *param : *step.params()) {
    uint32_t i = param->index();
    switch (param->kind()) {
    case cellpack::ParamKind::Input:
      pointers.push_back(inputs.at(i).data);
      break;
    case cellpack::ParamKind::InputRows:
      if (!inputs.at(i).rows)
        return Status(StatusCode::Internal, "gather input without rows");
      pointers.push_back(inputs.at(i).rows);
      break;
    case cellpack::ParamKind::Output:
      pointers.push_back(outputs.at(i).data);
      break;
    case cellpack::ParamKind::OutputRows:
      if (!outputs.at(i).rows)
        return Status(StatusCode::Internal, "scatter output without rows");
      pointers.push_back(outputs.at(i).rows);
      break;
    case cellpack::ParamKind::RowCount:
      args.push_back(&count);
      continue;
    }
    args.push_back(&pointers.back());
  }
  function(args.data(),
           static_cast<unsigned>(cellpack::kernelGridSize(step, rows)),
           step.block_size());
  return Status::ok();
}

class EmulatedKernelTest : public ::testing::TestWithParam<const char *> {};

TEST_P(EmulatedKernelTest, GeneratedKernelsMatchPyTorch) {
  std::string model = GetParam();
  std::string path =
      std::string(CELL_EMULATED_KERNELS_DIR) + "/libemulated-" + model + ".so";
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  KernelLauncher launcher = [library](const cellpack::KernelStep &step,
                                      int64_t rows,
                                      const std::vector<InputView> &inputs,
                                      const std::vector<OutputView> &outputs) {
    return launch(library, step, rows, inputs, outputs);
  };
  EXPECT_GE(cellc::testing::checkExampleAgainstPyTorch(model, launcher), 10);
  dlclose(library);
}

TEST(EmulatedRowCopyTest, GathersAndScattersRowsOfEverySize) {
  // The runtime's row-copy kernel (RowCopyKernel.h), as every cell's code
  // carries it: rows of 64 bytes (16-byte units), 12 (4-byte) and 3 (1),
  // gathered by index into a buffer and scattered back into another pool,
  // with a grid too small for one thread a unit (grid-stride loop).
  std::string path =
      std::string(CELL_EMULATED_KERNELS_DIR) + "/libemulated-lstm.so";
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  auto copy =
      reinterpret_cast<Launch>(dlsym(library, "cellrun_copy_rows__emulate"));
  ASSERT_NE(copy, nullptr);
  for (unsigned rowBytes : {64u, 12u, 3u}) {
    constexpr unsigned kRows = 40, kCount = 7;
    std::vector<unsigned char> pool(kRows * rowBytes);
    for (size_t b = 0; b < pool.size(); ++b)
      pool[b] = static_cast<unsigned char>(b * 7 + rowBytes);
    std::vector<int> rows = {5, 0, 39, 17, 18, 2, 33};
    std::vector<unsigned char> gathered(kCount * rowBytes, 0);
    const unsigned char *from = pool.data();
    const int *fromRows = rows.data();
    unsigned char *to = gathered.data();
    const int *toRows = nullptr;
    unsigned bytes = rowBytes, count = kCount;
    void *gatherArgs[] = {&from, &fromRows, &to, &toRows, &bytes, &count};
    copy(gatherArgs, 1, 32);
    for (unsigned r = 0; r < kCount; ++r)
      for (unsigned b = 0; b < rowBytes; ++b)
        ASSERT_EQ(gathered[r * rowBytes + b], pool[rows[r] * rowBytes + b])
            << rowBytes << "-byte row " << r;
    std::vector<unsigned char> other(kRows * rowBytes, 0xEE);
    const unsigned char *source = gathered.data();
    const int *noRows = nullptr;
    unsigned char *target = other.data();
    const int *targetRows = rows.data();
    void *scatterArgs[] = {&source,     &noRows, &target,
                           &targetRows, &bytes,  &count};
    copy(scatterArgs, 2, 64);
    for (unsigned row = 0; row < kRows; ++row) {
      bool chosen = std::find(rows.begin(), rows.end(),
                              static_cast<int>(row)) != rows.end();
      for (unsigned b = 0; b < rowBytes; ++b)
        ASSERT_EQ(other[row * rowBytes + b],
                  chosen ? pool[row * rowBytes + b] : 0xEE)
            << rowBytes << "-byte row " << row;
    }
  }
  dlclose(library);
}

TEST(EmulatedRowCopyTest, CopiesPoolRowsToTheirAddresses) {
  // cellrun_copy_rows_to_addresses: pool rows by index to one host address
  // each (page-locked results), rows of 64, 12 and 3 bytes, a grid too
  // small for one thread a unit; nothing around the targets is touched.
  std::string path =
      std::string(CELL_EMULATED_KERNELS_DIR) + "/libemulated-gru.so";
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  auto copy = reinterpret_cast<Launch>(
      dlsym(library, "cellrun_copy_rows_to_addresses__emulate"));
  ASSERT_NE(copy, nullptr);
  for (unsigned rowBytes : {64u, 12u, 3u}) {
    constexpr unsigned kRows = 40, kCount = 6;
    std::vector<unsigned char> pool(kRows * rowBytes);
    for (size_t b = 0; b < pool.size(); ++b)
      pool[b] = static_cast<unsigned char>(b * 13 + rowBytes);
    std::vector<int> rows = {7, 39, 0, 21, 22, 7};
    // Targets scattered over a buffer, out of order, 16-byte aligned.
    alignas(16) static unsigned char results[kCount * 2 * 64 + 64];
    std::memset(results, 0xEE, sizeof results);
    std::vector<size_t> places = {5, 0, 9, 2, 11, 7}; // in rows of 64
    std::vector<unsigned long long> addresses;
    for (size_t place : places)
      addresses.push_back(reinterpret_cast<uintptr_t>(results + place * 64));
    const unsigned char *from = pool.data();
    const int *fromRows = rows.data();
    const unsigned long long *to = addresses.data();
    unsigned bytes = rowBytes, count = kCount;
    void *args[] = {&from, &fromRows, &to, &bytes, &count};
    copy(args, 1, 32);
    for (size_t b = 0; b < sizeof results; ++b) {
      size_t place = b / 64, offset = b % 64;
      auto k = std::find(places.begin(), places.end(), place) - places.begin();
      unsigned char expected =
          k < static_cast<long>(kCount) && offset < rowBytes
              ? pool[rows[k] * rowBytes + offset]
              : 0xEE;
      ASSERT_EQ(results[b], expected) << rowBytes << "-byte rows, byte " << b;
    }
  }
  dlclose(library);
}

INSTANTIATE_TEST_SUITE_P(Examples, EmulatedKernelTest,
                         ::testing::Values("lstm", "gru", "seq2seq", "treelstm",
                                           "stacked", "lnlstm", "attention",
                                           "bahdanau", "mingru", "mamba",
                                           "rwkv", "slstm", "gru_step"));

} // namespace
