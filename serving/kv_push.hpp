// P/D disaggregation's layer-wise push (cluster.handoff.send: push_layer; docs/disaggregation.md):
// the prefill instance sends each layer's KV of a prompt to the decode instance chosen at the
// request's arrival as that layer's compute of the prompt's last chunk ends, as vLLM's
// P2pNcclConnector does (save_kv_layer after each attention layer, whole prompt per layer;
// PUT_ASYNC: one send thread per worker, P2pNcclEngine.send_async, each send a ZMQ PUT round trip
// then one ncclSend). Each GPU's sends go one after another in the order the layers were computed
// (one queue per pipeline stage of a rank: a stage's GPUs hold its layers and each has its own
// thread, all of a stage's GPUs sending their shares of a layer together); a send costs the
// profile's `fixed`, then its bytes leave the prefill GPUs through their NIC ports
// (Endpoint::Remote) and enter the decode GPUs through theirs, no faster than the profile's
// posting cap. When a request's last layer has arrived it tells the cluster (OnPushed). SystemC:
// one sender process per rank and stage.
#pragma once

#include <systemc>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "serving/handoff.hpp"
#include "serving/rank.hpp"
#include "serving/run_spec.hpp"

namespace kappasim {

struct Sequence;

// The P/D hand-off's transfers at one end (KvPull::send, KvPush::receive): one DMA transfer per
// GPU of `rank` with bytes to move, in `dir` through the GPU's NIC port (Endpoint::Remote), the
// group's `rate_cap_Bps` (0: none) shared by bytes; not yet issued. `who` names the caller in the
// error for a size mismatch.
std::shared_ptr<CopyGroup> nic_copy_group(const Rank& rank, const std::vector<double>& gpu_bytes,
                                          Direction dir, double rate_cap_Bps, const char* who);

class KvPush {
 public:
  // The decode side of one send of request `id`: `gpu_bytes[k]` enter GPU k of the decode rank
  // through its NIC port, all together no faster than `rate_cap_Bps` (0: none); returns the
  // group to wait for (null: none).
  using Receive = std::function<std::shared_ptr<CopyGroup>(
      std::uint64_t id, const std::vector<double>& gpu_bytes, double rate_cap_Bps)>;
  // Request `id`'s sends ran from start_s (its first) to end_s (its last), `bytes` per decode
  // rank in all.
  using OnPushed =
      std::function<void(std::uint64_t id, double start_s, double end_s, double bytes)>;
  // `layout`: this (prefill) engine's ranks' (tp, pp); `kv_bytes_per_token_gpu`: what one GPU of
  // a rank holds per token over its stage's layers (before GpuUnit::kv_share).
  KvPush(const RunSpec& spec, HandoffSpec handoff, KvRankLayout layout,
         double kv_bytes_per_token_gpu, Receive receive, OnPushed on_pushed);
  ~KvPush();

  // The compute of layers [first, first + n) of the model, for a step holding the last chunk of
  // s's prompt on `rank`, starts now and lasts compute_s: layer first + j is computed at
  // now + (j + 1) compute_s / n [A: a step's layers take equal time], and its send is queued
  // then.
  void computed(Rank& rank, const Sequence& s, int first, int n, double compute_s);
  // The decode side of a send (ServingEngine::receive_kv): `gpu_bytes[k]` enter GPU k of `rank`
  // through its NIC port into HBM (Endpoint::Remote, GPUDirect RDMA), all together no faster
  // than `rate_cap_Bps` (0: none). Returns the started group.
  static std::shared_ptr<CopyGroup> receive(Rank& rank, const std::vector<double>& gpu_bytes,
                                            double rate_cap_Bps);

 private:
  struct Send {
    Rank* rank = nullptr;
    std::uint64_t id = 0;
    std::int64_t tokens = 0;
    int layer = 0;
    double ready_s = 0;
  };
  struct Stream {
    std::deque<Send> q;
    sc_core::sc_event ev;
  };
  struct Pushing {
    int sent = 0;       // layers sent
    bool done = false;  // every layer has arrived (OnPushed called)
    double start_s = -1, bytes = 0;
  };
  void sender(Stream& st);
  void send_one(const Send& x);

  const RunSpec& m_spec;
  HandoffSpec m_handoff;
  KvRankLayout m_layout;
  double m_bkv_gpu;
  Receive m_receive;
  OnPushed m_on_pushed;
  std::vector<int> m_stage_first;                                    // each stage's first layer
  std::map<std::pair<int, int>, std::unique_ptr<Stream>> m_streams;  // (rank, stage)
  std::map<std::uint64_t, Pushing> m_pushing;
};

}  // namespace kappasim
