//===- ElementLoopsTest.cpp - The interpreter's element-wise loops --------===//
//
// Every version of the element-wise loops (baseline, AVX2, AVX-512, as the
// processor has them) against the plain C++ expression element by element,
// for every length up to a few vectors (the tails), with operands that are
// the result itself (an op in place), and the GEMM epilogue's scale and
// bias with and without alpha = 1.
//
//===----------------------------------------------------------------------===//
#include "backend/cpu/ElementLoops.h"
#include "ProcessorIsas.h"
#include "RandomFloats.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

using namespace cellrun::cpu;

namespace {

using cellc::testing::processorIsas;

std::vector<float> randomFloats(size_t count, std::mt19937 &random) {
  return cellc::testing::randomFloats(random, count);
}

float apply(ElementOp op, float a, float b) {
  switch (op) {
  case ElementOp::Add:
    return a + b;
  case ElementOp::Sub:
    return a - b;
  case ElementOp::Mul:
    return a * b;
  case ElementOp::Div:
    return a / b;
  }
  return 0.0f;
}

void expectSameBits(const std::vector<float> &got,
                    const std::vector<float> &want, const char *what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k)
    ASSERT_EQ(std::memcmp(&got[k], &want[k], sizeof(float)), 0)
        << what << " element " << k << " of " << got.size() << ": " << got[k]
        << " against " << want[k];
}

const ElementOp kOps[] = {ElementOp::Add, ElementOp::Sub, ElementOp::Mul,
                          ElementOp::Div};

TEST(ElementLoopsTest, RowsWhereverTheyLieMatchTheExpression) {
  // elementRows: each operand's rows through pointers (out of order, into
  // larger buffers), the result's rows one after another.
  std::mt19937 random(13);
  for (CpuIsa isa : processorIsas())
    for (ElementOp op : kOps)
      for (int64_t count : {1, 5, 8, 16, 19, 33, 64}) {
        int64_t rows = 7, stride = count + 3;
        std::vector<float> a = randomFloats(rows * stride, random);
        std::vector<float> b = randomFloats(rows * stride, random);
        std::vector<const float *> rowsOfA, rowsOfB;
        std::vector<float> want;
        for (int64_t r = 0; r < rows; ++r) {
          rowsOfA.push_back(a.data() + ((r * 3) % rows) * stride + 1);
          rowsOfB.push_back(b.data() + (rows - 1 - r) * stride);
          for (int64_t k = 0; k < count; ++k)
            want.push_back(apply(op, rowsOfA[r][k], rowsOfB[r][k]));
        }
        // Floats after the last row keep theirs (masked tails).
        std::vector<float> got(want.size() + 16, 42.0f);
        elementRows(op, rowsOfA.data(), rowsOfB.data(), got.data(), rows, count,
                    isa);
        for (size_t k = want.size(); k < got.size(); ++k)
          ASSERT_EQ(got[k], 42.0f)
              << cpuIsaName(isa) << ": wrote past " << want.size() << " floats";
        got.resize(want.size());
        expectSameBits(got, want, cpuIsaName(isa));
        // In place: each result row overwrites its first operand's row.
        std::vector<float> inPlace;
        for (int64_t r = 0; r < rows; ++r)
          inPlace.insert(inPlace.end(), rowsOfA[r], rowsOfA[r] + count);
        std::vector<const float *> rowsInPlace;
        for (int64_t r = 0; r < rows; ++r)
          rowsInPlace.push_back(inPlace.data() + r * count);
        elementRows(op, rowsInPlace.data(), rowsOfB.data(), inPlace.data(),
                    rows, count, isa);
        expectSameBits(inPlace, want, cpuIsaName(isa));
      }
}

TEST(ElementLoopsTest, ArraysMatchTheExpressionAtEveryLength) {
  std::mt19937 random(11);
  for (CpuIsa isa : processorIsas())
    for (ElementOp op : kOps)
      for (size_t count = 0; count <= 70; ++count) {
        std::vector<float> a = randomFloats(count, random);
        std::vector<float> b = randomFloats(count, random);
        std::vector<float> want(count), got(count, -1.0f);
        for (size_t k = 0; k < count; ++k)
          want[k] = apply(op, a[k], b[k]);
        elementArrays(op, a.data(), b.data(), got.data(), count, isa);
        expectSameBits(got, want, cpuIsaName(isa));
        // In place: the result overwrites its first operand.
        elementArrays(op, a.data(), b.data(), a.data(), count, isa);
        expectSameBits(a, want, cpuIsaName(isa));
      }
}

TEST(ElementLoopsTest, ARunAgainstANumberMatchesTheExpression) {
  std::mt19937 random(12);
  for (CpuIsa isa : processorIsas())
    for (ElementOp op : kOps)
      for (bool runOfA : {true, false})
        for (size_t count = 1; count <= 40; ++count) {
          std::vector<float> run = randomFloats(count, random);
          float number = randomFloats(1, random)[0];
          const float *a = runOfA ? run.data() : &number;
          const float *b = runOfA ? &number : run.data();
          std::vector<float> want(count), got(count);
          for (size_t k = 0; k < count; ++k)
            want[k] =
                runOfA ? apply(op, run[k], number) : apply(op, number, run[k]);
          elementRunAndNumber(op, a, runOfA, b, got.data(), count, isa);
          expectSameBits(got, want, cpuIsaName(isa));
        }
}

TEST(ElementLoopsTest, ScaleAndBiasMatchTheEpilogueInItsOrder) {
  std::mt19937 random(13);
  const int64_t m = 5, ldd = 37, begin = 3, end = 34;
  for (CpuIsa isa : processorIsas())
    for (float alpha : {1.0f, 0.75f})
      for (int64_t biasStride : {int64_t(0), ldd}) {
        std::vector<float> d = randomFloats(m * ldd, random);
        std::vector<float> bias = randomFloats(m * ldd, random);
        float beta = 0.5f;
        std::vector<float> want = d;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = begin; j < end; ++j) {
            float value = alpha * want[i * ldd + j];
            want[i * ldd + j] = value + beta * bias[i * biasStride + j];
          }
        scaleRowsAddBias(m, d.data(), ldd, begin, end, alpha, beta, bias.data(),
                         biasStride, isa);
        expectSameBits(d, want, cpuIsaName(isa)); // columns outside untouched
      }
}

TEST(ElementLoopsTest, ScaleWithoutBiasOnlyScales) {
  std::mt19937 random(14);
  for (CpuIsa isa : processorIsas()) {
    std::vector<float> d = randomFloats(3 * 20, random);
    std::vector<float> want = d;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 2; j < 19; ++j)
        want[i * 20 + j] = 2.5f * want[i * 20 + j];
    scaleRowsAddBias(3, d.data(), 20, 2, 19, 2.5f, 1.0f, nullptr, 0, isa);
    expectSameBits(d, want, cpuIsaName(isa));
  }
}

} // namespace
