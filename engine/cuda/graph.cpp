// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA graphs (the capture and replay that engine/backend/cuda_graph.h wraps): one training step
// queued once, with its kernels, copies and cuBLAS calls, then launched whole, so the host no
// longer pays a launch for every kernel of a small step.
//
// The capture runs on a stream of its own in relaxed mode (the caching allocator may still
// take a segment from the driver) and allocates from a private pool (allocator.cpp). Each graph
// carries a block of scalars its kernels read from device memory (an optimizer's step size, a
// dropout seed), which the engine rewrites in pinned host memory before each replay; the
// replay copies them over on the compute stream, then launches the graph after them.
#include <atomic>

#include "engine/cuda/backend.h"
#include "engine/cuda/runtime.h"

namespace nns::cuda {
namespace {

struct Graph {
  int device = 0;
  uint64_t pool = 0;
  cudaStream_t capture_stream = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  size_t scalar_bytes = 0;
  void* scalars_device = nullptr;
  void* scalars_host = nullptr;  // pinned
  cudaEvent_t scalars_copied = nullptr;
  bool copy_pending = false;
};

std::atomic<uint64_t> g_next_pool{1};

void destroy(Graph* g) {
  if (g->exec) cudaGraphExecDestroy(g->exec);
  if (g->graph) cudaGraphDestroy(g->graph);
  if (g->scalars_copied) cudaEventDestroy(g->scalars_copied);
  if (g->scalars_device) cudaFree(g->scalars_device);
  if (g->scalars_host) cudaFreeHost(g->scalars_host);
  if (g->capture_stream) cudaStreamDestroy(g->capture_stream);
  cudaGetLastError();
  release_private_pool(g->device, g->pool);
  delete g;
}

}  // namespace

void* backend_graph_begin(int device, size_t scalar_bytes, void** scalars_device,
                          void** scalars_host) {
  if (thread_capture().stream != nullptr)
    throw DeviceError("CUDA graph: this thread is capturing a graph already");
  set_device(device);
  auto* g = new Graph;
  g->device = device;
  g->pool = g_next_pool.fetch_add(1);
  g->scalar_bytes = scalar_bytes;
  try {
    begin_private_pool(device, g->pool);
    check(cudaStreamCreateWithFlags(&g->capture_stream, cudaStreamNonBlocking),
          "CUDA graph: cudaStreamCreate");
    check(cudaEventCreateWithFlags(&g->scalars_copied, cudaEventDisableTiming),
          "CUDA graph: cudaEventCreate");
    if (scalar_bytes > 0) {
      check(cudaMalloc(&g->scalars_device, scalar_bytes), "CUDA graph: scalars");
      check(cudaHostAlloc(&g->scalars_host, scalar_bytes, cudaHostAllocDefault),
            "CUDA graph: pinned scalars");
    }
    check(cudaStreamBeginCapture(g->capture_stream, cudaStreamCaptureModeRelaxed),
          "CUDA graph: cudaStreamBeginCapture");
  } catch (...) {
    destroy(g);
    throw;
  }
  thread_capture() = ThreadCapture{device, g->capture_stream, g->pool};
  *scalars_device = g->scalars_device;
  *scalars_host = g->scalars_host;
  return g;
}

size_t backend_graph_end(void* handle, bool keep) {
  auto* g = static_cast<Graph*>(handle);
  thread_capture() = ThreadCapture{};
  cudaGraph_t graph = nullptr;
  const cudaError_t status = cudaStreamEndCapture(g->capture_stream, &graph);
  if (!keep || status != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    if (keep) check(status, "CUDA graph: the capture failed (cudaStreamEndCapture)");
    return 0;
  }
  g->graph = graph;
  check(cudaGraphInstantiate(&g->exec, graph, 0), "CUDA graph: cudaGraphInstantiate");
  size_t nodes = 0;
  check(cudaGraphGetNodes(graph, nullptr, &nodes), "CUDA graph: cudaGraphGetNodes");
  return nodes;
}

void backend_graph_replay(void* handle, size_t scalar_bytes) {
  auto* g = static_cast<Graph*>(handle);
  if (g->exec == nullptr) throw DeviceError("CUDA graph: replay of a graph that was not captured");
  set_device(g->device);
  cudaStream_t s = stream(g->device);
  if (scalar_bytes > 0) {
    check(cudaMemcpyAsync(g->scalars_device, g->scalars_host, scalar_bytes, cudaMemcpyHostToDevice,
                          s),
          "CUDA graph: scalars");
    check(cudaEventRecord(g->scalars_copied, s), "CUDA graph: cudaEventRecord");
    g->copy_pending = true;
  }
  check(cudaGraphLaunch(g->exec, s), "CUDA graph: cudaGraphLaunch");
}

void backend_graph_wait_scalars(void* handle) {
  auto* g = static_cast<Graph*>(handle);
  if (!g->copy_pending) return;
  check(cudaEventSynchronize(g->scalars_copied), "CUDA graph: cudaEventSynchronize");
  g->copy_pending = false;
}

void backend_graph_destroy(void* handle) {
  auto* g = static_cast<Graph*>(handle);
  if (g == nullptr) return;
  if (thread_capture().pool == g->pool) backend_graph_end(g, false);
  // A replay still running writes to the pool's blocks: they go back to the common cache only
  // after it.
  set_device(g->device);
  cudaStreamSynchronize(stream(g->device));
  destroy(g);
}

}  // namespace nns::cuda
