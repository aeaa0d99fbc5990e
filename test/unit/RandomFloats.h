//===- RandomFloats.h - Random test operands ------------------*- C++ -*-===//
//
// `count` floats drawn uniformly from [-1, 1) (never all zeros), for tests
// that compare a kernel with a reference on random data.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_TEST_RANDOMFLOATS_H
#define CELL_TEST_RANDOMFLOATS_H

#include <random>
#include <vector>

namespace cellc::testing {

inline std::vector<float> randomFloats(std::mt19937 &random, size_t count) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float &value : values)
    value = uniform(random);
  return values;
}

} // namespace cellc::testing

#endif // CELL_TEST_RANDOMFLOATS_H
