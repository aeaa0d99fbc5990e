//===- RuntimeLibrary.cpp - libcellrun.so's own translation unit ----------===//
//
// The shared runtime library is made of the runtime's static libraries,
// linked whole (cmake/Install.cmake); CMake wants a source of its own for
// it. The version the library was built as, for applications that ask.
//
//===----------------------------------------------------------------------===//
extern "C" const char *cellrun_library_version() { return CELLRUN_VERSION; }
