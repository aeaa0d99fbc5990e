//===- NvrtcCompiler.cpp - CUDA C++ to CUBIN/PTX with NVRTC ---------------===//
//
// One nvrtcProgram per target architecture (NVRTC compiles for a single
// target per nvrtcCompileProgram), compiled one after another. Every NVRTC
// call is checked; failures become messages, never aborts.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/NvrtcCompiler.h"

#include <nvrtc.h>

#include <chrono>
#include <exception>
#include <filesystem>
#include <sstream>

namespace cellc::codegen {
namespace {

constexpr const char *kCubinPrefix = "sm_";
constexpr const char *kPtxPrefix = "compute_";
/// At most this many diagnostics are copied from NVRTC's log into a message.
constexpr int kMaxDiagnostics = 20;

/// "" on success, otherwise "<call> failed: <NVRTC's error string>".
std::string checkNvrtc(nvrtcResult result, const char *call) {
  if (result == NVRTC_SUCCESS)
    return "";
  return std::string(call) + " failed: " + nvrtcGetErrorString(result);
}

bool startsWith(const std::string &text, const std::string &prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

bool isDigits(const std::string &text) {
  if (text.empty())
    return false;
  for (char c : text)
    if (c < '0' || c > '9')
      return false;
  return true;
}

/// The numbers NVRTC reports (75, 80, ...); read once.
const std::vector<int> &supportedArchNumbers() {
  static const std::vector<int> numbers = [] {
    int count = 0;
    if (nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0)
      return std::vector<int>();
    std::vector<int> archs(count);
    if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS)
      return std::vector<int>();
    return archs;
  }();
  return numbers;
}

bool isSupportedNumber(int number) {
  for (int supported : supportedArchNumbers())
    if (supported == number)
      return true;
  return false;
}

std::string joinedSupportedArchs() {
  std::string joined;
  for (const std::string &arch : supportedArchs())
    joined += (joined.empty() ? "" : ", ") + arch;
  return joined.empty() ? "none (nvrtcGetSupportedArchs failed)" : joined;
}

/// Arch-specific ('a', from sm_90) and family ('f', from sm_100) variants.
bool isValidSuffix(char suffix, int number) {
  if (suffix == 'a')
    return number >= 90;
  if (suffix == 'f')
    return number >= 100;
  return false;
}

/// Owns one nvrtcProgram.
class Program {
public:
  Program() = default;
  Program(const Program &) = delete;
  Program &operator=(const Program &) = delete;
  ~Program() {
    if (handle)
      nvrtcDestroyProgram(&handle);
  }
  nvrtcProgram handle = nullptr;
};

std::string programLog(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size == 0)
    return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS)
    return "";
  log.resize(log.find('\0') == std::string::npos ? log.size() : log.find('\0'));
  return log;
}

bool isDiagnosticContext(const std::string &line) {
  return !line.empty() && (line[0] == ' ' || line[0] == '\t');
}

/// The log's error diagnostics ("prog.cu(4): error: ...", "nvrtc: error: ...")
/// with the source and caret lines NVRTC prints under each, without warnings;
/// the whole log if it names no error.
std::string errorLines(const std::string &log) {
  std::istringstream lines(log);
  std::string line, picked;
  int diagnostics = 0;
  bool inError = false;
  while (std::getline(lines, line)) {
    if (!isDiagnosticContext(line)) {
      inError = line.find("error:") != std::string::npos;
      diagnostics += inError;
    }
    if (inError && diagnostics <= kMaxDiagnostics)
      picked += line + "\n";
  }
  if (diagnostics > kMaxDiagnostics)
    picked += "... and " + std::to_string(diagnostics - kMaxDiagnostics) +
              " more errors\n";
  return diagnostics ? picked : log;
}

/// Include directories for CUDA headers (<cuda_fp16.h>, and CCCL's
/// <cuda/std/...>, which CUDA 13 keeps in include/cccl) if they exist here.
std::vector<std::string> cudaIncludeOptions() {
  std::vector<std::string> options;
#ifdef CELL_CUDA_INCLUDE_DIR
  std::error_code ignored;
  std::filesystem::path dir(CELL_CUDA_INCLUDE_DIR);
  if (!std::filesystem::is_directory(dir, ignored))
    return options;
  options.push_back("-I" + dir.string());
  if (std::filesystem::is_directory(dir / "cccl", ignored))
    options.push_back("-I" + (dir / "cccl").string());
#endif
  return options;
}

