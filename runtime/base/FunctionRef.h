//===- FunctionRef.h - A callable passed down, not stored -------*- C++ -*-===//
//
// A non-owning reference to a callable (like llvm::function_ref): calling
// it costs an indirect call, making one costs nothing, where std::function
// may allocate for a lambda with a few captures. Valid only while the
// callable it refers to lives: pass it down, never keep it.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_SCHED_FUNCTIONREF_H
#define CELLRUN_SCHED_FUNCTIONREF_H

#include <type_traits>
#include <utility>

namespace cellrun {

template <typename Signature> class FunctionRef;

template <typename Result, typename... Args>
class FunctionRef<Result(Args...)> {
public:
  template <typename Callable,
            typename = std::enable_if_t<!std::is_same_v<
                std::remove_cv_t<std::remove_reference_t<Callable>>,
                FunctionRef>>>
  FunctionRef(Callable &&callable) // NOLINT: implicit, like a function
      : object_(const_cast<void *>(static_cast<const void *>(&callable))),
        call_([](void *object, Args... args) -> Result {
          return (*static_cast<std::remove_reference_t<Callable> *>(object))(
              std::forward<Args>(args)...);
        }) {}

  Result operator()(Args... args) const {
    return call_(object_, std::forward<Args>(args)...);
  }

private:
  void *object_;
  Result (*call_)(void *, Args...);
};

} // namespace cellrun

#endif // CELLRUN_SCHED_FUNCTIONREF_H
