//===- CellGraphOutputs.cpp - A request's result, row by row --------------===//
//
// Appends the rows a request's nodes emit to its result tensors: fp32 and
// int64 rows straight into the result (a chain's per-step outputs reserved
// for every step when the first arrives), other types converted.
//
//===----------------------------------------------------------------------===//
#include "CellGraph.h"

#include "../backend/cpu/ElementIO.h"

using namespace cellrun;

Status CellGraph::appendOutput(const std::string &name, uint32_t part,
                               uint32_t output, uint32_t node,
                               const RowReader &read, bool perStep) {
  const cellpack::TensorSpec &spec =
      *structure_.cells[part].cell->outputs()->Get(output);
  size_t rowBytes = tensorRowBytes(spec);
  size_t elements = rowBytes / cpu::elementSize(spec.dtype());
  OutputTensor *tensor = nullptr;
  for (OutputTensor &existing : result_.outputs)
    if (existing.name == name)
      tensor = &existing;
  if (!tensor) {
    result_.outputs.push_back({name, {}, {}, {}});
    tensor = &result_.outputs.back();
    if (perStep)
      tensor->shape.push_back(0);
    if (spec.row_shape())
      tensor->shape.insert(tensor->shape.end(), spec.row_shape()->begin(),
                           spec.row_shape()->end());
    // A chain emits a row at each of its steps: room for all at once.
    size_t rows = perStep && structure_.kind == cellpack::Structure::Chain
                      ? nodes_.size()
                      : 1;
    if (cpu::isFloatType(spec.dtype()))
      tensor->floats.reserve(rows * elements);
    else
      tensor->integers.reserve(rows * elements);
  }
  if (perStep)
    ++tensor->shape[0];
  // fp32 and int64 rows are read straight into the result; others convert.
  auto readInto = [&](auto &values) {
    size_t at = values.size();
    values.resize(at + elements);
    Status status = read(node, output, values.data() + at);
    if (!status.isOk()) { // leave the result as it was
      values.resize(at);
      if (perStep)
        --tensor->shape[0];
    }
    return status;
  };
  if (spec.dtype() == cellpack::DType::F32)
    return readInto(tensor->floats);
  if (spec.dtype() == cellpack::DType::I64)
    return readInto(tensor->integers);
  std::vector<uint8_t> row(rowBytes);
  if (Status status = read(node, output, row.data()); !status.isOk())
    return status;
  for (size_t e = 0; e < elements; ++e) {
    if (cpu::isFloatType(spec.dtype()))
      tensor->floats.push_back(cpu::loadFloat(row.data(), spec.dtype(), e));
    else
      tensor->integers.push_back(cpu::loadInt(row.data(), spec.dtype(), e));
  }
  return Status::ok();
}
