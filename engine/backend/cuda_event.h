// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A CUDA event on a device's compute stream (torch.cuda.Event(enable_timing=True)): recorded
// between the kernels queued before and after it, so that the time between two events is the
// device's time for the work between them, not the host's time to queue it. The profiler
// (engine/train/profiler.h) times modules with pairs of them on a GPU.
//
//   cuda::Event start(device), end(device);
//   start.record();
//   ... queue kernels ...
//   end.record();
//   double s = cuda::Event::elapsed_seconds(start, end);   // waits for `end`
//
// Made and recorded only outside a CUDA graph capture (a DeviceError inside one). Without a
// backend or a device, making one is a DeviceError saying why.
#include <cstdint>

namespace nns::cuda {

class Event {
 public:
  explicit Event(int device);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Records the event on the device's compute stream after what is queued there now.
  void record();
  // Waits for both events and returns the device time between them, in seconds.
  static double elapsed_seconds(const Event& start, const Event& end);

 private:
  int device_ = 0;
  void* event_ = nullptr;  // the backend's cudaEvent_t
};

}  // namespace nns::cuda
