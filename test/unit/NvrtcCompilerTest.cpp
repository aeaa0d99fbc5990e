//===- NvrtcCompilerTest.cpp - Tests of the NVRTC compile step -----------===//
//
// Compiles small CUDA kernels with NVRTC for several architectures (no GPU
// needed) and checks the CUBINs, the PTX, the lowered kernel names, error
// messages and architecture checks; ptxas must accept the PTX.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/NvrtcCompiler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

using namespace cellc::codegen;

namespace {

/// Elementwise sigmoid over a batch of rows, as an extern "C" kernel with the
/// batch size fixed and as a C++ template over the batch size.
const char *kSigmoidSource = R"cuda(
constexpr int kHidden = 64;

template <int Batch>
__device__ void sigmoidRows(const float *in, float *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < Batch * kHidden)
    out[i] = 1.0f / (1.0f + __expf(-in[i]));
}

extern "C" __global__ void lstm_sigmoid_b8(const float *in, float *out) {
  sigmoidRows<8>(in, out);
}

template <int Batch>
__global__ void sigmoid_t(const float *in, float *out) {
  sigmoidRows<Batch>(in, out);
}
)cuda";

/// The mangled name of sigmoid_t<8>(const float *, float *).
const char *kSigmoidT8Mangled = "_Z9sigmoid_tILi8EEvPKfPf";

CompileOptions sigmoidOptions() {
  CompileOptions options;
  options.cubinArchs = {"sm_80", "sm_90"};
  options.ptxArch = "compute_80";
  options.kernelNames = {"lstm_sigmoid_b8", "sigmoid_t<8>"};
  return options;
}

