//===- ServerInfo.h - What the server says about itself ---------*- C++ -*-===//
//
// The server name, version, platform and protocol extensions reported by
// both front ends' metadata calls.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SERVE_SERVERINFO_H
#define CELLRUN_TOOLS_SERVE_SERVERINFO_H

#include <string>
#include <vector>

namespace cellrun::serve {

inline constexpr const char *kServerName = "cellrun";
inline constexpr const char *kServerVersion = CELLRUN_VERSION;
/// The model platform of a compiled cellpack.
inline constexpr const char *kPlatform = "cellrun_cellpack";

inline std::vector<std::string> serverExtensions() {
  return {"binary_tensor_data", "sequence", "metrics"};
}

} // namespace cellrun::serve

#endif // CELLRUN_TOOLS_SERVE_SERVERINFO_H
