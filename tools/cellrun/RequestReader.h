//===- RequestReader.h - `cellrun run`'s requests, read ahead ---*- C++ -*-===//
//
// Reads request lines (one JSON object a line) ahead of the serving on a
// thread of its own, holding at most a budget of request text read and not
// yet taken (parsed or not); the caller takes them one by one in input
// order, parsed and checked against the model in runs of the lines at hand,
// each run on all cores. From a file, the first fill reads until the budget
// is full or the file ends and parses it all, so an input that fits is read
// whole before the first request is served (the serving's own time stays
// apart), and a larger one is read on as it is served. From a pipe
// (standard input), lines are served as they come: a producer that writes
// slowly gets its results without waiting for more input. A line that is
// not a request becomes the result that says why, with its line number.
//
#ifndef CELLRUN_TOOLS_REQUESTREADER_H
#define CELLRUN_TOOLS_REQUESTREADER_H

#include "cellrun/Engine.h"

#include <condition_variable>
#include <deque>
#include <istream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace cellrun::tool {

/// A request line: parsed, or the result that says why it was not.
struct InputLine {
  std::optional<Request> request;
  RequestResult refused;
};

class RequestReader {
public:
  /// Reads `input` (owned by the caller, read only by the reader's thread
  /// until it ends) with `parser`, holding at most about `readAheadBytes`
  /// of request text (at least one line) read and not yet taken. With
  /// `fillFirst` (a file), fill() waits for that much or the end.
  RequestReader(std::istream &input, const RequestParser &parser,
                size_t readAheadBytes, bool fillFirst);
  /// Stops the reading. The caller takes every line first or stops early
  /// on a file: a reading thread blocked on a pipe that never ends would
  /// keep this waiting.
  ~RequestReader();

  /// With fillFirst: waits until the budget is full or the input ended,
  /// and parses all of it; else nothing.
  void fill();
  /// The next line in input order (waiting for one when none is at hand);
  /// false once every line has been taken.
  bool next(InputLine &line);

  /// Seconds spent reading (waiting for the first fill) and parsing so
  /// far, and how many of them after the first line was taken (while
  /// serving).
  double parseSeconds() const { return parseSeconds_; }
  double parseSecondsAfterFirst() const { return parseSecondsAfterFirst_; }
  /// Request lines taken so far (blank lines are not counted).
  size_t linesTaken() const { return linesTaken_; }
  /// After every line was taken: true when reading stopped on an error of
  /// the stream, not at its end.
  bool readFailed() const { return failed_; }

private:
  void readLines();
  /// Parses the lines read so far (at most `most`; waiting for one when
  /// none is there) into `parsed_`.
  void parseAtHand(size_t most);
  /// Gives the bytes of the lines taken since the last call back to the
  /// budget.
  void releaseTaken();

  std::istream &input_;
  const RequestParser &parser_;
  size_t readAheadBytes_;
  bool fillFirst_;

  std::mutex mutex_;
  std::condition_variable readSome_, tookSome_;
  /// Lines read and not yet parsed (text, line number).
  std::deque<std::pair<std::string, size_t>> unparsed_;
  /// Bytes of the lines read and not yet taken (parsed or not).
  size_t heldBytes_ = 0;
  /// The caller waits for any line (not for a full budget).
  bool wantsAny_ = false;
  bool ended_ = false, failed_ = false, stopping_ = false;
  std::thread thread_;

  // The caller's thread only: parsed lines not yet taken with their
  // bytes, and the bytes taken since the last releaseTaken().
  std::deque<std::pair<InputLine, size_t>> parsed_;
  size_t takenBytes_ = 0;
  bool taken_ = false;
  size_t linesTaken_ = 0;
  double parseSeconds_ = 0, parseSecondsAfterFirst_ = 0;
};

} // namespace cellrun::tool

#endif // CELLRUN_TOOLS_REQUESTREADER_H