bool startsWithElfMagic(const std::vector<char> &image) {
  return image.size() >= 4 && image[0] == '\x7f' && image[1] == 'E' &&
         image[2] == 'L' && image[3] == 'F';
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// A path in the temporary directory that no other test process uses.
std::filesystem::path tempPath(const std::string &name) {
  return std::filesystem::temp_directory_path() /
         ("cellc-nvrtc-" + std::to_string(getpid()) + "-" + name);
}

TEST(NvrtcCompiler, CompilesCubinsForEveryArchInRequestOrder) {
  CompiledProgram program;
  std::string error;
  CompileOptions options = sigmoidOptions();
  options.cubinArchs = {"sm_90", "sm_80"};
  ASSERT_TRUE(
      compileCuda(kSigmoidSource, "sigmoid.cu", options, program, error))
      << error;
  ASSERT_EQ(program.cubins.size(), 2u);
  EXPECT_EQ(program.cubins[0].arch, "sm_90");
  EXPECT_EQ(program.cubins[1].arch, "sm_80");
  for (const CompiledArch &compiled : program.cubins) {
    EXPECT_TRUE(startsWithElfMagic(compiled.cubin)) << compiled.arch;
    EXPECT_GT(compiled.cubin.size(), 1000u) << compiled.arch;
  }
  EXPECT_NE(program.cubins[0].cubin, program.cubins[1].cubin);
  EXPECT_GT(program.seconds, 0.0);
}

TEST(NvrtcCompiler, EmitsPtxForTheVirtualArch) {
  CompiledProgram program;
  std::string error;
  ASSERT_TRUE(compileCuda(kSigmoidSource, "sigmoid.cu", sigmoidOptions(),
                          program, error))
      << error;
  EXPECT_EQ(program.ptxArch, "compute_80");
  EXPECT_TRUE(contains(program.ptx, ".target sm_80")) << program.ptx;
  EXPECT_TRUE(contains(program.ptx, ".entry lstm_sigmoid_b8("));
  EXPECT_TRUE(
      contains(program.ptx, std::string(".entry ") + kSigmoidT8Mangled + "("));
  EXPECT_EQ(program.ptx.find('\0'), std::string::npos);
}

TEST(NvrtcCompiler, ReturnsLoweredNamesInRequestOrder) {
  CompiledProgram program;
  std::string error;
  CompileOptions options = sigmoidOptions();
  options.kernelNames = {"sigmoid_t<8>", "lstm_sigmoid_b8", "sigmoid_t<16>"};
  ASSERT_TRUE(
      compileCuda(kSigmoidSource, "sigmoid.cu", options, program, error))
      << error;
  ASSERT_EQ(program.loweredNames.size(), 3u);
  EXPECT_EQ(program.loweredNames[0], kSigmoidT8Mangled);
  EXPECT_EQ(program.loweredNames[1], "lstm_sigmoid_b8");
  EXPECT_EQ(program.loweredNames[2], "_Z9sigmoid_tILi16EEvPKfPf");
}

TEST(NvrtcCompiler, PtxOnlyAndCubinOnlyRequests) {
  CompiledProgram program;
  std::string error;
  CompileOptions ptxOnly = sigmoidOptions();
  ptxOnly.cubinArchs = {};
  ASSERT_TRUE(
      compileCuda(kSigmoidSource, "sigmoid.cu", ptxOnly, program, error))
      << error;
  EXPECT_TRUE(program.cubins.empty());
  EXPECT_TRUE(contains(program.ptx, ".entry lstm_sigmoid_b8("));
  EXPECT_EQ(program.loweredNames.size(), 2u);

  CompileOptions cubinOnly = sigmoidOptions();
  cubinOnly.ptxArch = "";
  ASSERT_TRUE(
      compileCuda(kSigmoidSource, "sigmoid.cu", cubinOnly, program, error))
      << error;
  EXPECT_EQ(program.cubins.size(), 2u);
  EXPECT_TRUE(program.ptx.empty());
  EXPECT_TRUE(program.ptxArch.empty());
}

TEST(NvrtcCompiler, SyntaxErrorNamesTheLineAndTheArch) {
  const char *source = "extern \"C\" __global__ void k(float *x) {\n"
                       "  float y = x[0];\n"
                       "  x[0] = y * 2.0f\n" // no ';': reported on line 4
                       "}\n";
  CompiledProgram program;
  program.ptx = "untouched";
  std::string error;
  EXPECT_FALSE(
      compileCuda(source, "broken.cu", sigmoidOptions(), program, error));
  EXPECT_TRUE(contains(error, "broken.cu(4): error")) << error;
  EXPECT_TRUE(contains(error, "sm_80")) << error;
  EXPECT_EQ(program.ptx, "untouched");
}

TEST(NvrtcCompiler, ErrorNamesTheArchThatFailed) {
  const char *source =
      "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n"
      "#error \"no Hopper version yet\"\n"
      "#endif\n"
      "extern \"C\" __global__ void k(float *x) { x[0] = 1; }\n";
  CompiledProgram program;
  std::string error;
  CompileOptions options = sigmoidOptions();
  options.kernelNames = {"k"};
  EXPECT_FALSE(compileCuda(source, "hopper.cu", options, program, error));
  EXPECT_TRUE(contains(error, "for sm_90 failed")) << error;
  EXPECT_TRUE(contains(error, "hopper.cu(2): catastrophic error")) << error;
  EXPECT_TRUE(contains(error, "no Hopper version yet")) << error;
}

TEST(NvrtcCompiler, ErrorKeepsErrorsAndDropsWarnings) {
  const char *source = "extern \"C\" __global__ void k(float *x) {\n"
                       "  int unused_variable;\n"    // warning
                       "  x[0] = undeclared_name;\n" // error
                       "}\n";
  CompiledProgram program;
  std::string error;
  EXPECT_FALSE(
      compileCuda(source, "mixed.cu", sigmoidOptions(), program, error));
  EXPECT_TRUE(contains(error, "mixed.cu(3): error")) << error;
  EXPECT_TRUE(contains(error, "undeclared_name")) << error;
  EXPECT_FALSE(contains(error, "mixed.cu(2)")) << error;
}

TEST(NvrtcCompiler, LongErrorListsAreCut) {
  std::string source = "extern \"C\" __global__ void k(float *x) {\n";
  for (int i = 0; i < 25; ++i)
    source += "  x[0] = undeclared_" + std::to_string(i) + ";\n";
  source += "}\n";
  CompiledProgram program;
  std::string error;
  CompileOptions options = sigmoidOptions();
  options.kernelNames = {"k"};
  EXPECT_FALSE(compileCuda(source, "many.cu", options, program, error));
  EXPECT_TRUE(contains(error, "undeclared_19")) << error;
  EXPECT_FALSE(contains(error, "undeclared_20")) << error;
  EXPECT_TRUE(contains(error, "... and 5 more errors")) << error;
}

TEST(NvrtcCompiler, UnknownKernelNameIsAnError) {
  CompiledProgram program;
  std::string error;
  CompileOptions options = sigmoidOptions();
  options.kernelNames = {"no_such_kernel"};
  EXPECT_FALSE(
      compileCuda(kSigmoidSource, "sigmoid.cu", options, program, error));
  EXPECT_TRUE(contains(error, "no_such_kernel")) << error;
}

TEST(NvrtcCompiler, DeviceFunctionIsNotAKernel) {
  CompiledProgram program;
  std::string error;
  CompileOptions options = sigmoidOptions();
  options.kernelNames = {"sigmoidRows<8>"};
  EXPECT_FALSE(
      compileCuda(kSigmoidSource, "sigmoid.cu", options, program, error));
  EXPECT_TRUE(contains(error, "sigmoidRows")) << error;
  EXPECT_TRUE(contains(error, "non-__global__ function")) << error;
}

TEST(NvrtcCompiler, DeviceVariableIsNotAKernel) {
  // NVRTC lowers names of __device__ variables too; only kernels are wanted.
  const char *source = "__device__ float lstm_table[4];\n"
                       "extern \"C\" __global__ void k(float *x) {\n"
                       "  x[0] = lstm_table[0];\n"
                       "}\n";
  CompiledProgram program;
  std::string error;
  CompileOptions options = sigmoidOptions();
  options.kernelNames = {"k", "lstm_table"};
  EXPECT_FALSE(compileCuda(source, "table.cu", options, program, error));
  EXPECT_TRUE(contains(error, "'lstm_table'")) << error;
  EXPECT_TRUE(contains(error, "not a __global__ kernel")) << error;
}

TEST(NvrtcCompiler, BadExtraOptionIsAnError) {
  CompiledProgram program;
  std::string error;
  CompileOptions options = sigmoidOptions();
  options.extraOptions = {"--no-such-option"};
  EXPECT_FALSE(
      compileCuda(kSigmoidSource, "sigmoid.cu", options, program, error));
  EXPECT_TRUE(contains(error, "NVRTC_ERROR_INVALID_OPTION")) << error;
  EXPECT_TRUE(contains(error, "sm_80")) << error;
}

TEST(NvrtcCompiler, ExtraOptionsReachNvrtc) {
  const char *source =
      "#ifndef CELL_FLAG\n"
      "#error \"CELL_FLAG not defined\"\n"
      "#endif\n"
      "extern \"C\" __global__ void k(float *x) { x[0] = 1; }\n";
  CompiledProgram program;
  std::string error;
  CompileOptions options = sigmoidOptions();
  options.kernelNames = {"k"};
  EXPECT_FALSE(compileCuda(source, "flag.cu", options, program, error));
  options.extraOptions = {"-DCELL_FLAG", "--use_fast_math"};
  EXPECT_TRUE(compileCuda(source, "flag.cu", options, program, error)) << error;
}

TEST(NvrtcCompiler, CudaHalfAndBfloat16HeadersAreFound) {
  const char *source = R"cuda(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void to_half(const float *in, __half *h,
                                   __nv_bfloat16 *b) {
  int i = threadIdx.x;
  h[i] = __float2half(in[i]);
  b[i] = __float2bfloat16(in[i]);
}
)cuda";
  CompiledProgram program;
  std::string error;
  CompileOptions options = sigmoidOptions();
  options.kernelNames = {"to_half"};
  ASSERT_TRUE(compileCuda(source, "half.cu", options, program, error)) << error;
  EXPECT_TRUE(contains(program.ptx, ".entry to_half("));
}

