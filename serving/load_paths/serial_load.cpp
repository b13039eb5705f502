#include "serving/load_paths/serial_load.hpp"

#include "serving/stack_profile.hpp"

namespace kappasim {

double SerialLoadPath::run(LoadContext& ctx, const LoadSplit& ls, std::int64_t requests,
                           const StepTime& compute) {
  const ServingSpec& sv = ctx.spec->serving;
  const int L = ctx.spec->model.num_layers;
  TimeBreakdown& time = *ctx.step_time;
  LoadBoundTimes& bounds = *ctx.step_bounds;
  EngineStats& stats = *ctx.stats;
  const double t0 = ctx.now();
  // The stack's retrieve (serving/stack_profile): in-step CPU before the copies, GPU idle gaps
  // between chunks (serial with the copies), CPU work overlapped with the copies.
  const RetrieveCost rc =
      stack_retrieve(sv.stack, m_path, requests, ls.chunks, ls.link_blocks16, L);
  const RetrieveCost rc_link =
      stack_retrieve(sv.stack, m_path, 1, ls.link_chunks, ls.link_blocks16, L);
  struct InStepCpu {
    double before_s = 0, gap_s = 0, overlap_s = 0;
  } cpu{rc.cpu_before_s, rc_link.gpu_gap_s, rc_link.cpu_overlap_s};
  stats.stack.step_cpu_s += cpu.before_s;
  ctx.wait(cpu.before_s);
  const double bytes = ls.link_tokens * ctx.kv_bytes_per_token_link;  // over the host links
  const double buffer_s = ctx.buffer_copy_s(ls);  // on the GPU, alongside the link's copies
  const double t_x = ctx.now();
  time.load_software_s += t_x - t0;  // the tier's CPU-side retrieve costs
  bounds[LoadBound::Software] += t_x - t0;
  if (bytes > 0) {
    CopyGroup c;
    ctx.start_copies(c, bytes, copy_units(ls, rc_link), m_copy);
    // The link is busy from when the copies start: an async load's start_copies first waits for
    // the previous request's copies on the rank's copy stream (KvPull::begin_copies), a wait
    // that is that request's link time, not this one's (counted twice, the busy share of an
    // async run passed 100%).
    const double t_copies = ctx.now();
    ctx.wait(buffer_s);
    ctx.wait_copies(c);
    ctx.trace_copies(c, "load (" + m_name + ")");
    stats.link_busy_s += (buffer_s > 0 ? c.g.end_s : ctx.now()) - t_copies;
    const CopySplit s = ctx.split_copies(c, t_x);
    time.load_software_s += s.software;
    time.load_link_s += s.link;
    time.load_wait_s += s.wait;
    bounds += s.bounds;
    time.load_link_s += ctx.now() - c.g.end_s;  // buffer copies outlasting the link's
    bounds[LoadBound::Hbm] += ctx.now() - c.g.end_s;
    // GPU idle gaps between chunks (one implicit sync + launch each), then the CPU work that
    // ran alongside the copies if it outlasted them: load software.
    const double t_sw = ctx.now();
    stats.stack.gpu_gap_s += cpu.gap_s;
    ctx.wait(cpu.gap_s);
    const double held = t_x + cpu.overlap_s + cpu.gap_s - ctx.now();
    if (held > 0) {
      stats.stack.cpu_bound_s += held;
      ctx.wait(held);
    }
    time.load_software_s += ctx.now() - t_sw;
    bounds[LoadBound::Software] += ctx.now() - t_sw;
  } else {
    ctx.wait(buffer_s);
    time.load_link_s += ctx.now() - t_x;  // GPU-side buffer copies only
    bounds[LoadBound::Hbm] += ctx.now() - t_x;
  }
  stats.loaded_bytes_gpu += bytes;
  stats.buffer_bytes_gpu += ls.buffer_tokens * ctx.kv_bytes_per_token_gpu;
  ctx.trace_load(m_name, t0, ctx.now());
  const double load_s = ctx.now() - t0;
  ctx.compute(compute);  // LMCache's retrieve blocks the step: then compute
  return load_s;
}

}  // namespace kappasim
