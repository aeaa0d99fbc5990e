//===- ResultWriterTest.cpp - `cellrun run`'s results, in input order -----===//
//
// The result writer of `cellrun run` (tools/cellrun/ResultWriter.h): results
// put in any order, from another thread, are written in input order; the
// caller waiting for room is released once results are written; a result
// put twice is written once; without the total, what is in order is
// written when the writer is destroyed; without an output, each result's
// latency is still kept and failures counted, the last result and a caller
// waiting for room wake the writer.
//
//===----------------------------------------------------------------------===//
#include "ResultWriter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <sstream>
#include <thread>

namespace {
using namespace cellrun;
using namespace cellrun::tool;

RequestResult resultOf(size_t index, size_t floats = 4) {
  RequestResult result;
  result.id = "r" + std::to_string(index);
  OutputTensor tensor;
  tensor.name = "h";
  tensor.shape = {static_cast<int64_t>(floats)};
  tensor.floats.assign(floats, static_cast<float>(index));
  result.outputs.push_back(std::move(tensor));
  result.queueMicros = 1000.0 * static_cast<double>(index);
  return result;
}

/// The ids of the result lines of `text`, in order.
std::vector<std::string> idsOf(const std::string &text) {
  std::vector<std::string> ids;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find("\"id\":\"");
    EXPECT_NE(at, std::string::npos) << line;
    if (at == std::string::npos)
      continue;
    at += 6;
    ids.push_back(line.substr(at, line.find('"', at) - at));
  }
  return ids;
}

TEST(ResultWriterTest, ResultsPutInAnyOrderAreWrittenInInputOrder) {
  std::ostringstream out;
  {
    ResultWriter writer(&out, size_t(1) << 30, false);
    // From another thread, as the engine's, in reverse order.
    std::thread engine([&] {
      for (size_t index = 300; index-- > 0;)
        writer.put(index, resultOf(index));
    });
    engine.join();
    writer.expectTotal(300);
    EXPECT_TRUE(writer.finish());
    EXPECT_EQ(writer.latenciesMs.size(), 300u);
    EXPECT_EQ(writer.failed, 0u);
  }
  std::vector<std::string> ids = idsOf(out.str());
  ASSERT_EQ(ids.size(), 300u);
  for (size_t index = 0; index < ids.size(); ++index)
    EXPECT_EQ(ids[index], "r" + std::to_string(index));
}

TEST(ResultWriterTest, WaitingForRoomEndsOnceResultsAreWritten) {
  std::ostringstream out;
  // A budget smaller than one result: the caller waits while any waits.
  ResultWriter writer(&out, 1, false);
  writer.put(1, resultOf(1, 1000)); // not in order: it cannot be written
  std::atomic<bool> roomMade{false};
  std::thread caller([&] {
    writer.waitForRoom();
    roomMade = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(roomMade.load()) << "room before result 0 came";
  writer.put(0, resultOf(0, 1000)); // now both are written
  caller.join();
  EXPECT_TRUE(roomMade.load());
  writer.expectTotal(2);
  EXPECT_TRUE(writer.finish());
  EXPECT_EQ(idsOf(out.str()), (std::vector<std::string>{"r0", "r1"}));
}

TEST(ResultWriterTest, AResultPutTwiceIsWrittenOnce) {
  std::ostringstream out;
  {
    ResultWriter writer(&out, 1 << 20, false);
    writer.put(1, resultOf(1));
    writer.put(1, resultOf(1)); // while the first waits for result 0
    writer.put(0, resultOf(0));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    writer.put(0, resultOf(0)); // written by now, or still waiting
    writer.expectTotal(2);
    EXPECT_TRUE(writer.finish());
  }
  EXPECT_EQ(idsOf(out.str()), (std::vector<std::string>{"r0", "r1"}));
}

TEST(ResultWriterTest, WithoutTheTotalWhatIsInOrderIsWritten) {
  std::ostringstream out;
  {
    ResultWriter writer(&out, 1 << 20, false);
    writer.put(0, resultOf(0));
    writer.put(2, resultOf(2)); // 1 never comes (serving stopped)
  }
  EXPECT_EQ(idsOf(out.str()), (std::vector<std::string>{"r0"}));
}

TEST(ResultWriterTest, WithoutAnOutputLatenciesAndFailuresAreKept) {
  ResultWriter writer(nullptr, 1 << 20, false);
  // Result 0 comes last: those behind it are taken (their data freed)
  // meanwhile, every 4 MB of them here, and still counted once it comes.
  for (size_t index = 1000; index-- > 1;) {
    RequestResult result = resultOf(index, 4096);
    if (index % 100 == 0)
      result.status = Status(StatusCode::InvalidArgument, "refused");
    writer.put(index, std::move(result));
  }
  writer.put(0, resultOf(0, 4096));
  writer.expectTotal(1000);
  EXPECT_TRUE(writer.finish());
  EXPECT_EQ(writer.failed, 9u);
  ASSERT_EQ(writer.latenciesMs.size(), 991u);
  EXPECT_DOUBLE_EQ(writer.latenciesMs[0], 0.0);
  EXPECT_DOUBLE_EQ(writer.latenciesMs[1], 1.0); // result 1's 1000 us
}

TEST(ResultWriterTest, WithoutAnOutputTheLastResultEndsTheWriting) {
  // Fewer results than the writer takes at once, the total known first:
  // the last one must wake it (a lost wake-up fails by the test's timeout).
  ResultWriter writer(nullptr, 1 << 20, false);
  writer.expectTotal(3);
  // The writer waits before the first result comes.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::thread engine([&] {
    for (size_t index : {2, 0, 1})
      writer.put(index, resultOf(index));
  });
  engine.join();
  EXPECT_TRUE(writer.finish());
  EXPECT_EQ(writer.latenciesMs.size(), 3u);
}

TEST(ResultWriterTest, WithoutAnOutputAResultPutTwiceEndsTheWritingOnce) {
  // The duplicate counts as arrived: the last result must still wake the
  // writer once every result is in.
  ResultWriter writer(nullptr, 1 << 20, false);
  writer.expectTotal(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  writer.put(1, resultOf(1));
  writer.put(1, resultOf(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  writer.put(0, resultOf(0));
  EXPECT_TRUE(writer.finish());
  EXPECT_EQ(writer.latenciesMs.size(), 2u);
}

TEST(ResultWriterTest, WithoutAnOutputWaitingForRoomEnds) {
  // A budget smaller than one record: the caller waits until the few
  // results in are counted, fewer than the writer takes at once.
  ResultWriter writer(nullptr, 1, false);
  writer.put(1, resultOf(1));
  std::atomic<bool> roomMade{false};
  std::thread caller([&] {
    writer.waitForRoom();
    roomMade = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(roomMade.load()) << "room before result 0 came";
  writer.put(0, resultOf(0));
  caller.join();
  EXPECT_TRUE(roomMade.load());
  writer.expectTotal(2);
  EXPECT_TRUE(writer.finish());
  EXPECT_EQ(writer.latenciesMs.size(), 2u);
}

} // namespace
