//===- CudaGemmSkinny.cpp - The skinny kernel's part of a GEMM step -------===//
//
// CudaGemm's contest between cuBLASLt's fastest proposal and the cell
// code's skinny kernels (SkinnyGemmKernel.h) at a few k-split counts,
// the kernel's launch, and the timing both sides share.
//
//===----------------------------------------------------------------------===//
#include "CudaGemm.h"

#include "CudaCheck.h"
#include "CudaLaunch.h"
#include "CudaTiming.h"

#include "SkinnyGemmKernel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace cellrun;
using namespace cellrun::cuda;

Status CudaGemm::contestSkinny(cudaStream_t stream, float cublasMicros) {
  // About eight blocks a multiprocessor, with the partial sums (written and
  // read once) at most a quarter of the weights' bytes: the base split count
  // keeps them under an eighth, and the candidates go up to twice the base.
  int64_t tiles = (n_ + cellpack::kSkinnyGemmTileColumns - 1) /
                  cellpack::kSkinnyGemmTileColumns;
  int64_t base = (8 * std::max(skinny_.multiprocessors, 1) + tiles - 1) / tiles;
  base = std::max<int64_t>(1, std::min(base, k_ / (8 * m_)));
  std::vector<int64_t> candidates = {base * 2, base, base / 2, base / 4, 1};
  if (skinny_.splits > 0)
    candidates = {skinny_.splits};
  std::vector<cellpack::SkinnyGemmLaunch> launches;
  for (int64_t splits : candidates) {
    cellpack::SkinnyGemmLaunch launch =
        cellpack::skinnyGemmLaunch(n_, k_, splits);
    bool seen = std::any_of(launches.begin(), launches.end(),
                            [&](auto &l) { return l.splits == launch.splits; });
    if (!seen)
      launches.push_back(launch);
  }
  int maxSplits = 1;
  for (const auto &launch : launches)
    maxSplits = std::max(maxSplits, launch.splits);
  if (maxSplits > 1) {
    auto partial = DeviceBuffer::allocate(static_cast<size_t>(maxSplits) * m_ *
                                          n_ * sizeof(float));
    auto counters = DeviceBuffer::allocate(tiles * sizeof(unsigned));
    if (!partial.ok())
      return partial.status();
    if (!counters.ok())
      return counters.status();
    partial_ = std::move(partial).value();
    counters_ = std::move(counters).value();
  }
  // CELL_CUDA_GEMM=skinny or =cublas decides the contest (tests, A/B
  // runs); =skinny-gather also keeps only the kernels that gather A.
  const char *forced = std::getenv("CELL_CUDA_GEMM");
  bool gatherOnly = forced && std::strcmp(forced, "skinny-gather") == 0;
  float best = -1.0f;
  cellpack::SkinnyGemmLaunch fastest;
  SkinnyGemmVariantKernel chosen{};
  std::string failures; // variants that could not run, and why
  for (const SkinnyGemmVariantKernel &variant : skinny_.variants) {
    if (variant.maxRows < m_ || (gatherOnly && !variant.gathersA))
      continue;
    skinnyKernel_ = variant;
    // A variant that fails to launch (its resources, say) leaves the
    // contest to the others.
    Status timed = [&]() -> Status {
      for (const auto &launch : launches) {
        splits_ = launch.splits;
        kPerSplit_ = launch.kPerSplit;
        grid_ = launch.grid();
        auto micros = timeEnqueuedMicros(
            stream, [&] { return enqueueSkinny(stream); }); // after a warm-up
        if (!micros.ok())
          return micros.status();
        if (best < 0.0f || micros.value() < best) {
          best = micros.value();
          fastest = launch;
          chosen = variant;
        }
      }
      return Status::ok();
    }();
    if (!timed.isOk()) {
      cudaGetLastError(); // clears a launch error; a sticky one stays
      failures += std::string(failures.empty() ? "" : "; ") + variant.name +
                  ": " + timed.message();
    }
  }
  if (best < 0.0f)
    return Status(StatusCode::Unsupported,
                  "no skinny kernel of the cell's code runs " +
                      std::to_string(m_) + " rows" +
                      (failures.empty() ? "" : " (" + failures + ")"));
  skinnyKernel_ = chosen;
  splits_ = fastest.splits;
  kPerSplit_ = fastest.kPerSplit;
  grid_ = fastest.grid();
  char text[160];
  useSkinny_ = cublasMicros < 0.0f || best < cublasMicros;
  if (forced && (std::strcmp(forced, "skinny") == 0 || gatherOnly))
    useSkinny_ = true;
  else if (forced && std::strcmp(forced, "cublas") == 0 && cublasMicros >= 0)
    useSkinny_ = false;
  if (useSkinny_)
    std::snprintf(text, sizeof text,
                  ", skinny kernel %s, %d k splits: %.1f us (cuBLASLt %.1f us)",
                  skinnyKernel_.name, splits_, best, cublasMicros);
  else
    std::snprintf(text, sizeof text, " (skinny kernel %s %.1f us)",
                  skinnyKernel_.name, best);
  description_ += text;
  if (!failures.empty())
    description_ += " (failed: " + failures + ")";
  return Status::ok();
}

