//===- StepRows.cpp - The rows of a sequence's steps in one buffer --------===//
#include "cellrun/Request.h"

#include <cstring>

using namespace cellrun;

void StepRows::reserve(size_t steps, size_t rowsPerStep, size_t bytesPerStep) {
  (void)rowsPerStep; // offsets are kept only for irregular steps
  bytes_.reserve(steps * bytesPerStep);
}

void StepRows::becomeIrregular() {
  if (irregular_)
    return;
  // Every complete step's rows, then the rows of the step being built.
  stepStart_.clear();
  rowStart_.clear();
  size_t stride = layout_[layoutRows_];
  for (size_t step = 0; step < steps_; ++step) {
    stepStart_.push_back(rowStart_.size());
    for (size_t row = 0; row < layoutRows_; ++row)
      rowStart_.push_back(step * stride + layout_[row]);
  }
  stepStart_.push_back(rowStart_.size());
  size_t at = steps_ * stride;
  for (size_t row = 0; row < openRows_; ++row) {
    rowStart_.push_back(at);
    at += layout_[row + 1] - layout_[row];
  }
  rowStart_.push_back(bytes_.size());
  irregular_ = true;
}

uint8_t *StepRows::appendRow(size_t size) {
  if (!irregular_) {
    bool fits = layoutSet_
                    ? openRows_ < layoutRows_ &&
                          layout_[openRows_ + 1] - layout_[openRows_] == size
                    : openRows_ < kRows;
    if (!fits)
      becomeIrregular();
  }
  size_t at = bytes_.size();
  bytes_.resize(at + size);
  if (irregular_)
    rowStart_.push_back(at + size);
  else if (!layoutSet_)
    layout_[openRows_ + 1] = layout_[openRows_] + static_cast<uint32_t>(size);
  ++openRows_;
  return bytes_.data() + at;
}

void StepRows::endStep() {
  if (!irregular_ && layoutSet_ && openRows_ != layoutRows_)
    becomeIrregular(); // fewer rows than the first step
  if (irregular_) {
    stepStart_.push_back(rowStart_.size() - 1);
  } else if (!layoutSet_) {
    layoutSet_ = true;
    layoutRows_ = openRows_;
  }
  ++steps_;
  openRows_ = 0;
}

void StepRows::push_back(const NodeData &rows) {
  for (const std::vector<uint8_t> &row : rows) {
    uint8_t *to = appendRow(row.size());
    if (!row.empty())
      std::memcpy(to, row.data(), row.size());
  }
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
