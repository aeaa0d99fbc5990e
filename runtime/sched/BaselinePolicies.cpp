//===- BaselinePolicies.cpp - Graph batching and padded batching ----------===//
//
// Both baselines run a batch of requests to its end before the next batch
// starts, and return its results together when the last one finishes.
//  - graph: the batch is the requests that arrived first (up to
//    batchRequests); each round runs one level: the next node of every
//    chain and every tree node whose children ran in earlier levels,
//    grouped by cell type (higher priority first), in tasks no larger than
//    the cell's largest batch size.
//  - padded: requests wait in length buckets (bucketWidth steps each) and
//    batches are taken from the buckets in turn; each round is one step of
//    one cell type, and every request of the batch is in it, with a padding
//    row when it has nothing to compute there (the batch is padded to its
//    longest sequence). A seq2seq batch runs all encoder steps before any
//    decoder step, as one unrolled graph would.
//
//===----------------------------------------------------------------------===//
#include "sched/BatchingPolicy.h"

#include <algorithm>
#include <deque>
#include <map>
#include <unordered_map>
#include <unordered_set>

using namespace cellrun;

namespace {

class BatchRunPolicy : public BatchingPolicy {
public:
  BatchRunPolicy(const std::vector<PartInfo> &parts, uint32_t batchRequests)
      : parts_(parts), batchRequests_(batchRequests) {
    if (batchRequests_ == 0)
      for (const PartInfo &part : parts_)
        batchRequests_ = std::max(batchRequests_, part.batchSizes.back());
    for (const PartInfo &part : parts_)
      batchRequests_ = std::min(batchRequests_, part.batchSizes.back());
  }

  Status add(uint64_t request, ReadySubgraph subgraph,
             uint64_t /*deadline*/) override {
    subgraph.materialize(); // cursors keep a list of nodes
    std::vector<Cursor> &cursors = cursors_[request];
    if (subgraph.continuesChain)
      for (Cursor &cursor : cursors)
        if (cursor.part == subgraph.part && cursor.successor.empty()) {
          cursor.nodes.insert(cursor.nodes.end(), subgraph.nodes.begin(),
                              subgraph.nodes.end());
          return Status::ok();
        }
    Cursor cursor;
    cursor.part = subgraph.part;
    cursor.nodes = std::move(subgraph.nodes);
    cursor.successor = std::move(subgraph.successor);
    if (!cursor.successor.empty()) {
      cursor.pending.assign(cursor.nodes.size(), 0);
      for (int32_t next : cursor.successor)
        if (next >= 0)
          ++cursor.pending.at(static_cast<size_t>(next));
      for (uint32_t k = 0; k < cursor.nodes.size(); ++k)
        if (cursor.pending[k] == 0)
          cursor.ready.push_back(k);
    }
    cursors.push_back(std::move(cursor));
    return Status::ok();
  }

  void finished(const PlannedTask &) override {}

  void requestDone(uint64_t request, std::vector<uint64_t> &returned) override {
    cursors_.erase(request);
    done_.insert(request);
    waitingRemove(request);
    bool inBatch =
        std::find(batch_.begin(), batch_.end(), request) != batch_.end();
    if (!inBatch) {
      done_.erase(request);
      returned.push_back(request); // failed before its batch started
      return;
    }
    for (uint64_t member : batch_)
      if (!done_.count(member))
        return;
    for (uint64_t member : batch_) {
      done_.erase(member);
      returned.push_back(member);
    }
    batch_.clear();
  }

protected:
  /// A subgraph walked one level at a time: a chain's next node, or every
  /// tree node whose predecessors were taken in earlier levels.
  struct Cursor {
    uint32_t part = 0;
    std::vector<uint32_t> nodes;
    std::vector<int32_t> successor; // empty: a chain
    std::vector<uint32_t> pending;  // tree: predecessors not taken
    std::vector<uint32_t> ready;    // tree: positions of the next level
    size_t at = 0;                  // chain: the next position

    bool hasNode() const {
      return successor.empty() ? at < nodes.size() : !ready.empty();
    }
    /// Appends the next level's nodes to `out`.
    void takeLevel(std::vector<uint32_t> &out) {
      if (successor.empty()) {
        if (at < nodes.size())
          out.push_back(nodes[at++]);
        return;
      }
      std::vector<uint32_t> level = std::move(ready);
      ready.clear();
      for (uint32_t k : level) {
        out.push_back(nodes[k]);
        int32_t next = successor[k];
        if (next >= 0 && --pending[static_cast<size_t>(next)] == 0)
          ready.push_back(static_cast<uint32_t>(next));
      }
    }
  };

  virtual void waitingRemove(uint64_t request) = 0;

  /// The next level of `request` in `part` (empty when it has none).
  std::vector<uint32_t> takeLevel(uint64_t request, uint32_t part) {
    std::vector<uint32_t> level;
    auto found = cursors_.find(request);
    if (found != cursors_.end())
      for (Cursor &cursor : found->second)
        if (cursor.part == part && cursor.hasNode())
          cursor.takeLevel(level);
    return level;
  }

