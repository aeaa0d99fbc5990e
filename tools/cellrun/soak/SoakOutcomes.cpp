//===- SoakOutcomes.cpp - What became of every request a soak sent --------===//
#include "SoakOutcomes.h"

#include <algorithm>

using namespace cellrun::soak;

const char *cellrun::soak::outcomeName(Outcome outcome) {
  switch (outcome) {
  case Outcome::Correct:
    return "correct";
  case Outcome::Wrong:
    return "wrong";
  case Outcome::RefusedAsExpected:
    return "refused_as_expected";
  case Outcome::RefusedOtherwise:
    return "refused_otherwise";
  case Outcome::Overloaded:
    return "overloaded";
  case Outcome::Failed:
    return "failed";
  case Outcome::Lost:
    return "lost";
  }
  return "?";
}

void Outcomes::record(const std::string &kind, Outcome outcome,
                      double overloadMs, const std::string &detail) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto &counts = counts_[kind];
  ++counts[static_cast<size_t>(outcome)];
  if (overloadMs >= 0)
    overloadMs_.push_back(overloadMs);
  bool problem = outcome == Outcome::Wrong || outcome == Outcome::Failed ||
                 outcome == Outcome::Lost ||
                 outcome == Outcome::RefusedOtherwise;
  if (problem && problems_.size() < 20)
    problems_.push_back(kind + " " + outcomeName(outcome) + ": " + detail);
}

uint64_t Outcomes::total(Outcome outcome) const {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t sum = 0;
  for (const auto &[kind, counts] : counts_)
    sum += counts[static_cast<size_t>(outcome)];
  return sum;
}

uint64_t Outcomes::sent() const {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t sum = 0;
  for (const auto &[kind, counts] : counts_)
    for (uint64_t count : counts)
      sum += count;
  return sum;
}

std::vector<double> Outcomes::overloadTimes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<double> times = overloadMs_;
  std::sort(times.begin(), times.end());
  return times;
}

std::map<std::string, std::array<uint64_t, kOutcomeCount>>
Outcomes::byKind() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

std::vector<std::string> Outcomes::problems() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return problems_;
}
