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

#include <dlfcn.h>

using namespace cellrun;
using namespace cellrun::cpu;

namespace {

using Launch = void (*)(void **args, unsigned grid, unsigned block);

int64_t gridSize(const cellpack::KernelStep &step, int64_t rows) {
  if (step.shape() == cellpack::KernelShape::RowReduction)
    return rows;
  return (rows * step.row_width() + step.block_size() - 1) / step.block_size();
}

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
  function(args.data(), static_cast<unsigned>(gridSize(step, rows)),
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

INSTANTIATE_TEST_SUITE_P(Examples, EmulatedKernelTest,
                         ::testing::Values("lstm", "gru", "seq2seq",
                                           "treelstm"));

} // namespace
