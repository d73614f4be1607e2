// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A CUDA graph: the kernels one thread queues on a GPU between capture_begin and capture_end,
// recorded once and launched whole by replay (PyTorch's torch.cuda.CUDAGraph). A small
// training step is a few hundred launches of a few microseconds each; replayed, it is one.
//
//   cuda::Graph graph(device_index);
//   graph.capture_begin();
//   ... queue the step's work (nothing runs yet) ...
//   graph.capture_end();   // or abort_capture() when queuing it threw
//   graph.replay();        // runs it; again for every later step
//
// A replay reads and writes the very memory the capture used: the inputs are copied into
// tensors made before the capture, and the tensors the capture made come from the graph's own
// memory pool, which no tensor outside it is given while the graph lives. What a capture
// cannot hold is refused by name (a copy to the host, a synchronize: DeviceError).
//
// Numbers that change from step to step (an optimizer's step size, a dropout seed) cannot be
// baked into the recorded kernels: those kernels read them from device memory that
// scalars() hands out during the capture, and whose `next` function gives the value for each
// later replay, in the order they were handed out.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace nns::cuda {

class Graph {
 public:
  explicit Graph(int device);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Starts recording what this thread queues on the device (DeviceError without a backend,
  // or when this thread captures already).
  void capture_begin();
  // Ends the recording and makes the graph ready to replay; a DeviceError when the capture
  // failed (the graph is then not captured).
  void capture_end();
  // Ends a capture whose work could not be queued; nothing is kept.
  void abort_capture() noexcept;
  bool captured() const { return captured_; }
  // The captured graph's nodes: the kernels, copies and cuBLAS launches of one replay.
  size_t nodes() const { return nodes_; }
  // Refills every scalar (next()), then launches the graph on the device's compute stream.
  // The first replay after the capture uses the values the capture was given.
  void replay();

  // The graph this thread is capturing, or nullptr.
  static Graph* capturing();

  // During a capture: device memory holding `value` for the kernels being recorded to read,
  // refilled with next() before each later replay. nullptr when this thread captures nothing
  // (the caller then passes the value itself).
  template <class S>
  static const S* scalars(const S& value, std::function<S()> next) {
    Graph* g = capturing();
    if (g == nullptr) return nullptr;
    return static_cast<const S*>(
        g->add_scalars(&value, sizeof(S), [next = std::move(next)](void* dst) {
          const S v = next();
          *static_cast<S*>(dst) = v;
        }));
  }

 private:
  const void* add_scalars(const void* value, size_t size, std::function<void(void*)> refill);

  int device_;
  void* handle_ = nullptr;
  bool captured_ = false;
  size_t nodes_ = 0;
  bool first_replay_ = false;
  char* scalars_device_ = nullptr;
  char* scalars_host_ = nullptr;
  size_t scalars_used_ = 0;
  struct Slot {
    size_t offset;
    std::function<void(void*)> refill;
  };
  std::vector<Slot> slots_;
};

}  // namespace nns::cuda
