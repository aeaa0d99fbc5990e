//===- activation_accuracy.cpp - CPU activations against libm -------------===//
//-===//
//
// Runs the CPU backend's tanh, sigmoid and exp (VectorMath.h) over every
// float of a range (or every STRIDE-th one) on each instruction set this
// processor has, compares each result with the C library's double-precision
// function and prints, per function and instruction set, the worst error in
// ulp (of the exact result's magnitude, as the unit tests count), where it
// is, the mean, and the share of results that are the correctly rounded
// float, and counts the results whose bits differ from the portable
// version's (none may). Not a test: every float of tanh's range takes about
// three minutes on the 2-core VM (the exact values once, then each
// instruction set's results).
//
//   activation_accuracy [--function tanh|sigmoid|exp|all] [--stride N]
//                       [--csv FILE]
//
//===----------------------------------------------------------------------===//
#include "backend/cpu/CpuIsa.h"
#include "backend/cpu/VectorMath.h"

#include <CLI/CLI.hpp>

#include <algorithm>
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
  uint64_t differentBits = 0; // from the portable version's results
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
  // The two loops walk bit patterns: below zero down from low, then up from
  // +0 to high (a negative high would walk every positive float).
  if (!(low < high && high >= 0))
    return;
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

/// Every ISA's errors over the function's floats (the exact values found once
/// a float), and how many results differ in their bits from the portable
/// version's (they must not: VectorMath.h).
std::vector<Errors> measure(const Function &function,
                            const std::vector<CpuIsa> &isas, uint32_t stride) {
  std::vector<Errors> errors(isas.size());
  std::vector<std::vector<float>> results(isas.size());
  forEachFloat(function.low, function.high, stride,
               [&](const std::vector<float> &inputs) {
                 for (size_t v = 0; v < isas.size(); ++v) {
                   results[v].resize(inputs.size());
                   function.array(inputs.data(), results[v].data(),
                                  static_cast<int64_t>(inputs.size()), isas[v]);
                   for (size_t i = 0; i < inputs.size(); ++i)
                     errors[v].differentBits +=
                         bitsOf(results[v][i]) != bitsOf(results[0][i]);
                 }
                 for (size_t i = 0; i < inputs.size(); ++i) {
                   double want = function.exact(inputs[i]);
                   if (std::fabs(want) < 1e-30)
                     continue; // results near or in the subnormals: left out
                   for (size_t v = 0; v < isas.size(); ++v) {
                     float got = results[v][i];
                     double off = ulpsOff(got, want);
                     Errors &e = errors[v];
                     e.sum += off;
                     ++e.count;
                     e.correctlyRounded += got == static_cast<float>(want);
                     if (off > e.worst) {
                       e.worst = off;
                       e.worstAt = inputs[i];
                     }
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
                    "correctly_rounded,bits_unlike_generic\n";
  std::printf("| function | isa | floats | worst ulp | at | mean ulp | "
              "correctly rounded | bits unlike generic |\n"
              "|---|---|---:|---:|---:|---:|---:|---:|\n");
  bool portable = true;
  for (const Function &function : kFunctions) {
    if (which != "all" && which != function.name)
      continue;
    std::vector<Errors> errors = measure(function, isas, stride);
    for (size_t v = 0; v < isas.size(); ++v) {
      const Errors &e = errors[v];
      double share =
          100.0 * e.correctlyRounded / std::max<uint64_t>(e.count, 1);
      double mean = e.sum / std::max<uint64_t>(e.count, 1);
      portable &= e.differentBits == 0;
      char line[256];
      std::snprintf(line, sizeof(line), "%s,%s,%llu,%.4f,%.9g,%.5f,%.4f,%llu\n",
                    function.name, cpuIsaName(isas[v]),
                    static_cast<unsigned long long>(e.count), e.worst,
                    e.worstAt, mean, share,
                    static_cast<unsigned long long>(e.differentBits));
      csv += line;
      std::printf("| %s | %s | %llu | %.3f | %.9g | %.4f | %.2f%% | %llu |\n",
                  function.name, cpuIsaName(isas[v]),
                  static_cast<unsigned long long>(e.count), e.worst, e.worstAt,
                  mean, share,
                  static_cast<unsigned long long>(e.differentBits));
      std::fflush(stdout);
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
  if (!portable)
    std::fprintf(stderr,
                 "activation_accuracy: an instruction set's bits differ "
                 "from the portable version's\n");
  return portable ? 0 : 1;
}
