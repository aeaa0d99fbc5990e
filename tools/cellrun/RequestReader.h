//===- RequestReader.h - `cellrun run`'s requests, read ahead ---*- C++ -*-===//
//
// Reads request lines (one JSON object a line) ahead of the serving, at most
// a budget of text at a time: runs of lines are parsed and checked against
// the model on all cores, and handed out one by one in input order. The
// first fill reads until the budget is full or the input ends, so a file
// that fits is read whole before the first request is served (the serving's
// own time stays apart); a larger one, or an endless stream, is read on as
// the buffered text falls below half the budget. A line that is not a
// request becomes the result that says why, with its line number.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_REQUESTREADER_H
#define CELLRUN_TOOLS_REQUESTREADER_H

#include "cellrun/Engine.h"

#include <deque>
#include <istream>
#include <optional>

namespace cellrun::tool {

/// A request line: parsed, or the result that says why it was not.
struct InputLine {
  std::optional<Request> request;
  RequestResult refused;
};

class RequestReader {
public:
  /// Reads `input` (owned by the caller) with `parser`, holding at most
  /// about `readAheadBytes` of request text (at least one line) parsed
  /// and not yet taken.
  RequestReader(std::istream &input, const RequestParser &parser,
                size_t readAheadBytes);

  /// Reads and parses until the budget is full or the input ends.
  void fill();
  /// The next line in input order (reading on first when the buffered text
  /// is below half the budget); false once every line has been taken.
  bool next(InputLine &line);

  /// Seconds spent reading and parsing so far, and how many of them after
  /// the first line was taken (while serving).
  double parseSeconds() const { return parseSeconds_; }
  double parseSecondsAfterFirst() const { return parseSecondsAfterFirst_; }
  /// Request lines read so far (blank lines are not counted).
  size_t linesRead() const { return linesRead_; }
  /// True when reading stopped on an error of the stream, not at its end.
  bool readFailed() const { return input_.bad(); }

private:
  /// Reads runs of lines and parses each until `budget` bytes of text are
  /// buffered or the input ends.
  void readUpTo(size_t budget);

  std::istream &input_;
  const RequestParser &parser_;
  size_t readAheadBytes_;
  bool ended_ = false, taken_ = false;
  size_t lineNumber_ = 0, linesRead_ = 0, bufferedBytes_ = 0;
  double parseSeconds_ = 0, parseSecondsAfterFirst_ = 0;
  /// Parsed lines not yet taken, with their text's size.
  std::deque<std::pair<InputLine, size_t>> buffered_;
};

} // namespace cellrun::tool

#endif // CELLRUN_TOOLS_REQUESTREADER_H
