//===- ScopedEnvironment.h - An environment variable for a scope -*- C++
//-*-===//
//
// The CUDA backend reads some choices from the environment (CELL_CUDA_GEMM,
// CELL_CUDA_EPILOGUE) when it is created; tests set them around that.
//
//===----------------------------------------------------------------------===//
#ifndef CELLC_TEST_UNIT_SCOPEDENVIRONMENT_H
#define CELLC_TEST_UNIT_SCOPEDENVIRONMENT_H

#include <cstdlib>
#include <optional>
#include <string>

namespace cellc::testing {

/// `name` set to `value` while it lives, when `value` is not null (then the
/// value it had comes back, or none).
class ScopedEnvironment {
public:
  ScopedEnvironment(const char *name, const char *value)
      : name_(name), set_(value != nullptr) {
    if (!set_)
      return;
    if (const char *old = std::getenv(name))
      before_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnvironment() {
    if (!set_)
      return;
    if (before_)
      setenv(name_, before_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnvironment(const ScopedEnvironment &) = delete;
  ScopedEnvironment &operator=(const ScopedEnvironment &) = delete;

private:
  const char *name_;
  bool set_;
  std::optional<std::string> before_;
};

} // namespace cellc::testing

#endif // CELLC_TEST_UNIT_SCOPEDENVIRONMENT_H