  bool hasNode(uint64_t request, uint32_t part) const {
    auto found = cursors_.find(request);
    if (found == cursors_.end())
      return false;
    for (const Cursor &cursor : found->second)
      if (cursor.part == part && cursor.hasNode())
        return true;
    return false;
  }

  std::vector<PartInfo> parts_;
  uint32_t batchRequests_;
  std::vector<uint64_t> batch_;
  std::unordered_set<uint64_t> done_;
  std::unordered_map<uint64_t, std::vector<Cursor>> cursors_;
};

class GraphPolicy final : public BatchRunPolicy {
public:
  using BatchRunPolicy::BatchRunPolicy;

  void admitted(uint64_t request, uint32_t) override {
    arrivals_.push_back(request);
  }

  std::vector<PlannedTask> next() override {
    if (batch_.empty())
      while (!arrivals_.empty() && batch_.size() < batchRequests_) {
        batch_.push_back(arrivals_.front());
        arrivals_.pop_front();
      }
    // One level: the next node of every chain of the batch and every tree
    // node whose children ran in earlier levels.
    std::vector<std::vector<PlannedNode>> level(parts_.size());
    for (uint64_t request : batch_)
      for (uint32_t part = 0; part < parts_.size(); ++part)
        for (uint32_t node : takeLevel(request, part))
          level[part].push_back({request, node});
    std::vector<uint32_t> order(parts_.size());
    for (uint32_t p = 0; p < order.size(); ++p)
      order[p] = p;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return parts_[a].priority > parts_[b].priority;
    });
    std::vector<PlannedTask> tasks;
    for (uint32_t part : order) {
      uint32_t largest = parts_[part].batchSizes.back();
      for (size_t begin = 0; begin < level[part].size(); begin += largest) {
        PlannedTask task;
        task.part = part;
        size_t end = std::min(level[part].size(), begin + largest);
        task.nodes.assign(level[part].begin() + begin,
                          level[part].begin() + end);
        tasks.push_back(std::move(task));
      }
    }
    return tasks;
  }

private:
  void waitingRemove(uint64_t request) override {
    arrivals_.erase(std::remove(arrivals_.begin(), arrivals_.end(), request),
                    arrivals_.end());
  }

  std::deque<uint64_t> arrivals_;
};

class PaddedPolicy final : public BatchRunPolicy {
public:
  PaddedPolicy(const std::vector<PartInfo> &parts, uint32_t batchRequests,
               uint32_t bucketWidth)
      : BatchRunPolicy(parts, batchRequests),
        bucketWidth_(std::max(1u, bucketWidth)) {}

  void admitted(uint64_t request, uint32_t length) override {
    buckets_[(std::max(1u, length) - 1) / bucketWidth_].push_back(request);
  }

  std::vector<PlannedTask> next() override {
    if (batch_.empty())
      startBatch();
    if (batch_.empty())
      return {};
    // The first cell type (encoder before decoder) with work left.
    for (uint32_t part = 0; part < parts_.size(); ++part) {
      bool any = false;
      for (uint64_t request : batch_)
        any |= hasNode(request, part);
      if (!any)
        continue;
      PlannedTask task;
      task.part = part;
      for (uint64_t request : batch_) {
        std::vector<uint32_t> node = takeLevel(request, part);
        if (node.empty())
          ++task.padding;
        else
          task.nodes.push_back({request, node.front()}); // chains only
      }
      return {task};
    }
    return {};
  }

private:
  void startBatch() {
    if (buckets_.empty())
      return;
    // Round robin: the first non-empty bucket after the last one served.
    auto bucket = buckets_.upper_bound(lastBucket_);
    if (bucket == buckets_.end())
      bucket = buckets_.begin();
    lastBucket_ = bucket->first;
    std::deque<uint64_t> &queue = bucket->second;
    while (!queue.empty() && batch_.size() < batchRequests_) {
      batch_.push_back(queue.front());
      queue.pop_front();
    }
    if (queue.empty())
      buckets_.erase(bucket);
  }

  void waitingRemove(uint64_t request) override {
    for (auto it = buckets_.begin(); it != buckets_.end();) {
      auto &queue = it->second;
      queue.erase(std::remove(queue.begin(), queue.end(), request),
                  queue.end());
      it = queue.empty() ? buckets_.erase(it) : std::next(it);
    }
  }

  uint32_t bucketWidth_;
  std::map<uint32_t, std::deque<uint64_t>> buckets_;
  uint32_t lastBucket_ = UINT32_MAX;
};

} // namespace

std::unique_ptr<BatchingPolicy>
cellrun::makeGraphPolicy(const std::vector<PartInfo> &parts,
                         uint32_t batchRequests) {
  return std::make_unique<GraphPolicy>(parts, batchRequests);
}

std::unique_ptr<BatchingPolicy>
cellrun::makePaddedPolicy(const std::vector<PartInfo> &parts,
                          uint32_t batchRequests, uint32_t bucketWidth) {
  return std::make_unique<PaddedPolicy>(parts, batchRequests, bucketWidth);
}
