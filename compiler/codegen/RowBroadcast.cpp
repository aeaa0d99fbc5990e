//===- RowBroadcast.cpp - Columns of operands broadcast within a row ------===//
//
// Rows may hold matrices ([batch, m, n] values, attention over a memory);
// an elementwise op over them reads each operand at the column NumPy
// broadcasting gives: a [batch, 1, n] query at c % n, a [batch, m, 1] weight
// at c / n, a weight vector at its element.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/KernelBodyWriter.h"

#include <vector>

using namespace mlir;

std::string cellc::codegen::broadcastColumn(ArrayRef<int64_t> from,
                                            ArrayRef<int64_t> to,
                                            const std::string &col) {
  std::vector<std::string> terms;
  int64_t stride = 1, fromStride = 1;
  for (size_t d = to.size(); d-- > 0;) {
    if (from[d] != 1) {
      std::string coordinate = col;
      if (stride != 1)
        coordinate = "(" + coordinate + ") / " + std::to_string(stride);
      if (d != 0)
        coordinate = "(" + coordinate + ") % " + std::to_string(to[d]);
      terms.push_back(fromStride == 1 ? "(" + coordinate + ")"
                                      : "(" + coordinate + ") * " +
                                            std::to_string(fromStride));
    }
    stride *= to[d];
    fromStride *= from[d];
  }
  if (terms.empty())
    return "0";
  std::string sum = terms.front();
  for (size_t t = 1; t < terms.size(); ++t)
    sum += " + " + terms[t];
  return "(" + sum + ")";
}
