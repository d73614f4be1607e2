// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/backend/cuda_event.h"

#include <string>

#include "engine/backend/cuda_backend.h"
#include "engine/tensor/error.h"

namespace nns::cuda {

Event::Event(int device) : device_(device) {
  const CudaBackendTables* t = backend();
  if (t == nullptr || device_count() == 0) throw DeviceError("CUDA event: " + unavailable_reason());
  if (device < 0 || device >= device_count()) {
    throw DeviceError("CUDA event: no device cuda:" + std::to_string(device) +
                      " (this machine has " + std::to_string(device_count()) + ")");
  }
  event_ = t->event_create(device);
}

Event::~Event() {
  // A backend is loaded whenever an event was made, and stays loaded until exit.
  if (event_ != nullptr) backend()->event_destroy(event_);
}

void Event::record() {
  backend()->event_record(event_);
}

double Event::elapsed_seconds(const Event& start, const Event& end) {
  return static_cast<double>(backend()->event_elapsed_ms(start.event_, end.event_)) / 1000.0;
}

}  // namespace nns::cuda
