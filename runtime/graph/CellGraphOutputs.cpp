//===- CellGraphOutputs.cpp - A request's result, row by row --------------===//
//
// The rows a request's nodes emit go into its result tensors. A chain's
// tensors are created when it starts: fp32 and int64 outputs sized for
// every step, so that a task can copy each row straight to its place
// (readTarget) and the host touches it once; other types are converted as
// their rows arrive. Seq2seq tokens and a tree's root outputs are appended
// as they are read.
//
//===----------------------------------------------------------------------===//
#include "graph/CellGraph.h"

#include "artifact/ElementIO.h"

#include <algorithm>
#include <cstring>

using namespace cellrun;

static size_t elementsOf(const CellRoles &roles, uint32_t output) {
  return roles.outputRowBytes[output] /
         cpu::elementSize(roles.outputTypes[output]);
}

/// A new tensor for output `output`: `steps` rows (0: grown row by row)
/// when per step, else one row; storage for `filled` rows made now.
static OutputTensor newTensor(const CellRoles &roles, uint32_t output,
                              const std::string &name, bool perStep,
                              size_t steps, size_t filled) {
  steps = std::max<size_t>(steps, 1);
  OutputTensor tensor;
  tensor.name = name;
  if (perStep)
    tensor.shape.push_back(static_cast<int64_t>(filled));
  if (const auto *rowShape = roles.cell->outputs()->Get(output)->row_shape())
    tensor.shape.insert(tensor.shape.end(), rowShape->begin(), rowShape->end());
  size_t elements = elementsOf(roles, output);
  bool isFloat = cpu::isFloatType(roles.outputTypes[output]);
  if (isFloat)
    tensor.floats.reserve(steps * elements);
  else
    tensor.integers.reserve(steps * elements);
  if (isFloat)
    tensor.floats.resize(filled * elements);
  else
    tensor.integers.resize(filled * elements);
  return tensor;
}

/// Row `row` of a directly filled tensor of output `output`.
static void *rowOf(OutputTensor &tensor, const CellRoles &roles,
                   uint32_t output, size_t row) {
  uint8_t *base = roles.outputTypes[output] == cellpack::DType::F32
                      ? reinterpret_cast<uint8_t *>(tensor.floats.data())
                      : reinterpret_cast<uint8_t *>(tensor.integers.data());
  return base + row * roles.outputRowBytes[output];
}

bool CellGraph::direct(uint32_t output) const {
  if (!directReads_ || structure_.kind != cellpack::Structure::Chain)
    return false;
  cellpack::DType type = structure_.cells[0].outputTypes[output];
  return type == cellpack::DType::F32 || type == cellpack::DType::I64;
}

bool CellGraph::wants(const std::string &name) const {
  const std::vector<std::string> &wanted = request_.outputs;
  return wanted.empty() ||
         std::find(wanted.begin(), wanted.end(), name) != wanted.end();
}

template <typename Visit>
void CellGraph::forEachChainTensor(Visit visit) const {
  const CellRoles &roles = structure_.cells[0];
  for (uint32_t output : roles.emitted)
    if (wants(roles.outputNames[output])) // else never read back
      visit(output, roles.outputNames[output], true);
  for (uint32_t output : roles.stateOutputs)
    if (wants(roles.finalNames[output]))
      visit(output, roles.finalNames[output], false);
}

std::vector<OutputTensor> CellGraph::makeChainTensors() const {
  const CellRoles &roles = structure_.cells[0];
  size_t steps = request_.steps.size();
  std::vector<OutputTensor> tensors;
  tensors.reserve(roles.emitted.size() + roles.stateOutputs.size());
  forEachChainTensor(
      [&](uint32_t output, const std::string &name, bool perStep) {
        size_t rows = perStep ? steps : 1;
        tensors.push_back(newTensor(roles, output, name, perStep, rows,
                                    direct(output) ? rows : 0));
      });
  return tensors;
}

void CellGraph::prepareChainResult(
    const std::shared_ptr<ResultBudget> &budget) {
  if (!chain_ || !directReads_ || !budget || preparedBytes_ > 0)
    return;
  // The bytes of the tensors as they are stored (floats, int64s).
  const CellRoles &roles = structure_.cells[0];
  size_t steps = std::max<size_t>(request_.steps.size(), 1), bytes = 0;
  forEachChainTensor([&](uint32_t output, const std::string &, bool perStep) {
    size_t element = cpu::isFloatType(roles.outputTypes[output])
                         ? sizeof(float)
                         : sizeof(int64_t);
    bytes += elementsOf(roles, output) * element * (perStep ? steps : 1);
  });
  if (bytes == 0 || bytes > kPreparedResultBytes)
    return;
  int64_t size = static_cast<int64_t>(bytes);
  if (budget->held.fetch_add(size) + size > budget->limit) {
    budget->held.fetch_sub(size); // no room: made when it starts
    return;
  }
  preparedOutputs_ = makeChainTensors();
  preparedBudget_ = budget;
  preparedBytes_ = size;
}

void CellGraph::releasePreparedBytes() {
  if (preparedBytes_ > 0)
    preparedBudget_->held.fetch_sub(preparedBytes_);
  preparedBytes_ = 0;
  preparedBudget_.reset();
}

