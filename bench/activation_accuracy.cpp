//===- activation_accuracy.cpp - CPU activations against libm -------------===//
//-===//
//
// Runs the CPU backend's tanh, sigmoid and exp (VectorMath.h) over every
// float of a range (or every STRIDE-th one) on each instruction set this
// processor has, compares each result with the C library's double-precision
// function and prints, per function and instruction set, the worst error in
// ulp (of the exact result's magnitude, as the unit tests count), where it
// is, the mean, and the share of results that are the correctly rounded
// float. Not a test: every float of tanh's range takes about a minute.
//
//   activation_accuracy [--function tanh|sigmoid|exp|all] [--stride N]
//                       [--csv FILE]
//
//===----------------------------------------------------------------------===//
#include "backend/cpu/CpuIsa.h"
#include "backend/cpu/VectorMath.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace cellrun::cpu;

namespace {
struct Function {
  const char *name;
  void (*array)(const float *, float *, int64_t, CpuIsa);
  double (*exact)(double);
  float low, high; // the floats checked; beyond them the result is constant
};

double exactSigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double exactTanh(double x) { return std::tanh(x); }
double exactExp(double x) { return std::exp(x); }

const Function kFunctions[] = {
    // tanh past 9.0109 is 1 in fp32; sigmoid below -104 underflows.
    {"tanh", tanhArray, exactTanh, -9.5f, 9.5f},
    {"sigmoid", sigmoidArray, exactSigmoid, -104.0f, 20.0f},
    {"exp", expArray, exactExp, -87.0f, 88.5f},
};

struct Errors {
  double worst = 0, sum = 0, worstAt = 0;
  uint64_t count = 0, correctlyRounded = 0;
};

double ulpsOff(float got, double want) {
  double spacing =
      std::ldexp(1.0, std::ilogb(std::max(std::fabs(want), 1e-37)) - 23);
  return std::fabs(got - want) / spacing;
}

uint32_t bitsOf(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  return bits;
}

float floatOf(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof(x));
  return x;
}

/// The floats of [low, high] in order, every stride-th one, handed over in
/// chunks: the negative ones by falling bit patterns, then the rest.
template <typename Visit>
void forEachFloat(float low, float high, uint32_t stride, Visit visit) {
  std::vector<float> chunk;
  chunk.reserve(1 << 20);
  auto flush = [&] {
    visit(chunk);
    chunk.clear();
  };
  auto add = [&](float x) {
    chunk.push_back(x);
    if (chunk.size() == chunk.capacity())
      flush();
  };
  if (low < 0)
    for (uint64_t bits = bitsOf(low); bits > bitsOf(-0.0f); bits -= stride)
      add(floatOf(static_cast<uint32_t>(bits)));
  for (uint64_t bits = 0; bits <= bitsOf(high); bits += stride)
    add(floatOf(static_cast<uint32_t>(bits)));
  flush();
}

Errors measure(const Function &function, CpuIsa isa, uint32_t stride) {
  Errors errors;
  std::vector<float> results;
  forEachFloat(function.low, function.high, stride,
               [&](const std::vector<float> &inputs) {
                 results.resize(inputs.size());
                 function.array(inputs.data(), results.data(),
                                static_cast<int64_t>(inputs.size()), isa);
                 for (size_t i = 0; i < inputs.size(); ++i) {
                   double want = function.exact(inputs[i]);
                   if (std::fabs(want) < 1e-30)
                     continue; // subnormal results: absolute error
                   double off = ulpsOff(results[i], want);
                   errors.sum += off;
                   ++errors.count;
                   errors.correctlyRounded +=
                       results[i] == static_cast<float>(want);
                   if (off > errors.worst) {
                     errors.worst = off;
                     errors.worstAt = inputs[i];
                   }
                 }
               });
  return errors;
}
} // namespace

int main(int argc, char **argv) {
  CLI::App app{"The CPU activations against the C library, every float"};
  std::string which = "all", csvPath;
  uint32_t stride = 1;
  app.add_option("--function", which, "tanh, sigmoid, exp or all")
      ->check(CLI::IsMember({"tanh", "sigmoid", "exp", "all"}));
  app.add_option("--stride", stride, "check every N-th float (default 1)")
      ->check(CLI::PositiveNumber);
  app.add_option("--csv", csvPath, "also write the table as CSV here");
  CLI11_PARSE(app, argc, argv);

  std::vector<CpuIsa> isas = {CpuIsa::Generic};
  if (cpuHasAvx2())
    isas.push_back(CpuIsa::Avx2);
  if (cpuHasAvx512())
    isas.push_back(CpuIsa::Avx512);
  std::string csv = "function,isa,floats,worst_ulp,worst_at,mean_ulp,"
                    "correctly_rounded\n";
  std::printf("| function | isa | floats | worst ulp | at | mean ulp | "
              "correctly rounded |\n|---|---|---:|---:|---:|---:|---:|\n");
  for (const Function &function : kFunctions) {
    if (which != "all" && which != function.name)
      continue;
    for (CpuIsa isa : isas) {
      Errors errors = measure(function, isa, stride);
      double share =
          100.0 * errors.correctlyRounded / std::max<uint64_t>(errors.count, 1);
      double mean = errors.sum / std::max<uint64_t>(errors.count, 1);
      std::printf("| %s | %s | %llu | %.3f | %.9g | %.4f | %.2f%% |\n",
                  function.name, cpuIsaName(isa),
                  static_cast<unsigned long long>(errors.count), errors.worst,
                  errors.worstAt, mean, share);
      std::fflush(stdout);
      char line[256];
      std::snprintf(line, sizeof(line), "%s,%s,%llu,%.4f,%.9g,%.5f,%.4f\n",
                    function.name, cpuIsaName(isa),
                    static_cast<unsigned long long>(errors.count), errors.worst,
                    errors.worstAt, mean, share);
      csv += line;
    }
  }
  if (!csvPath.empty()) {
    std::ofstream out(csvPath);
    out << csv;
    if (!out) {
      std::fprintf(stderr, "activation_accuracy: cannot write %s\n",
                   csvPath.c_str());
      return 1;
    }
  }
  return 0;
}
