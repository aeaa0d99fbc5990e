//===- gemm_bench.cpp - The CPU backend's GEMM alone, against its floors --===//
//
// packedGemm (runtime/backend/cpu/PackedGemm.h) of [m, k] x [k, n] for each
// row count, and in the same run: OpenBLAS sgemm of the same shape (as many
// threads), the machine's multiply-add peak for that many flops (a loop of
// independent fused multiply-adds in registers, as wide as the instruction
// set the GEMM uses) and the time to read B's bytes once. Each time is the
// best of many calls (the least disturbed on a shared machine) beside the
// median. Prints a table and writes a CSV. The task with the cell's
// element-wise work around it is task_bench's.
//
//   gemm_bench [--k 1024] [--n 4096] [--rows 1,2,4,...] [--threads N]
//              [--min-seconds S] [--csv FILE]
// (CELLRUN_CPU_ISA=avx2 or generic picks lesser kernels, as for cellrun.)
//
//===----------------------------------------------------------------------===//
#include "BenchTiming.h"
#include "WordFold.h"
#include "backend/cpu/CpuIsa.h"
#include "backend/cpu/PackedGemm.h"
#include "backend/cpu/ThreadPool.h"

#include <CLI/CLI.hpp>

#include <cblas.h>

extern "C" void openblas_set_num_threads(int threads);

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace cellrun;
using cellbench::timeCalls;
using cellbench::Timing;
constexpr size_t kMinCalls = 7, kMaxCalls = 20000;

