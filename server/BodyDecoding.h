//===- BodyDecoding.h - Compressed request bodies, bounded ------*- C++ -*-===//
//
// A request body sent with Content-Encoding gzip, deflate or br is inflated
// here, with the server's body limit applied to the decoded bytes as they
// are produced: a small body that would inflate past the limit stops at the
// limit (413) and never takes more memory than the limit.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SERVE_BODYDECODING_H
#define CELLRUN_TOOLS_SERVE_BODYDECODING_H

#include "cellrun/Status.h"

#include <string>
#include <string_view>

namespace cellrun::serve {

/// `body` decoded per `encoding` (a Content-Encoding value: "", "identity",
/// "gzip", "x-gzip", "deflate" or "br", any case; a list such as
/// "gzip, identity" is decoded right to left). At most `limit` decoded
/// bytes: ResourceExhausted past it; InvalidArgument for a corrupt body;
/// Unsupported for another encoding.
Result<std::string> decodeBody(std::string body, std::string_view encoding,
                               size_t limit);

} // namespace cellrun::serve

#endif // CELLRUN_TOOLS_SERVE_BODYDECODING_H
