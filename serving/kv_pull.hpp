// A serving engine's loads outside the steps (issue 21): the P/D pull path and the async tier
// loads. A request the scheduler admitted to load its KV outside the steps (vLLM:
// WAITING_FOR_REMOTE_KVS) is loaded on its rank's one worker stream, one request after another in
// admission order: on a P/D decode engine, the pull of its prompt's KV from the prefill instance
// (every GPU of the rank reads its share through its NIC, GPUDirect RDMA, no faster than the
// worker posts the descriptors; docs/disaggregation.md); otherwise the async load from the tier
// (serving.stack.load: async) that the caller passes (on a P/D decode engine with its own tier, a
// preempted request's reload: ServingEngine::relookup). Then the scheduler takes the
// request into its steps (Scheduler::pulled) when the step group polls it at a step's end
// (take_loaded; push_layer's receive at once) and the engine's work event fires. SystemC: run()
// is called in a process of its own per request.
#pragma once

#include <systemc>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "serving/handoff.hpp"
#include "serving/kv_push.hpp"
#include "serving/rank.hpp"
#include "serving/run_spec.hpp"

namespace kappasim {

// The prefill rank a pull reads from: its KV layout, and whether it shares this engine's host
// (docs/disaggregation.md, "Prefill and decode on one node"). nvlink_base < 0: another node, the
// bytes cross both GPUs' NIC ports (Endpoint::Remote). Else the pull is GPU-to-GPU over NVLink:
// in this engine's fabric, the prefill rank's GPU k is the host's GPU nvlink_base + k (a GPU
// past this engine's own, standing for the prefill GPU: its HBM and NVLink port out carry only
// this pull here; the prefill node's own fabric carries the same bytes out of the real ones).
struct HandoffSource {
  KvRankLayout layout;
  int nvlink_base = -1;
};

class KvPull {
 public:
  // A pull of request `id`'s `bytes` ran from start_s to end_s (the prefill instance may then
  // release its copy); may be empty.
  using OnPulled =
      std::function<void(std::uint64_t id, double start_s, double end_s, double bytes)>;
  // The prefill side of request `id`'s pull: `gpu_bytes[k]` leave GPU k of the prefill rank
  // holding the request (stage-major, as RankGpus) through its NIC port (GPUDirect RDMA; 0: the
  // GPU sends nothing), all of them together no faster than `rate_cap_Bps` (0: no cap); returns
  // the group to wait for (null: none). Empty: the prefill side is not modelled (an engine
  // outside a cluster).
  using SendKv = std::function<std::shared_ptr<CopyGroup>(
      std::uint64_t id, const std::vector<double>& gpu_bytes, double rate_cap_Bps)>;
  // How the prefill rank holding request `id` lays out its KV (the re-shard's source) and where
  // it sits. Empty: as this engine's ranks do, on another node.
  using SourceLayout = std::function<HandoffSource(std::uint64_t id)>;
  // `layout`: this engine's ranks' (tp, pp); `kv_bytes_per_token_gpu`: what one GPU of a rank
  // holds per token (its pipeline stage's share is GpuUnit::kv_share); `hybrid` (serving.kv_cache:
  // hybrid): what one GPU holds of a prefix by layer kind, the pull's bytes then.
  KvPull(std::size_t ranks, const RunSpec& spec, EngineRole role, HandoffSpec handoff,
         KvRankLayout layout, double kv_bytes_per_token_gpu, std::optional<HybridKv> hybrid,
         OnPulled on_pulled, SendKv send_kv, SourceLayout source_layout, sc_core::sc_event& work);
  ~KvPull();

  // An async load (serving.stack.load: async) is the copy engines' DMA copies outside the steps:
  // InputError naming serving.load_path when `path` (the configured load path's strategy)
  // cannot run there.
  static void check_async(const RunSpec& spec, const LoadPathStrategy& path);
  // The prefill side of a pull (ServingEngine::send_kv): `gpu_bytes[k]` of a request's KV leave
  // GPU k of `rank` through its NIC port (Endpoint::Remote, GPUDirect RDMA), or, with
  // `nvlink_base` >= 0 (the decode GPUs share this host of `system_gpus`, past the sender's own
  // from GPU nvlink_base), over NVLink (Endpoint::PeerGpu); all together no faster than
  // `rate_cap_Bps` (0: no cap). Returns the started group.
  static std::shared_ptr<CopyGroup> send(Rank& rank, int system_gpus,
                                         const std::vector<double>& gpu_bytes, double rate_cap_Bps,
                                         int nvlink_base);

  // Request s's load outside the steps on `rank` (`load_async`: the tier's, when s is not a P/D
  // pull, Sequence::pd_handoff).
  void run(Rank& rank, Sequence* s, const std::function<void()>& load_async);
  // An async tier load's copy stream on rank r (serving.stack.load: async): the worker's thread
  // (held by run) issues one request at a time, and its copies queue on one CUDA stream behind
  // the previous request's, so a request's CPU work overlaps the previous request's copies.
  // begin_copies, when its copies start: takes the stream (waiting for the previous copies),
  // then frees the thread for the next request; returns the time it waited. end_load: frees
  // the stream if it was taken, else the thread.
  double begin_copies(std::size_t r);
  void end_load(std::size_t r, bool copies_begun);
  // P/D push_layer (a decode engine; empty: pull): instead of pulling, wait until the prefill
  // node's layer sends of request `id` have all arrived; returns their bytes per rank.
  std::function<double(std::uint64_t id)> wait_pushed;
  // P/D push_layer (a prefill engine; null otherwise): its layer sends during the steps, the
  // other end of the same hand-off (serving/kv_push).
  std::unique_ptr<KvPush> push;
  // Whether the engine hands a request loaded outside the steps over at step granularity
  // (docs/serving-stacks.md "When an async load's request runs"; docs/disaggregation.md): an
  // async tier load's, and a P/D decode engine's pull (vLLM's NixlConnector goes through the same
  // scheduler states: start_load_kv posts the reads, get_finished polls them), not push_layer's
  // receive. The worker starts the load in the step that parks the request (StepGroup), and
  // run() keeps the request, its copies done, until the step group polls it at a step's end
  // (take_loaded, vLLM's get_finished) instead of handing it to the scheduler at once.
  bool step_handoff() const { return m_role != EngineRole::Decode || !wait_pushed; }
  // The requests of rank r whose loads or pulls ended since the last call (vLLM's get_finished:
  // finished_recving), oldest first.
  std::vector<Sequence*> take_loaded(std::size_t r);
  bool has_loaded(std::size_t r) const { return !m_loaded.at(r).empty(); }

 private:
  double pull(Rank& rank, const Sequence& s);  // the P/D pull; returns its bytes

  const RunSpec& m_spec;
  EngineRole m_role;
  HandoffSpec m_handoff;
  KvRankLayout m_layout;
  double m_bkv_gpu;
  std::optional<HybridKv> m_hybrid;
  OnPulled m_on_pulled;
  SendKv m_send_kv;
  SourceLayout m_source_layout;
  sc_core::sc_event& m_work;
  std::vector<std::unique_ptr<sc_core::sc_mutex>> m_stream;  // per rank: the worker's thread
  std::vector<std::unique_ptr<sc_core::sc_mutex>> m_copies;  // per rank: its copy stream
  std::vector<std::vector<Sequence*>> m_loaded;  // per rank: loads ended, not yet polled
};

}  // namespace kappasim
