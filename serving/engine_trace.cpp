#include "serving/engine_trace.hpp"

#include <stdexcept>

namespace kappasim {

EngineTrace::EngineTrace(TraceWriter* trace, const std::vector<int>& gpus, bool check)
    : m_trace(trace), m_check(check) {
  if (!m_trace) return;
  m_step = m_trace->track("engine", "steps (compute)");
  m_load = m_trace->track("engine", "KV loads (all GPUs)");
  m_store = m_trace->track("engine", "KV stores (all GPUs)");
  for (int fabric : gpus) {
    const std::string g = "gpu" + std::to_string(fabric);
    m_gpu_compute[fabric] = m_trace->track(g, "compute");
    m_gpu_link[fabric] = m_trace->track(g, "host link (copies)");
  }
}

void EngineTrace::request(std::uint64_t id, double arrival_s, double end_s) {
  if (!m_trace) return;
  const int lane =
      m_trace->track("requests", "lane " + std::to_string(m_lanes.place(arrival_s, end_s)));
  m_trace->span(lane, "request " + std::to_string(id), arrival_s, end_s);
}

void EngineTrace::store(const CopyGroup& c, double start_s) {
  if (!m_trace) return;
  m_trace->span(m_store, "store", start_s, c.g.end_s);
  copies(c, "store");
}

void EngineTrace::copies(const CopyGroup& c, const std::string& what) {
  if (!m_trace) return;
  for (const TransferRequest& r : c.rs) {
    if (m_check && r.end_s < r.start_s)
      throw std::logic_error("invariant violated: a copy ends before it starts (time went back)");
    m_trace->span(m_gpu_link.at(r.gpu), what, r.start_s, r.end_s);
    const double dt = r.end_s - r.start_s;
    if (dt > 0)
      m_trace->counter("gpu" + std::to_string(r.gpu),
                       what.rfind("store", 0) == 0 ? "D2H GB/s" : "H2D GB/s", r.start_s,
                       r.bytes / dt / 1e9);
  }
}

void EngineTrace::load(const std::string& what, double t0, double t1) {
  if (m_trace) m_trace->span(m_load, what, t0, t1);
}

void EngineTrace::link(const std::vector<Rank*>& ranks, const std::string& what, double t0,
                       double t1) {
  if (!m_trace) return;
  for (const Rank* r : ranks)
    for (std::size_t k = 0; k < r->gpus->size(); ++k)
      m_trace->span(m_gpu_link.at(r->gpus->at(k).fabric), what, t0, t1);
}

void EngineTrace::compute(const std::vector<Rank*>& ranks, const std::string& name, double t0,
                          double t1) {
  if (!m_trace) return;
  m_trace->span(m_step, name, t0, t1);
  for (const Rank* r : ranks)
    for (std::size_t k = 0; k < r->gpus->size(); ++k)
      m_trace->span(m_gpu_compute.at(r->gpus->at(k).fabric), name, t0, t1);
}

void EngineTrace::step(double start_s, double kv_used, std::int64_t tokens, std::size_t waiting) {
  if (!m_trace) return;
  m_trace->counter("engine", "VRAM KV used (fraction)", start_s, kv_used);
  m_trace->counter("engine", "scheduled tokens", start_s, static_cast<double>(tokens));
  m_trace->counter("engine", "waiting requests", start_s, static_cast<double>(waiting));
}

}  // namespace kappasim
