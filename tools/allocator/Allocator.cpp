//===- Allocator.cpp - Which malloc a program runs on ---------------------===//
#include "Allocator.h"

#ifdef CELL_MIMALLOC
#include <mimalloc.h>
#endif

std::string cellrun::tool::allocatorName() {
#ifdef CELL_MIMALLOC
  // Calling into the library also keeps it linked (--as-needed).
  int version = mi_version();
  return "mimalloc " + std::to_string(version / 100) + "." +
         std::to_string(version / 10 % 10) + "." + std::to_string(version % 10);
#else
  return "glibc malloc";
#endif
}