TEST(NvrtcCompiler, RejectsBadArchsBeforeCompiling) {
  // The source does not compile, so an arch error proves nothing was compiled.
  const char *broken = "this is not CUDA";
  for (std::string arch : {"sm_12", "foo", "sm_", "sm_80x", "compute_12",
                           "sm_80a", "sm_90f", ""}) {
    CompiledProgram program;
    std::string error;
    CompileOptions options;
    options.cubinArchs = {"sm_80", arch};
    EXPECT_FALSE(compileCuda(broken, "arch.cu", options, program, error));
    EXPECT_TRUE(contains(error, "'" + arch + "'")) << error;
    EXPECT_TRUE(contains(error, "sm_80, ")) << error; // the supported list
    EXPECT_FALSE(contains(error, "failed")) << error;
  }
}

TEST(NvrtcCompiler, RejectsArchOfTheWrongKind) {
  CompiledProgram program;
  std::string error;
  CompileOptions options = sigmoidOptions();
  options.cubinArchs = {"compute_80"};
  EXPECT_FALSE(
      compileCuda(kSigmoidSource, "sigmoid.cu", options, program, error));
  EXPECT_TRUE(contains(error, "'compute_80' must be sm_XX")) << error;

  options = sigmoidOptions();
  options.ptxArch = "sm_80";
  EXPECT_FALSE(
      compileCuda(kSigmoidSource, "sigmoid.cu", options, program, error));
  EXPECT_TRUE(contains(error, "'sm_80' must be compute_XX")) << error;

  options.cubinArchs = {};
  options.ptxArch = "";
  EXPECT_FALSE(
      compileCuda(kSigmoidSource, "sigmoid.cu", options, program, error));
  EXPECT_TRUE(contains(error, "no architecture requested")) << error;
}

