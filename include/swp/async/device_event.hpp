#pragma once
// The device event as the async layer carries it: a declaration only.

namespace swp {

/// A recorded point in a device stream's work (swp/device/event.hpp defines it: one concrete
/// type for every backend, with the backend's native handle inside where it has one). The async
/// layer only carries a producer's event from producer to consumer inside a Future and hands it
/// to the consumer's stream (`stream.wait(event, generation)`); it never looks inside, so this
/// layer needs no more than the name, and a stream's wait takes the event's own type (nothing
/// to downcast).
class Event;

}  // namespace swp
