//===- ChainSlotsTest.cpp - The persistent chain batch's slots ------------===//
//
// ChainSlots (engine/ChainSlots.h) keeps a worker's running chains in flat
// arrays. A request that leaves leaves a hole: no other slot moves, the
// next request takes the most recent hole, holes at the end are cut off, and
// a hole never looks like a slot with steps to run, and the slots with a
// deadline are counted. Checked here against a model of which slots hold
// which request, over random joins and leaves.
//
//===----------------------------------------------------------------------===//
#include "engine/ChainSlots.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace {
using cellrun::ChainSlots;

/// A new request in slot `slot`, its fields as joinChainBatch sets them.
void fill(ChainSlots &slots, uint32_t slot, uint64_t key) {
  slots.keys[slot] = key;
  slots.next[slot] = 0;
  slots.steps[slot] = static_cast<uint32_t>(key % 7 + 1);
  // Every third request has a deadline, counted as joinChainBatch does.
  slots.deadline[slot] = key % 3 == 0 ? key * 10 : UINT64_MAX;
  slots.withDeadlines += slots.deadline[slot] != UINT64_MAX;
  for (auto &generation : slots.rows)
    for (auto &column : generation)
      column[slot] = static_cast<int32_t>(key);
}

TEST(ChainSlotsTest, LeavingMovesNoOtherSlotAndHolesAreReusedOrCutOff) {
  ChainSlots slots;
  slots.configure(/*rowSlots=*/3, /*states=*/2, /*dataInputs=*/1,
                  /*emitted=*/1, /*finalOnly=*/1);
  uint32_t a = slots.add(), b = slots.add(), c = slots.add();
  EXPECT_EQ(a, 0u);
  EXPECT_EQ(b, 1u);
  EXPECT_EQ(c, 2u);
  fill(slots, a, 11);
  fill(slots, b, 12);
  fill(slots, c, 13);
  slots.boundRound[b] = 99;
  slots.flags[b] = ChainSlots::kStarted;
  slots.remove(b); // a hole in the middle: c stays where it is
  EXPECT_EQ(slots.size(), 3u);
  EXPECT_EQ(slots.keys[c], 13u);
  EXPECT_EQ(slots.rows[1][2][c], 13);
  EXPECT_EQ(slots.steps[b] - slots.next[b], 0u) << "a hole has no steps";
  uint32_t d = slots.add(); // takes the hole, as a new slot
  EXPECT_EQ(d, b);
  EXPECT_EQ(slots.boundRound[d], 0u);
  EXPECT_EQ(slots.flags[d], 0);
  fill(slots, d, 14);
  slots.remove(a);
  slots.remove(c); // the end goes, and so does nothing before the live d
  EXPECT_EQ(slots.size(), 2u);
  slots.remove(d); // now everything is cut off
  EXPECT_EQ(slots.size(), 0u);
  for (const auto &column : slots.rows[0])
    EXPECT_EQ(column.size(), 0u);
  EXPECT_EQ(slots.add(), 0u) << "the holes cut off are not handed out";
  EXPECT_EQ(slots.size(), 1u);
}

TEST(ChainSlotsTest, RandomJoinsAndLeavesKeepEveryRequestInItsSlot) {
  ChainSlots slots;
  slots.configure(2, 1, 1, 1, 0);
  std::mt19937 random(5);
  std::map<uint64_t, uint32_t> slotOf; // the model: request -> slot
  uint64_t nextKey = 1;
  size_t most = 0;
  for (int round = 0; round < 20000; ++round) {
    bool join = slotOf.empty() || random() % 100 < (round < 10000 ? 55 : 40);
    if (join) {
      uint32_t slot = slots.add();
      ASSERT_LT(slot, slots.size());
      for (const auto &[key, held] : slotOf)
        ASSERT_NE(held, slot) << "slot " << slot << " handed out twice";
      uint64_t key = nextKey++;
      fill(slots, slot, key);
      slotOf[key] = slot;
    } else {
      auto leaving = slotOf.begin();
      std::advance(leaving, random() % slotOf.size());
      slots.remove(leaving->second);
      slotOf.erase(leaving);
    }
    most = std::max(most, slotOf.size());
    // Every request where it was put; every other slot a hole without
    // steps; the arrays no longer than the highest slot in use.
    uint32_t highest = 0, live = 0, withDeadlines = 0;
    for (const auto &[key, slot] : slotOf) {
      ASSERT_EQ(slots.keys[slot], key);
      withDeadlines += key % 3 == 0;
      ASSERT_EQ(slots.rows[0][1][slot], static_cast<int32_t>(key));
      highest = std::max(highest, slot + 1);
    }
    for (uint32_t slot = 0; slot < slots.size(); ++slot)
      if (slots.keys[slot] != 0)
        ++live;
      else
        ASSERT_EQ(slots.steps[slot], slots.next[slot]);
    ASSERT_EQ(live, slotOf.size());
    ASSERT_EQ(slots.size(), highest);
    // The count the rounds consult before they look for deadlines.
    ASSERT_EQ(slots.withDeadlines, withDeadlines);
  }
  EXPECT_GT(most, 50u);
}
} // namespace