TEST(NvrtcCompiler, CheckArch) {
  EXPECT_EQ(checkArch("sm_80"), "");
  EXPECT_EQ(checkArch("sm_90"), "");
  EXPECT_EQ(checkArch("sm_90a"), "");
  EXPECT_EQ(checkArch("sm_100f"), "");
  EXPECT_EQ(checkArch("compute_80"), "");
  EXPECT_TRUE(contains(checkArch("sm_12"), "unsupported architecture 'sm_12'"));
  EXPECT_TRUE(contains(checkArch("sm_70"), "unsupported architecture"));
  EXPECT_TRUE(contains(checkArch("foo"), "malformed architecture 'foo'"));
  EXPECT_TRUE(contains(checkArch("sm_8O"), "malformed"));
  EXPECT_TRUE(contains(checkArch("sm_99999999999"), "malformed"));
  EXPECT_TRUE(contains(checkArch("compute_"), "malformed"));
  EXPECT_TRUE(contains(checkArch("sm_80a"), "unsupported"));
}

TEST(NvrtcCompiler, SupportedArchsIncludeAmpereAndHopper) {
  std::vector<std::string> archs = supportedArchs();
  EXPECT_NE(std::find(archs.begin(), archs.end(), "sm_80"), archs.end());
  EXPECT_NE(std::find(archs.begin(), archs.end(), "sm_90"), archs.end());
  EXPECT_EQ(std::find(archs.begin(), archs.end(), "sm_12"), archs.end());
  for (const std::string &arch : archs)
    EXPECT_EQ(checkArch(arch), "") << arch;
}

TEST(NvrtcCompiler, PtxasAcceptsThePtx) {
  if (!std::filesystem::exists(CELL_PTXAS_PATH))
    GTEST_SKIP() << "ptxas not found at " << CELL_PTXAS_PATH;
  CompiledProgram program;
  std::string error;
  ASSERT_TRUE(compileCuda(kSigmoidSource, "sigmoid.cu", sigmoidOptions(),
                          program, error))
      << error;
  std::filesystem::path ptxFile = tempPath("sigmoid.ptx");
  std::filesystem::path cubinFile = tempPath("sigmoid.cubin");
  std::ofstream(ptxFile) << program.ptx;
  std::string command = std::string(CELL_PTXAS_PATH) + " -arch=sm_80 " +
                        ptxFile.string() + " -o " + cubinFile.string();
  int status = std::system(command.c_str());
  std::ifstream cubinStream(cubinFile, std::ios::binary);
  std::vector<char> cubin((std::istreambuf_iterator<char>(cubinStream)),
                          std::istreambuf_iterator<char>());
  std::filesystem::remove(ptxFile);
  std::filesystem::remove(cubinFile);
  EXPECT_EQ(status, 0) << command;
  EXPECT_TRUE(startsWithElfMagic(cubin));
}

TEST(NvrtcCompiler, ReportsCompileTimePerArch) {
  CompileOptions options = sigmoidOptions();
  double sum = 0;
  for (std::string arch : {"sm_80", "sm_90", "compute_80"}) {
    CompileOptions single = options;
    bool isPtx = arch.rfind("compute_", 0) == 0;
    single.cubinArchs =
        isPtx ? std::vector<std::string>{} : std::vector<std::string>{arch};
    single.ptxArch = isPtx ? arch : "";
    CompiledProgram program;
    std::string error;
    ASSERT_TRUE(
        compileCuda(kSigmoidSource, "sigmoid.cu", single, program, error))
        << error;
    EXPECT_GT(program.seconds, 0.0);
    sum += program.seconds;
    std::printf("NVRTC %s: %.1f ms\n", arch.c_str(), program.seconds * 1e3);
  }
  CompiledProgram all;
  std::string error;
  ASSERT_TRUE(compileCuda(kSigmoidSource, "sigmoid.cu", options, all, error))
      << error;
  std::printf("NVRTC all three: %.1f ms (sum of singles %.1f ms)\n",
              all.seconds * 1e3, sum * 1e3);
  EXPECT_GT(all.seconds, 0.0);
}

} // namespace