std::vector<std::string> nvrtcOptions(const std::string &arch,
                                      const CompileOptions &options) {
  std::vector<std::string> result = {"--gpu-architecture=" + arch,
                                     "-std=c++17"};
  for (const std::string &include : cudaIncludeOptions())
    result.push_back(include);
  result.insert(result.end(), options.extraOptions.begin(),
                options.extraOptions.end());
  return result;
}

/// What one NVRTC program produced.
struct TargetOutput {
  std::vector<char> cubin;
  std::string ptx;
  std::vector<std::string> loweredNames;
};

std::string readCubin(nvrtcProgram program, std::vector<char> &cubin) {
  size_t size = 0;
  if (std::string err =
          checkNvrtc(nvrtcGetCUBINSize(program, &size), "nvrtcGetCUBINSize");
      !err.empty())
    return err;
  if (size == 0)
    return "nvrtcGetCUBINSize returned an empty CUBIN";
  cubin.resize(size);
  return checkNvrtc(nvrtcGetCUBIN(program, cubin.data()), "nvrtcGetCUBIN");
}

std::string readPtx(nvrtcProgram program, std::string &ptx) {
  size_t size = 0;
  if (std::string err =
          checkNvrtc(nvrtcGetPTXSize(program, &size), "nvrtcGetPTXSize");
      !err.empty())
    return err;
  ptx.assign(size, '\0');
  if (std::string err =
          checkNvrtc(nvrtcGetPTX(program, ptx.data()), "nvrtcGetPTX");
      !err.empty())
    return err;
  ptx.resize(ptx.find('\0') == std::string::npos ? ptx.size() : ptx.find('\0'));
  return "";
}

std::string readLoweredNames(nvrtcProgram program,
                             const std::vector<std::string> &kernelNames,
                             std::vector<std::string> &loweredNames) {
  for (const std::string &name : kernelNames) {
    const char *lowered = nullptr;
    if (std::string err =
            checkNvrtc(nvrtcGetLoweredName(program, name.c_str(), &lowered),
                       "nvrtcGetLoweredName");
        !err.empty())
      return err + " for '" + name + "'";
    if (!lowered)
      return "nvrtcGetLoweredName gave no name for '" + name + "'";
    loweredNames.push_back(lowered);
  }
  return "";
}

/// Lowered names must be kernels: the PTX declares each as `.entry name(`.
std::string checkKernelsAreEntries(const std::string &ptx,
                                   const std::vector<std::string> &kernelNames,
                                   const std::vector<std::string> &lowered) {
  for (size_t i = 0; i < lowered.size(); ++i)
    if (ptx.find(".entry " + lowered[i] + "(") == std::string::npos)
      return "'" + kernelNames[i] + "' (lowered '" + lowered[i] +
             "') is not a __global__ kernel";
  return "";
}

/// Compiles `source` for one target; `arch` is sm_XX (CUBIN) or compute_XX.
std::string compileTarget(const std::string &source,
                          const std::string &programName,
                          const std::string &arch,
                          const CompileOptions &options, TargetOutput &output) {
  Program program;
  if (std::string err = checkNvrtc(
          nvrtcCreateProgram(&program.handle, source.c_str(),
                             programName.c_str(), 0, nullptr, nullptr),
          "nvrtcCreateProgram");
      !err.empty())
    return err;
  for (const std::string &name : options.kernelNames)
    if (std::string err =
            checkNvrtc(nvrtcAddNameExpression(program.handle, name.c_str()),
                       "nvrtcAddNameExpression");
        !err.empty())
      return err + " for '" + name + "'";

  std::vector<std::string> optionStrings = nvrtcOptions(arch, options);
  std::vector<const char *> optionPointers;
  for (const std::string &option : optionStrings)
    optionPointers.push_back(option.c_str());
  nvrtcResult compiled = nvrtcCompileProgram(
      program.handle, static_cast<int>(optionPointers.size()),
      optionPointers.data());
  if (compiled != NVRTC_SUCCESS)
    return std::string(nvrtcGetErrorString(compiled)) + "\n" +
           errorLines(programLog(program.handle));

  if (startsWith(arch, kCubinPrefix))
    if (std::string err = readCubin(program.handle, output.cubin); !err.empty())
      return err;
  if (std::string err = readPtx(program.handle, output.ptx); !err.empty())
    return err;
  if (std::string err = readLoweredNames(program.handle, options.kernelNames,
                                         output.loweredNames);
      !err.empty())
    return err;
  return checkKernelsAreEntries(output.ptx, options.kernelNames,
                                output.loweredNames);
}

