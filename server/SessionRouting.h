//===- SessionRouting.h - A session's id where a proxy can see it -*- C++ -*-//
//
// KServe v2 carries a streaming session's id in the request body (the
// sequence_id parameter), where no load balancer can hash on it. The server
// also takes it from an `x-sequence-id` HTTP header or gRPC metadata key, so
// a standard proxy (HAProxy, Envoy, an Istio DestinationRule) can send every
// chunk of a session to the replica that holds its state; replies carry the
// header back.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_SERVE_SESSIONROUTING_H
#define CELLRUN_SERVE_SESSIONROUTING_H

#include "cellrun/Request.h"
#include "cellrun/Status.h"

#include <optional>
#include <string>

namespace cellrun::serve {

/// The header (HTTP, any case) and metadata key (gRPC, lower case).
inline constexpr const char *kSequenceIdHeader = "x-sequence-id";

/// Merges the x-sequence-id header's text (when the request has one) into
/// the session its parameters name: the header alone names the session; a
/// header and a sequence_id parameter that differ are refused, as is a
/// header that is not an integer >= 1. Then sequence_start and sequence_end
/// must come with an id from either. InvalidArgument, prefixed by `where`.
Status applySequenceIdHeader(const std::optional<std::string> &header,
                             const std::string &where, SessionChunk &session);

} // namespace cellrun::serve

#endif // CELLRUN_SERVE_SESSIONROUTING_H
