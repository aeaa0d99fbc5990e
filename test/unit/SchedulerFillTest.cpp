//===- SchedulerFillTest.cpp - The fill rule of cellular batching ---------===//
//
// A decoder (a tree's internal nodes) with a few ready nodes waits while its
// encoders (leaves) have enough ready to fill its tasks, for a bounded
// number of calls; at light load and with a full task nothing waits. On a
// simulated clock, offline seq2seq requests run in fewer decoder tasks with
// the rule than without it, and every request still ends.
//
//===----------------------------------------------------------------------===//
#include "sched/Scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>

using namespace cellrun;

namespace {

constexpr uint32_t kEncoder = 0, kDecoder = 1;

/// An encoder below a decoder of higher priority, batch sizes 1..8, one
/// task a call.
std::unique_ptr<Scheduler> makeSeq2Seq(uint32_t fillRows,
                                       uint32_t maxHeldCalls = 4) {
  auto scheduler = std::make_unique<Scheduler>(
      std::vector<CellTypeConfig>{{"encoder", 0, {1, 2, 4, 8}},
                                  {"decoder", 1, {1, 2, 4, 8}}},
      1);
  if (fillRows > 0) {
    Status set =
        scheduler->setFillRule(kDecoder, {{kEncoder}, fillRows, maxHeldCalls});
    EXPECT_TRUE(set.isOk()) << set.message();
  }
  return scheduler;
}

void addChains(Scheduler &scheduler, uint32_t cellType, uint64_t count,
               uint32_t length, uint64_t firstTag) {
  for (uint64_t tag = firstTag; tag < firstTag + count; ++tag)
    scheduler.addSubgraph(cellType, length, tag);
}

/// Runs the next call's task and returns its cell type.
uint32_t typeOfNextTask(Scheduler &scheduler) {
  std::vector<Task> tasks = scheduler.schedule(0);
  EXPECT_EQ(tasks.size(), 1u);
  if (tasks.empty())
    return UINT32_MAX;
  for (const Task &task : tasks)
    scheduler.finish(task);
  return tasks[0].cellType;
}

TEST(SchedulerFillTest, ADecoderWaitsWhileItsEncodersCanFillItsTask) {
  auto filling = makeSeq2Seq(/*fillRows=*/4);
  addChains(*filling, kEncoder, 5, 10, 1);
  addChains(*filling, kDecoder, 1, 10, 100);
  // Without the rule the decoder's priority wins; here it waits for the
  // five encoders, which can fill its task.
  EXPECT_EQ(typeOfNextTask(*filling), kEncoder);
  EXPECT_EQ(typeOfNextTask(*filling), kEncoder);

  auto plain = makeSeq2Seq(/*fillRows=*/0);
  addChains(*plain, kEncoder, 5, 10, 1);
  addChains(*plain, kDecoder, 1, 10, 100);
  EXPECT_EQ(typeOfNextTask(*plain), kDecoder);
}

TEST(SchedulerFillTest, TheWaitIsBounded) {
  auto scheduler = makeSeq2Seq(/*fillRows=*/4, /*maxHeldCalls=*/2);
  addChains(*scheduler, kEncoder, 5, 20, 1);
  addChains(*scheduler, kDecoder, 1, 20, 100);
  std::vector<uint32_t> order;
  for (int call = 0; call < 7; ++call)
    order.push_back(typeOfNextTask(*scheduler));
  // Passed over twice, it runs; having run, it may wait again.
  EXPECT_EQ(order,
            (std::vector<uint32_t>{kEncoder, kEncoder, kDecoder, kEncoder,
                                   kEncoder, kDecoder, kEncoder}));
}

TEST(SchedulerFillTest, NothingWaitsAtLightLoadOrWithAFullTask) {
  // Light load: the encoders have fewer ready nodes than fill a task.
  auto light = makeSeq2Seq(/*fillRows=*/4);
  addChains(*light, kEncoder, 3, 10, 1);
  addChains(*light, kDecoder, 1, 10, 100);
  EXPECT_EQ(typeOfNextTask(*light), kDecoder);

  // The decoder's own ready nodes fill the task (seven encoders: no type
  // has a full batch, so tier two's priority decides).
  auto full = makeSeq2Seq(/*fillRows=*/4);
  addChains(*full, kEncoder, 7, 10, 1);
  addChains(*full, kDecoder, 4, 10, 100);
  EXPECT_EQ(typeOfNextTask(*full), kDecoder);

  // Fill rows above the decoder's largest batch size (8) count as that
  // size: three decoders wait while ten encoders (batches up to 16) are
  // ready. Uncapped, 100 rows would be more than the encoders have, and the
  // decoder's priority would win.
  Scheduler capped(
      {{"encoder", 0, {1, 2, 4, 8, 16}}, {"decoder", 1, {1, 2, 4, 8}}}, 1);
  ASSERT_TRUE(capped.setFillRule(kDecoder, {{kEncoder}, 100}).isOk());
  addChains(capped, kEncoder, 10, 10, 1);
  addChains(capped, kDecoder, 3, 10, 100);
  EXPECT_EQ(typeOfNextTask(capped), kEncoder);
}

TEST(SchedulerFillTest, RefusesRulesThatNameNoType) {
  auto scheduler = makeSeq2Seq(0);
  EXPECT_FALSE(scheduler->setFillRule(2, {{kEncoder}, 4}).isOk());
  EXPECT_FALSE(scheduler->setFillRule(kDecoder, {{5}, 4}).isOk());
  Status self = scheduler->setFillRule(kDecoder, {{kDecoder}, 4});
  EXPECT_FALSE(self.isOk());
  EXPECT_NE(self.message().find("cannot be fed by cell type 1"),
            std::string::npos)
      << self.message();
}

struct OfflineRun {
  std::map<uint32_t, uint32_t> tasks; // per cell type
  uint32_t finished = 0;
  int time = 0;
};

/// Offline seq2seq on one worker, a task a time unit: every request's
/// encoder chain is there at t = 0, and its decoder chain starts when the
/// encoder's last node has run.
OfflineRun
runOffline(Scheduler &scheduler,
           const std::vector<std::pair<uint32_t, uint32_t>> &lengths) {
  OfflineRun run;
  for (uint64_t r = 0; r < lengths.size(); ++r)
    scheduler.addSubgraph(kEncoder, lengths[r].first, r);
  while (!scheduler.idle() && run.time < 10000) {
    std::vector<Task> tasks = scheduler.schedule(0);
    if (tasks.empty())
      break;
    for (const Task &task : tasks) {
      ++run.time;
      ++run.tasks[task.cellType];
      for (const Scheduler::Completed &done : scheduler.finish(task)) {
        if (task.cellType == kEncoder)
          scheduler.addSubgraph(kDecoder, lengths.at(done.tag).second,
                                done.tag);
        else
          ++run.finished;
      }
    }
  }
  return run;
}

TEST(SchedulerFillTest, OfflineDecodersRunInFewerFullerTasks) {
  // Three requests' encoders end early; the other five run six steps.
  std::vector<std::pair<uint32_t, uint32_t>> lengths = {
      {1, 2}, {1, 2}, {2, 2}, {6, 2}, {6, 2}, {6, 2}, {6, 2}, {6, 2}};
  auto plain = makeSeq2Seq(0);
  auto filling = makeSeq2Seq(/*fillRows=*/4);
  OfflineRun without = runOffline(*plain, lengths);
  OfflineRun with = runOffline(*filling, lengths);
  EXPECT_EQ(without.finished, lengths.size());
  EXPECT_EQ(with.finished, lengths.size());
  EXPECT_TRUE(plain->idle());
  EXPECT_TRUE(filling->idle());
  // The encoders run as many tasks either way; the decoders wait for them
  // instead of running a few rows at a time.
  EXPECT_EQ(with.tasks[kEncoder], without.tasks[kEncoder]);
  EXPECT_LT(with.tasks[kDecoder], without.tasks[kDecoder]);
  EXPECT_LT(with.time, without.time);
}

} // namespace
