// Prints the CUDA device the installed runtime finds, or why it finds none
// (install_test.sh checks a CPU-only runtime says it was built without CUDA).
#include "cellrun/Device.h"

#include <cstdio>

int main() {
  auto device = cellrun::probeCudaDevice();
  std::printf("%s\n", device.ok() ? device.value().describe().c_str()
                                  : device.status().message().c_str());
  return 0;
}
