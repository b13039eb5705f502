// The serving engine's trace bookkeeping (issue 21): what trace.json shows of a run, on the
// tracks it owns — the engine's steps, KV loads and KV stores, every GPU's compute and host-link
// copies (with their rates as counters), the requests on non-overlapping lanes, and the step
// counters (VRAM KV used, scheduled tokens, waiting requests). The engine, its step groups and
// the KV stores' store hook report what happened; this part decides where it is drawn. Without a
// TraceWriter (trace: false) every call is a no-op. With `check` (RunSpec::check) a copy that ends
// before it starts is an invariant violation (std::logic_error).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/trace_writer.hpp"
#include "serving/rank.hpp"

namespace kappasim {

class EngineTrace {
 public:
  // `gpus`: the fabric index of every GPU of the replica (each gets its compute and link tracks).
  EngineTrace(TraceWriter* trace, const std::vector<int>& gpus, bool check);
  bool on() const { return m_trace != nullptr; }

  // A finished request's span, arrival to finish, on the first lane free over it.
  void request(std::uint64_t id, double arrival_s, double end_s);
  // A store's copies (or a lower level's write): the engine's store span and the GPUs' copies.
  void store(const CopyGroup& c, double start_s);
  // A copy group's spans and rates on its GPUs' link tracks.
  void copies(const CopyGroup& c, const std::string& what);
  // Spans: a load on the engine's load track; a link phase and a compute step on every GPU of
  // `ranks` (a compute step also on the engine's step track).
  void load(const std::string& what, double t0, double t1);
  void link(const std::vector<Rank*>& ranks, const std::string& what, double t0, double t1);
  void compute(const std::vector<Rank*>& ranks, const std::string& name, double t0, double t1);
  // The step's counters at its start.
  void step(double start_s, double kv_used, std::int64_t tokens, std::size_t waiting);

 private:
  TraceWriter* m_trace;
  bool m_check;
  int m_step = -1, m_load = -1, m_store = -1;
  std::map<int, int> m_gpu_compute, m_gpu_link;  // by fabric GPU
  LaneAssigner m_lanes;                          // non-overlapping request lanes
};

}  // namespace kappasim
