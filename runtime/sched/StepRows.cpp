//===- StepRows.cpp - The rows of a sequence's steps in one buffer --------===//
#include "cellrun/Request.h"

#include <algorithm>
#include <cstring>

using namespace cellrun;

void StepRows::clear() {
  bytes_.clear();
  rowStart_.assign(1, 0);
  stepStart_.assign(1, 0);
}

void StepRows::reserve(size_t steps, size_t rowsPerStep, size_t bytesPerStep) {
  bytes_.reserve(steps * bytesPerStep);
  rowStart_.reserve(steps * rowsPerStep + 1);
  stepStart_.reserve(steps + 1);
}

uint8_t *StepRows::appendRow(size_t size) {
  size_t at = bytes_.size();
  bytes_.resize(at + size);
  rowStart_.push_back(at + size);
  return bytes_.data() + at;
}

void StepRows::push_back(const NodeData &rows) {
  for (const std::vector<uint8_t> &row : rows)
    if (!row.empty())
      std::memcpy(appendRow(row.size()), row.data(), row.size());
    else
      appendRow(0);
  endStep();
}

NodeData StepRows::step(size_t step) const {
  NodeData rows(this->rows(step));
  for (size_t r = 0; r < rows.size(); ++r)
    rows[r].assign(row(step, r), row(step, r) + rowSize(step, r));
  return rows;
}

StepRows StepRows::slice(size_t begin, size_t end) const {
  StepRows part;
  for (size_t s = begin; s < end; ++s)
    part.push_back(step(s));
  return part;
}

void StepRows::reverse() {
  StepRows reversed;
  for (size_t s = size(); s-- > 0;)
    reversed.push_back(step(s));
  *this = std::move(reversed);
}
