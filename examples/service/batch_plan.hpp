#pragma once
// The service's pipeline plan: Decode -> Collate -> Compute (on a stream) -> Encode (on a
// copy stream), one iteration per micro-batch.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <swp/swp.hpp>
#include <vector>

#include "protocol.hpp"
#include "request_batch.hpp"
#include "thread_times.hpp"

namespace service {

/// A request as Decode read it: where its payload is in the batch, and whether to compute it.
struct Decoded {
  std::uint64_t id = 0;
  std::uint32_t rounds = 0;
  std::uint32_t offset = 0;  // of the payload in RequestBatch::bodies
  std::uint32_t size = 0;
  Status status = Status::ok;
};

/// The batch as the compute stage takes it: the payloads of the requests to compute, back to
/// back in one buffer (what a GPU service would stage in pinned memory for its H2D copy), and
/// per request its rounds and where its payload starts (offsets has one more entry: the end).
struct Packed {
  std::vector<std::byte> payload;
  std::vector<std::uint32_t> offsets;
  std::vector<std::uint32_t> rounds;
};

/// What the device work of an iteration writes: Compute's digests (one per packed request)
/// and Encode's responses (response_size bytes per request of the batch, in batch order).
/// Read once the iteration retired: the pipeline runs with retire_after_device().
struct BatchFields {
  std::vector<std::uint64_t> digests;
  std::vector<std::byte> responses;
};

using BatchCtx = swp::IterContext<RequestBatch, BatchFields>;

/// The plan: four tasks, each on its own lane, so iterations overlap (Decode of batch i+2 ‖
/// Collate of i+1 ‖ Compute of i ...); stages 0, 0, 1, 2 make it a valid clock plan too.
/// - Decode (lane decode): parses each body's header and checks it; returns the Decoded list.
/// - Collate (lane decode): packs the payloads to compute into one buffer (Packed).
/// - Compute (lane compute, stream "compute"): queues the digests on its stream, as a GPU
///   stage queues kernels; the body returns at once, the stream's thread does the work.
/// - Encode (lane encode, stream "copy"): queues the encoding of every response on the copy
///   stream, which the engine orders after Compute's work with an event (the two-phase
///   dependency), as a GPU service orders its device-to-host copy.
/// Every read is declared (swp::reads), which is also the dependency.
inline swp::Plan<BatchCtx> make_batch_plan() {
  swp::Plan<BatchCtx> plan;
  auto decode =
      plan.add("Decode",
               [](BatchCtx& ctx) {
                 ctx.batch.times.decoded = TraceClock::now();
                 std::vector<Decoded> decoded;
                 decoded.reserve(ctx.batch.size());
                 for (const RequestBatch::Item& item : ctx.batch.items) {
                   const RequestHeader header = parse_request_header(ctx.batch.body(item));
                   decoded.push_back({
                       .id = header.id,
                       .rounds = header.rounds,
                       .offset = item.offset + static_cast<std::uint32_t>(request_header),
                       .size = item.size - static_cast<std::uint32_t>(request_header),
                       .status = header.rounds <= max_rounds ? Status::ok : Status::bad_request,
                   });
                 }
                 return decoded;
               },
               {.stage = 0, .thread_group = "decode"});

  auto collate = plan.add(
      "Collate",
      [decode](BatchCtx& ctx) -> swp::Co<Packed> {
        const std::vector<Decoded>& decoded = co_await ctx.get(decode);
        Packed packed;
        std::size_t bytes = 0;
        for (const Decoded& d : decoded) bytes += d.status == Status::ok ? d.size : 0;
        packed.payload.resize(bytes);
        packed.offsets.reserve(decoded.size() + 1);
        packed.rounds.reserve(decoded.size());
        std::size_t at = 0;
        for (const Decoded& d : decoded) {
          if (d.status != Status::ok) continue;
          packed.offsets.push_back(static_cast<std::uint32_t>(at));
          packed.rounds.push_back(d.rounds);
          // An empty payload copies nothing: a batch of empty payloads has no buffer at all
          // (payload.data() is null), and memcpy from or to null is undefined even for 0 bytes.
          if (d.size != 0)
            std::memcpy(packed.payload.data() + at, ctx.batch.bodies.data() + d.offset, d.size);
          at += d.size;
        }
        packed.offsets.push_back(static_cast<std::uint32_t>(at));
        co_return packed;
      },
      {.stage = 0, .thread_group = "decode"}, swp::reads(decode));

  auto compute = plan.add(
      "Compute",
      [collate](BatchCtx& ctx, swp::TaskScope& task) -> swp::Co<void> {
        const Packed& packed = co_await ctx.get(collate);
        ctx.digests.assign(packed.rounds.size(), 0);
        // Stream work outlives the body: it captures what stays put until the iteration retired
        // (Collate's output and this context's slot; retire_after_device waits for this work).
        task.enqueue([&packed, digests = ctx.digests.data(), &times = ctx.batch.times] {
          times.compute_begin = TraceClock::now();
          const ThreadTimes start = ThreadTimes::now();
          for (std::size_t i = 0; i < packed.rounds.size(); ++i) {
            const std::span<const std::byte> payload(packed.payload.data() + packed.offsets[i],
                                                     packed.offsets[i + 1] - packed.offsets[i]);
            digests[i] = digest(payload, packed.rounds[i]);
          }
          const ThreadTimes spent = ThreadTimes::now() - start;
          times.compute_cpu = spent.cpu;
          times.compute_wait = spent.wait;
          times.compute_end = TraceClock::now();
        });
      },
      {.stage = 1, .stream = "compute", .thread_group = "compute"}, swp::reads(collate));

  plan.add(
      "Encode",
      [decode](BatchCtx& ctx, swp::TaskScope& task) -> swp::Co<void> {
        const std::vector<Decoded>& decoded = co_await ctx.get(decode);
        ctx.responses.assign(decoded.size() * response_size, std::byte{0});
        // Runs after Compute's digests on the copy stream (the engine queued the event wait).
        task.enqueue([&decoded, &ctx] {
          std::size_t k = 0;
          for (std::size_t j = 0; j < decoded.size(); ++j) {
            const Decoded& d = decoded[j];
            const std::uint64_t result =
                d.status == Status::ok ? answer_of(d.id, ctx.digests[k++]) : 0;
            write_response(ctx.responses.data() + j * response_size, {d.id, d.status, result});
          }
          ctx.batch.times.encoded = TraceClock::now();
        });
      },
      {.stage = 2, .stream = "copy", .thread_group = "encode"}, swp::reads(decode, compute));
  return plan;
}

}  // namespace service
