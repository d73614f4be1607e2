// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The batches of an epoch as a training step on a device takes them. On a GPU, a batch taken
// with `tensor.to(cuda)` crosses while the GPU waits: the host copies it into the driver's
// staging memory and the copy runs on the compute stream, between two steps. Here, while step
// k runs, batch k+1 is copied into page-locked (pinned) host memory and its copy to the GPU is
// queued on a copy stream of its own, so it runs beside step k's kernels; step k+1's kernels
// wait for it on the device (the compute stream waits for the copy's event), the host does not.
// As PyTorch's DataLoader(pin_memory=True) with `.to(device, non_blocking=True)` on a side
// stream. On the CPU it hands the host batch through, at no cost.
//
//   DeviceBatches batches(device);
//   const Batch host = batches.host_batch(epoch, b);   // batch b (prefetched or made now)
//   const Batch on_device = batches.on_device();       // its tensors on the device; queues b+1
//
// Which batch: the prefetched batch is used only when host_batch asks for the very batch it
// is, batch b+1 of the same EpochBatches (an epoch is known by its order tensor, which every
// DataLoader::epoch call makes anew). Anything else (a reset, a restored state, a new batch
// size, a new epoch, a skipped batch) drops it and copies the batch asked for, so the batches
// are those of the synchronous copy, in the same order, bit for bit. An epoch's last batch
// prefetches nothing: the next epoch's batches are not known until it begins.
//
// Lifetime rules on a GPU:
// - Two pinned staging buffers, used in turn. A buffer is rewritten only after the copy that
//   read it has finished (the host waits for that copy's event, two copies later, when it has
//   long finished).
// - The device tensors come from the engine's allocator (the caching allocator, ordered by the
//   compute stream). So the copy stream first waits for what the compute stream has queued
//   when the copy is queued (a block freed by a queued kernel may be handed out at once), and
//   a prefetched batch that is dropped has the compute stream wait for its copy before its
//   blocks go back. The copy of batch k+1 is queued before step k's kernels, so it waits only
//   for step k-1's.
// - on_device() makes the compute stream wait for the batch's copy; it does not wait on the host.
// Without pinned memory (the driver refuses it) the batch crosses with tensor.to(device).
//
// One thread uses an instance (the training session's worker). Errors from the device are
// DeviceError.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "engine/data/dataloader.h"

namespace nns::data {

class DeviceBatches {
 public:
  explicit DeviceBatches(Device device);
  ~DeviceBatches();
  DeviceBatches(const DeviceBatches&) = delete;
  DeviceBatches& operator=(const DeviceBatches&) = delete;

  Device device() const { return device_; }

  // Makes batch b of `epoch` the current batch and returns it as the host has it: the batch
  // prefetched for it when there is one, else epoch[b]. IndexError outside the epoch.
  Batch host_batch(const EpochBatches& epoch, int64_t b);
  // The current batch on the device (on the CPU: the host batch itself), the same tensors at
  // every call. The first call for a batch queues the copy of the epoch's next batch.
  Batch on_device();
  // Drops the current and the prefetched batch (their device memory goes back).
  void clear();

  // Tests only: off, on_device() copies with tensor.to(device) and nothing is prefetched (the
  // path this class replaced, to compare a run with). Process-wide; on by default.
  static void set_prefetch_for_testing(bool on);

 private:
  struct Slot {
    void* pinned = nullptr;  // the host staging buffer
    size_t capacity = 0;
    void* done = nullptr;  // the backend's event, recorded after the slot's copy
  };
  struct Pending {
    EpochBatches epoch;
    int64_t index = 0;
    Batch host;
    std::optional<Batch> device;  // nullopt: not copied yet
    Slot* slot = nullptr;         // the copy's slot (nullptr: copied by tensor.to)
    bool waited = false;          // the compute stream waits for the copy (or none is needed)
  };

  // Queues pending's copy to the device (stage into the next slot, copy asynchronously).
  void queue_copy(Pending& pending);
  // The compute stream waits for pending's copy (before its tensors are used or freed).
  void wait_on_device(const Pending& pending);
  void release(std::optional<Pending>& pending);

  Device device_;
  std::optional<Pending> current_;
  std::optional<Pending> next_;  // batch current_->index + 1 of the same epoch, copy queued
  Slot slots_[2];
  int last_slot_ = 1;
};

}  // namespace nns::data