namespace {

constexpr int64_t kPeakIterations = 1 << 20;

#if defined(__x86_64__)
/// Multiply-adds in registers: 10 independent accumulators (enough for
/// two pipes of four or five cycles), kPeakIterations rounds. Returns the
/// flops done.
__attribute__((target("avx2,fma"))) double fmaLoopAvx2(float seed) {
  __m256 acc[10];
  for (int i = 0; i < 10; ++i)
    acc[i] = _mm256_set1_ps(seed + i);
  const __m256 scale = _mm256_set1_ps(0.999f), add = _mm256_set1_ps(1e-3f);
  for (int64_t it = 0; it < kPeakIterations; ++it)
    for (int i = 0; i < 10; ++i)
      acc[i] = _mm256_fmadd_ps(acc[i], scale, add);
  __m256 sum = acc[0];
  for (int i = 1; i < 10; ++i)
    sum = _mm256_add_ps(sum, acc[i]);
  volatile float keep = _mm256_cvtss_f32(sum);
  (void)keep;
  return 2.0 * 8 * 10 * double(kPeakIterations);
}
__attribute__((target("avx512f"))) double fmaLoopAvx512(float seed) {
  __m512 acc[10];
  for (int i = 0; i < 10; ++i)
    acc[i] = _mm512_set1_ps(seed + i);
  const __m512 scale = _mm512_set1_ps(0.999f), add = _mm512_set1_ps(1e-3f);
  for (int64_t it = 0; it < kPeakIterations; ++it)
    for (int i = 0; i < 10; ++i)
      acc[i] = _mm512_fmadd_ps(acc[i], scale, add);
  __m512 sum = acc[0];
  for (int i = 1; i < 10; ++i)
    sum = _mm512_add_ps(sum, acc[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  volatile float keep = lanes[0];
  (void)keep;
  return 2.0 * 16 * 10 * double(kPeakIterations);
}
#endif

/// The machine's multiply-add peak in flops a second, every worker of
/// `pool` running the loop of `isa`'s width (0 without one).
double peakFlops(cpu::ThreadPool &pool, cpu::CpuIsa isa, double minSeconds) {
#if defined(__x86_64__)
  if (isa == cpu::CpuIsa::Generic)
    return 0;
  std::vector<double> flopsOf(pool.size(), 0.0);
  Timing timing = timeCalls(
      [&] {
        pool.parallelFor(
            pool.size(), [&](unsigned worker, int64_t begin, int64_t end) {
              double done = 0;
              for (int64_t loop = begin; loop < end; ++loop)
                done += isa == cpu::CpuIsa::Avx512 ? fmaLoopAvx512(1.0f)
                                                   : fmaLoopAvx2(1.0f);
              flopsOf[worker] = done;
            });
      },
      minSeconds, kMinCalls, kMaxCalls);
  double flops = 0;
  for (double done : flopsOf)
    flops += done;
  return flops / timing.best;
#else
  (void)pool, (void)isa, (void)minSeconds;
  return 0;
#endif
}

/// Seconds to read `data` once, split among the pool's workers (under a
/// megabyte, on the calling thread: waking a worker costs more).
Timing readSeconds(const std::vector<float> &data, cpu::ThreadPool &pool,
                   double minSeconds) {
  const auto *words = reinterpret_cast<const uint64_t *>(data.data());
  int64_t count = static_cast<int64_t>(data.size() * sizeof(float) / 8);
  std::vector<uint64_t> sinks(pool.size());
  auto fold = [&](unsigned worker, int64_t begin, int64_t end) {
    sinks[worker] ^= cellbench::foldWords(words, begin, end);
  };
  bool alone = data.size() * sizeof(float) < (1u << 20);
  Timing timing = timeCalls(
      [&] {
        if (alone)
          fold(0, 0, count);
        else
          pool.parallelFor(count, fold);
      },
      minSeconds, kMinCalls, kMaxCalls);
  volatile uint64_t keep = sinks[0];
  (void)keep;
  return timing;
}

std::vector<int64_t> parseRows(const std::string &text) {
  std::vector<int64_t> rows;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma - start);
    if (!item.empty())
      rows.push_back(std::stoll(item));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return rows;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"The CPU backend's GEMM (packedGemm) by row count, next to "
               "OpenBLAS sgemm, the multiply-add peak and one read of B."};
  int64_t k = 1024, n = 4096;
  std::string rowsText = "1,2,3,4,6,8,12,16,24,32,64,128,512", csvPath;
  unsigned threads = 1;
  double minSeconds = 0.3;
  app.add_option("--k", k, "depth (B's rows)")->check(CLI::PositiveNumber);
  app.add_option("--n", n, "columns")->check(CLI::PositiveNumber);
  app.add_option("--rows", rowsText, "row counts, comma-separated");
  app.add_option("--threads", threads, "workers (the caller included)")
      ->check(CLI::Range(1u, 256u));
  app.add_option("--min-seconds", minSeconds, "time per measurement");
  app.add_option("--csv", csvPath, "write the rows here");
  CLI11_PARSE(app, argc, argv);
  std::vector<int64_t> rowCounts;
  try {
    rowCounts = parseRows(rowsText);
  } catch (const std::exception &) {
    std::fprintf(stderr, "gemm_bench: --rows takes numbers: %s\n",
                 rowsText.c_str());
    return 2;
  }
  if (rowCounts.empty() ||
      *std::min_element(rowCounts.begin(), rowCounts.end()) < 1) {
    std::fprintf(stderr, "gemm_bench: --rows needs row counts of 1 or more\n");
    return 2;
  }
  cpu::CpuIsa isa = cpu::detectCpuIsa(); // CELLRUN_CPU_ISA may lower it
  int64_t largest = *std::max_element(rowCounts.begin(), rowCounts.end());
  std::mt19937 random(7);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> a(size_t(largest * k)), weights(size_t(n * k));
  for (float &x : a)
    x = value(random);
  for (float &x : weights)
    x = value(random);
  // B as a Linear layer's weight ([n, k], transposed), as the artifacts
  // hold them.
  cpu::PackedMatrix packed(weights.data(), k, n, true);
  std::vector<float> d(size_t(largest * n)), reference(size_t(largest * n));
  cpu::ThreadPool pool(threads);
  openblas_set_num_threads(static_cast<int>(threads));

  double peak = peakFlops(pool, isa, minSeconds);
  Timing read = readSeconds(weights, pool, minSeconds);
  std::printf("gemm_bench: [m, %lld] x [%lld, %lld], %u thread(s), %s "
              "kernels\n",
              (long long)k, (long long)k, (long long)n, threads,
              cpu::cpuIsaName(isa));
  std::printf("multiply-add peak %.1f GFLOP/s; one read of B (%.1f MB) "
              "%.1f us (%.1f GB/s)\n\n",
              peak * 1e-9, weights.size() * 4e-6, read.best * 1e6,
              weights.size() * 4.0 / read.best * 1e-9);
  std::printf("%5s %10s %10s %10s %8s %10s %10s %10s %10s\n", "rows", "ours us",
              "median", "sgemm us", "ours/sg", "GFLOP/s", "of peak", "floor us",
              "ours/floor");
  std::ofstream csv;
  if (!csvPath.empty()) {
    csv.open(csvPath);
    csv << "rows,k,n,threads,isa,ours_best_us,ours_median_us,sgemm_best_us,"
           "peak_gflops,read_us,floor_us\n";
  }
  for (int64_t m : rowCounts) {
    Timing ours = timeCalls(
        [&] {
          cpu::packedGemm(a.data(), k, m, packed, {}, d.data(), n, &pool, isa);
        },
        minSeconds, kMinCalls, kMaxCalls);
    Timing sgemm = timeCalls(
        [&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(m), int(n),
                      int(k), 1.0f, a.data(), int(k), weights.data(), int(k),
                      0.0f, reference.data(), int(n));
        },
        minSeconds, kMinCalls, kMaxCalls);
    // A check that the two computed the same product (not a timing).
    double worst = 0;
    for (size_t i = 0; i < size_t(m * n); ++i)
      worst = std::max(worst, double(std::abs(d[i] - reference[i])));
    if (worst > 1e-2) {
      std::fprintf(stderr,
                   "gemm_bench: %lld rows: ours and sgemm differ by %g\n",
                   (long long)m, worst);
      return 1;
    }
    double flops = 2.0 * double(m) * double(n) * double(k);
    double peakSeconds = peak > 0 ? flops / peak : 0;
    double floor = std::max(peakSeconds, read.best);
    std::printf(
        "%5lld %10.1f %10.1f %10.1f %8.2f %10.1f %9.0f%% %10.1f %10.2f\n",
        (long long)m, ours.best * 1e6, ours.median * 1e6, sgemm.best * 1e6,
        ours.best / sgemm.best, flops / ours.best * 1e-9,
        peak > 0 ? 100.0 * flops / ours.best / peak : 0.0, floor * 1e6,
        ours.best / floor);
    if (csv)
      csv << m << ',' << k << ',' << n << ',' << threads << ','
          << cpu::cpuIsaName(isa) << ',' << ours.best * 1e6 << ','
          << ours.median * 1e6 << ',' << sgemm.best * 1e6 << ',' << peak * 1e-9
          << ',' << read.best * 1e6 << ',' << floor * 1e6 << '\n';
  }
  std::printf("\nfloor: the larger of the flops at the peak and one read of "
              "B; times are the best call (median beside ours)\n");
  return 0;
}
