// Instance and InstanceArray (instance.hpp): an instance's life outside its steps, and the
// storage of one sync entry's instances. Its steps are the core's (engine_core.cpp).

#include "swp/engine/detail/instance.hpp"

#include <new>

namespace swp::detail {

Instance::Instance() = default;
Instance::~Instance() = default;

InstanceArray::InstanceArray(std::size_t capacity)
    : storage_(static_cast<Instance*>(
          ::operator new(capacity * sizeof(Instance), std::align_val_t{alignof(Instance)}))) {}

InstanceArray::~InstanceArray() {
  if (storage_ == nullptr) return;
  for (std::size_t t = size_; t-- > 0;) storage_[t].~Instance();
  ::operator delete(storage_, std::align_val_t{alignof(Instance)});
}

Instance& InstanceArray::emplace() { return *::new (storage_ + size_++) Instance(); }

}  // namespace swp::detail