Status CudaGemm::enqueueSkinny(cudaStream_t stream,
                               const GatheredRows *gathered) const {
  const void *a = gathered ? gathered->data : a_;
  const int32_t *aRows = gathered ? gathered->rows : nullptr;
  const void *b = b_, *bias = skinnyBias_, *c = skinnyC_;
  void *d = d_, *partial = partial_.data(), *counters = counters_.data();
  // Gathered, only the task's rows: the indices of the padding rows are
  // whatever the staging slot held.
  int m = static_cast<int>(gathered ? gathered->count : m_),
      n = static_cast<int>(n_), k = static_cast<int>(k_), splits = splits_,
      kPerSplit = kPerSplit_;
  float alpha = alpha_, beta = skinnyBeta_;
  // The gathering variants take A's row indices after A.
  void *dense[] = {&a, &b, &bias, &c,      &d,         &partial, &counters,
                   &m, &n, &k,    &splits, &kPerSplit, &alpha,   &beta};
  void *withRows[] = {&a, &aRows,   &b,         &bias,  &c,
                      &d, &partial, &counters,  &m,     &n,
                      &k, &splits,  &kPerSplit, &alpha, &beta};
  CELL_CUDA_TRY(launchKernel(
      skinnyKernel_.kernel, dim3(grid_), dim3(cellpack::kSkinnyGemmBlockSize),
      skinnyKernel_.gathersA ? withRows : dense, stream, skinny_.programmatic));
  return Status::ok();
}

CudaGemm::SkinnyOperands CudaGemm::skinnyOperands() const {
  SkinnyOperands operands;
  operands.a = a_;
  operands.b = b_;
  operands.bias = skinnyBias_;
  operands.c = skinnyC_;
  operands.d = d_;
  operands.m = static_cast<int>(m_);
  operands.n = static_cast<int>(n_);
  operands.k = static_cast<int>(k_);
  operands.splits = splits_;
  operands.alpha = alpha_;
  operands.beta = skinnyBeta_;
  return operands;
}

Status CudaGemm::checkSkinny(cudaStream_t stream, const GemmOperands &operands,
                             cellpack::Precision precision) {
  size_t count = static_cast<size_t>(m_) * n_;
  if (operands.aIsScratch) {
    // Values in [-1, 1), the same on every load.
    std::vector<float> a(static_cast<size_t>(m_) * k_);
    uint32_t state = 2463534242u;
    for (float &value : a)
      value = contestValue(state);
    CELL_TRY(
        uploadNow(const_cast<void *>(a_), a.data(), a.size() * sizeof(float)));
  }
  // D as a run leaves it on cuBLASLt, the skinny kernel, or the skinny
  // kernel reading A's rows through the index list 0..m-1 (the path a folded
  // gather takes); before a skinny run D is NaN, so an element it fails to
  // write shows (cuBLASLt may read D as its C, times beta 0).
  DeviceBuffer identity;
  auto resultOf = [&](bool skinny,
                      bool gathered) -> Result<std::vector<float>> {
    if (skinny)
      CELL_CUDA_TRY(cudaMemsetAsync(d_, 0xFF, count * sizeof(float), stream));
    GatheredRows rows{a_, reinterpret_cast<const int32_t *>(identity.data()),
                      m_};
    useSkinny_ = skinny;
    Status run = enqueue(stream, gathered ? &rows : nullptr);
    useSkinny_ = true;
    CELL_TRY(run);
    CELL_CUDA_TRY(cudaStreamSynchronize(stream));
    std::vector<float> d(count);
    CELL_CUDA_TRY(cudaMemcpy(d.data(), d_, count * sizeof(float),
                             cudaMemcpyDeviceToHost));
    return d;
  };
  auto reference = resultOf(false, false);
  if (!reference.ok())
    return reference.status();
  // Both add k products per element in different orders (TF32: cuBLASLt's
  // products rounded to 10 bits): a bug is off by far more.
  float largest = 0.0f;
  for (float value : reference.value())
    largest = std::max(largest, std::fabs(value));
  float tolerance = (precision == cellpack::Precision::TF32 ? 1e-2f : 1e-3f) *
                    (1.0f + largest);
  std::vector<bool> paths = {false};
  if (skinnyKernel_.gathersA) {
    std::vector<int32_t> indices(static_cast<size_t>(m_));
    for (size_t r = 0; r < indices.size(); ++r)
      indices[r] = static_cast<int32_t>(r);
    auto buffer = DeviceBuffer::allocate(indices.size() * sizeof(int32_t));
    if (!buffer.ok())
      return buffer.status();
    identity = std::move(buffer).value();
    CELL_TRY(uploadNow(identity.data(), indices.data(),
                       indices.size() * sizeof(int32_t)));
    paths.push_back(true);
  }
  for (bool gathered : paths) {
    auto skinny = resultOf(true, gathered);
    if (!skinny.ok())
      return skinny.status();
    for (size_t i = 0; i < count; ++i) {
      float want = reference.value()[i], got = skinny.value()[i];
      if (std::fabs(got - want) <= tolerance)
        continue;
      char text[200];
      std::snprintf(text, sizeof text,
                    " (but %s%s gave %g at row %zu column %zu where cuBLASLt "
                    "gave %g: cuBLASLt runs it)",
                    skinnyKernel_.name, gathered ? " reading A's rows" : "",
                    got, i / n_, i % n_, want);
      description_ += text;
      useSkinny_ = false;
      return Status::ok();
    }
  }
  return Status::ok();
}
