//===- SessionRouting.cpp - A session's id from the x-sequence-id header --===//
#include "SessionRouting.h"

#include <cctype>
#include <limits>

using namespace cellrun;

namespace {
/// The header's value as an id >= 1; nullopt when it is anything else
/// (signs, spaces, other characters, 0, more than 64 bits).
std::optional<uint64_t> parseId(const std::string &text) {
  if (text.empty() || text.size() > 20)
    return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return std::nullopt;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10)
      return std::nullopt;
    value = value * 10 + digit;
  }
  if (value == 0)
    return std::nullopt;
  return value;
}
} // namespace

Status serve::applySequenceIdHeader(const std::optional<std::string> &header,
                                    const std::string &where,
                                    SessionChunk &session) {
  if (header) {
    std::optional<uint64_t> id = parseId(*header);
    if (!id)
      return Status(StatusCode::InvalidArgument,
                    where + ": the " + kSequenceIdHeader +
                        " header must be an integer >= 1, not '" +
                        header->substr(0, 64) + "'");
    if (session.id != 0 && session.id != *id)
      return Status(
          StatusCode::InvalidArgument,
          where + ": the " + kSequenceIdHeader + " header (" +
              std::to_string(*id) + ") and the sequence_id parameter (" +
              std::to_string(session.id) + ") name different sessions");
    session.id = *id;
  }
  if (session.id == 0 && (session.start || session.end))
    return Status(StatusCode::InvalidArgument,
                  where +
                      ": sequence_start and sequence_end need a "
                      "sequence_id (a parameter or the " +
                      kSequenceIdHeader + " header)");
  return Status::ok();
}