/// Every requested architecture is well-formed, supported and of the right
/// kind (sm_XX for CUBINs, compute_XX for PTX).
std::string checkRequestedArchs(const CompileOptions &options) {
  if (options.cubinArchs.empty() && options.ptxArch.empty())
    return "no architecture requested (cubinArchs and ptxArch are empty)";
  for (const std::string &arch : options.cubinArchs) {
    if (std::string err = checkArch(arch); !err.empty())
      return err;
    if (!startsWith(arch, kCubinPrefix))
      return "CUBIN architecture '" + arch + "' must be sm_XX";
  }
  if (options.ptxArch.empty())
    return "";
  if (std::string err = checkArch(options.ptxArch); !err.empty())
    return err;
  if (!startsWith(options.ptxArch, kPtxPrefix))
    return "PTX architecture '" + options.ptxArch + "' must be compute_XX";
  return "";
}

bool compileAllTargets(const std::string &source,
                       const std::string &programName,
                       const CompileOptions &options, CompiledProgram &result,
                       std::string &error) {
  std::vector<std::string> targets = options.cubinArchs;
  if (!options.ptxArch.empty())
    targets.push_back(options.ptxArch);
  for (const std::string &arch : targets) {
    TargetOutput output;
    if (std::string err =
            compileTarget(source, programName, arch, options, output);
        !err.empty()) {
      error =
          programName + ": NVRTC compilation for " + arch + " failed: " + err;
      return false;
    }
    if (result.loweredNames.empty())
      result.loweredNames = output.loweredNames;
    if (arch == options.ptxArch)
      result.ptx = std::move(output.ptx);
    else
      result.cubins.push_back({arch, std::move(output.cubin)});
  }
  result.ptxArch = options.ptxArch;
  return true;
}

} // namespace

std::vector<std::string> supportedArchs() {
  std::vector<std::string> archs;
  for (int number : supportedArchNumbers())
    archs.push_back(kCubinPrefix + std::to_string(number));
  return archs;
}

std::string checkArch(const std::string &arch) {
  std::string prefix = startsWith(arch, kCubinPrefix) ? kCubinPrefix
                       : startsWith(arch, kPtxPrefix) ? kPtxPrefix
                                                      : "";
  std::string rest = arch.substr(prefix.size());
  char suffix = !rest.empty() && (rest.back() == 'a' || rest.back() == 'f')
                    ? rest.back()
                    : '\0';
  std::string digits = suffix ? rest.substr(0, rest.size() - 1) : rest;
  std::string supported = "; NVRTC supports " + joinedSupportedArchs() +
                          " (sm_XX for CUBIN, compute_XX for PTX)";
  if (prefix.empty() || !isDigits(digits) || digits.size() > 4)
    return "malformed architecture '" + arch +
           "', expected sm_XX or compute_XX" + supported;
  int number = std::stoi(digits);
  if (!isSupportedNumber(number))
    return "unsupported architecture '" + arch + "'" + supported;
  if (suffix && !isValidSuffix(suffix, number))
    return "unsupported architecture '" + arch +
           "' ('a' variants exist from sm_90, 'f' from sm_100)" + supported;
  return "";
}

bool compileCuda(const std::string &source, const std::string &programName,
                 const CompileOptions &options, CompiledProgram &result,
                 std::string &error) {
  try {
    if (std::string err = checkRequestedArchs(options); !err.empty()) {
      error = programName + ": " + err;
      return false;
    }
    auto start = std::chrono::steady_clock::now();
    CompiledProgram compiled;
    if (!compileAllTargets(source, programName, options, compiled, error))
      return false;
    compiled.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    result = std::move(compiled);
    return true;
  } catch (const std::exception &e) {
    error = programName + ": NVRTC compilation failed: " + e.what();
    return false;
  }
}

} // namespace cellc::codegen