void CellGraph::createChainOutputs() {
  const CellRoles &roles = structure_.cells[0];
  if (roles.outputCount > kInlineOutputs) {
    moreOutputs_.assign(roles.outputCount, ChainOutput());
    chainOutputs_ = moreOutputs_.data();
  }
  std::fill_n(chainOutputs_, roles.outputCount, ChainOutput());
  std::vector<OutputTensor> tensors = preparedOutputs_.empty()
                                          ? makeChainTensors()
                                          : std::move(preparedOutputs_);
  preparedOutputs_.clear(); // its room: takePreparedRoom
  // Each tensor's place, in makeChainTensors' order.
  int32_t next = static_cast<int32_t>(result_.outputs.size());
  if (result_.outputs.empty())
    result_.outputs = std::move(tensors);
  else
    for (OutputTensor &tensor : tensors)
      result_.outputs.push_back(std::move(tensor));
  forEachChainTensor([&](uint32_t output, const std::string &, bool perStep) {
    ChainOutput &chain = chainOutputs_[output];
    (perStep ? chain.emittedTensor : chain.finalTensor) = next++;
  });
  if (!directReads_)
    return;
  // The tensors are sized for good: their rows stay where they are.
  directTargets_ = true;
  allDirect_ = true;
  for (uint32_t output = 0; output < roles.outputCount; ++output)
    allDirect_ &= direct(output);
  for (uint32_t output = 0; output < roles.outputCount; ++output) {
    if (!direct(output))
      continue;
    ChainOutput &chain = chainOutputs_[output];
    chain.rowBytes = roles.outputRowBytes[output];
    if (chain.emittedTensor >= 0)
      chain.emittedRows = static_cast<uint8_t *>(
          rowOf(result_.outputs[chain.emittedTensor], roles, output, 0));
    if (chain.finalTensor >= 0)
      chain.finalRow = static_cast<uint8_t *>(
          rowOf(result_.outputs[chain.finalTensor], roles, output, 0));
  }
}

Status CellGraph::chainDone(uint32_t node, const RowReader &read) {
  const CellRoles &roles = structure_.cells[0];
  if (node + 1 != steps_ && allDirect_)
    return Status::ok(); // the task has put its rows in the result
  for (uint32_t output : roles.emitted)
    if (!direct(output) && chainOutputs_[output].emittedTensor >= 0)
      if (Status status =
              appendTo(result_.outputs[chainOutputs_[output].emittedTensor], 0,
                       output, node, read, true);
          !status.isOk())
        return status;
  if (node + 1 != steps_)
    return Status::ok();
  for (uint32_t output : roles.stateOutputs) {
    const ChainOutput &chain = chainOutputs_[output];
    if (chain.finalTensor < 0)
      continue; // not wanted
    if (!direct(output)) {
      OutputTensor &last = result_.outputs[chain.finalTensor];
      if (Status status = appendTo(last, 0, output, node, read, false);
          !status.isOk())
        return status;
    } else if (chain.emittedTensor >= 0) {
      // The task copied it once, into the emitted rows (without them, the
      // last step's row went straight to the final state: readTarget).
      // Through the rows' addresses kept beside the graph's hot fields: the
      // result's tensor records are not in the cache by now.
      if (finalStatesFromPools_) {
        if (Status status = read(node, output, chain.finalRow);
            !status.isOk())
          return status;
      } else {
        std::memcpy(chain.finalRow,
                    chain.emittedRows + size_t(node) * chain.rowBytes,
                    chain.rowBytes);
      }
    }
  }
  finished_ = true;
  return Status::ok();
}

OutputTensor cellrun::newOutputTensor(const CellRoles &roles, uint32_t output,
                                      const std::string &name, bool perStep,
                                      size_t rows) {
  return newTensor(roles, output, name, perStep, rows, 0);
}

Status CellGraph::appendOutput(const std::string &name, uint32_t part,
                               uint32_t output, uint32_t node,
                               const RowReader &read, bool perStep) {
  for (OutputTensor &existing : result_.outputs)
    if (existing.name == name)
      return appendTo(existing, part, output, node, read, perStep);
  result_.outputs.push_back(
      newTensor(structure_.cells[part], output, name, perStep, 1, 0));
  return appendTo(result_.outputs.back(), part, output, node, read, perStep);
}

Status CellGraph::appendTo(OutputTensor &tensor, uint32_t part, uint32_t output,
                           uint32_t node, const RowReader &read, bool perStep) {
  const CellRoles &roles = structure_.cells[part];
  cellpack::DType type = roles.outputTypes[output];
  size_t elements = elementsOf(roles, output);
  if (perStep)
    ++tensor.shape[0];
  // fp32 and int64 rows are read straight into the result; others convert.
  auto readInto = [&](auto &values) {
    size_t at = values.size();
    values.resize(at + elements);
    Status status = read(node, output, values.data() + at);
    if (!status.isOk()) { // leave the result as it was
      values.resize(at);
      if (perStep)
        --tensor.shape[0];
    }
    return status;
  };
  if (type == cellpack::DType::F32)
    return readInto(tensor.floats);
  if (type == cellpack::DType::I64)
    return readInto(tensor.integers);
  std::vector<uint8_t> row(roles.outputRowBytes[output]);
  if (Status status = read(node, output, row.data()); !status.isOk()) {
    if (perStep)
      --tensor.shape[0];
    return status;
  }
  for (size_t e = 0; e < elements; ++e) {
    if (cpu::isFloatType(type))
      tensor.floats.push_back(cpu::loadFloat(row.data(), type, e));
    else
      tensor.integers.push_back(cpu::loadInt(row.data(), type, e));
  }
  return Status::ok();
}
