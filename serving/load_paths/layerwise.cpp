// layerwise: LMCache's use_layerwise: per layer a copy of that layer's slice of every chunk,
// overlapped with the compute of the previous layer, by the path's declared copy mechanism
// (LoadPathCosts::copy: DMA for the built-in; a copy kernel holds its GPU's SMs while the
// previous layer computes, which then runs on the SMs left). Granularity `layer` simulates every
// layer's load and compute; `step` one flow per GPU for the whole load with compute alongside, and
// the pipeline's fill (the first layer's load) and drain (the last layer's compute) from per-layer
// times. The stack's retrieve: in-step CPU first (fixed + re-hashing), then per layer the CPU
// that issues that layer's (layer, chunk) objects, serial on the rank: a layer's loads end no
// earlier than its issue.
#include <algorithm>

#include "serving/load_paths/registry.hpp"
#include "serving/stack_profile.hpp"

namespace kappasim {

namespace {
class LayerwiseLoadPath : public LoadPathStrategy {
 public:
  explicit LayerwiseLoadPath(CopyPath copy) : m_copy(copy) {}
  std::string name() const override { return "layerwise"; }
  CopyPath copy_path() const override { return m_copy; }
  double run(LoadContext& ctx, const LoadSplit& ls, std::int64_t requests,
             const StepTime& compute) override;

 private:
  CopyPath m_copy;
};

double LayerwiseLoadPath::run(LoadContext& ctx, const LoadSplit& ls, std::int64_t requests,
                              const StepTime& compute) {
  const ServingSpec& sv = ctx.spec->serving;
  const int L = ctx.spec->model.num_layers;
  TimeBreakdown& time = *ctx.step_time;
  EngineStats& stats = *ctx.stats;
  const double t0 = ctx.now();
  const std::int64_t chunks = ls.link_chunks;
  const RetrieveCost rc =
      stack_retrieve(sv.stack, sv.load_path, requests, ls.chunks, ls.link_blocks16, L);
  const double layer_cpu_s =
      stack_retrieve(sv.stack, sv.load_path, 1, chunks, ls.link_blocks16, L).per_layer_cpu_s;
  stats.stack.step_cpu_s += rc.cpu_before_s;
  ctx.wait(rc.cpu_before_s);
  const double bytes = ls.link_tokens * ctx.kv_bytes_per_token_link;  // over the host links
  const bool link = bytes > 0;
  const double buffer_s = ctx.buffer_copy_s(ls);  // buffer → pages, alongside the link per layer
  const double t_pipe = ctx.now();
  CopyGroup c;
  time.load_software_s += t_pipe - t0;  // the tier's CPU-side retrieve costs
  (*ctx.step_bounds)[LoadBound::Software] += t_pipe - t0;
  CopySplit copies;  // Σ over this load's copy groups, plus buffer copies outlasting them
  // A layer's load (or, per step, the whole load) from t_start: its copy group c and buffer
  // copies to buffer_end, under the rank's Python issuing its objects until t_issue; a load ends
  // no earlier than its issue. What held it back is what ended it (its critical path): where the
  // issue ends last, the copies ran under the CPU's issue and the whole span counts as software,
  // whatever held each copy (a faster link would not end it sooner); otherwise the copies' own
  // split, then the buffer copies outlasting them (HBM). Returns the load's end.
  auto settle = [&](double t_start, double buffer_end, double t_issue) {
    const double copies_end = std::max(c.g.end_s, buffer_end);
    if (t_issue > copies_end) {
      stats.stack.cpu_bound_s += t_issue - copies_end;
      copies.software += t_issue - t_start;
      copies.bounds[LoadBound::Software] += t_issue - t_start;
      return t_issue;
    }
    const CopySplit s = ctx.split_copies(c, t_start);
    copies.software += s.software;
    copies.link += s.link;
    copies.wait += s.wait;
    copies.bounds += s.bounds;
    const double extra = std::max(0.0, buffer_end - c.g.end_s);
    copies.link += extra;
    copies.bounds[LoadBound::Hbm] += extra;
    return copies_end;
  };
  const double compute_s = compute.total.compute_time_s;
  const double hbm_bytes = compute.total.hbm_bytes;
  // The compute's own time: compute_s alone, longer where copies share its HBM (GpuCompute's
  // Local flows); the pipeline's overlap is reckoned with it.
  double compute_run = 0;
  auto run_compute = [&](double s, double b) {
    const double t_c = ctx.now();
    CopyGroup k;
    ctx.start_compute(k, s, b);
    ctx.wait_copies(k);
    compute_run += k.g.end_s - t_c;
  };
  double load_end = t_pipe;
  double transfer_s = 0;  // time the links spent moving this step's KV
  double pipe_s = 0;      // time the loads took (link and buffer copies, layer by layer)
  if (sv.granularity == Granularity::Layer) {
    // Load of layer 0, then compute layer l while layer l+1 loads: one DMA per layer per chunk.
    if (link) ctx.start_copies(c, bytes / L, chunks, m_copy);
    ctx.wait(buffer_s / L);
    double end_0 = t_pipe + buffer_s / L;
    if (link) {
      ctx.wait_copies(c);
      transfer_s += c.g.end_s - t_pipe;
      end_0 = settle(t_pipe, end_0, t_pipe + layer_cpu_s);
      ctx.wait(end_0 - ctx.now());
    } else {
      copies.link += end_0 - t_pipe;
      copies.bounds[LoadBound::Hbm] += end_0 - t_pipe;
    }
    pipe_s += end_0 - t_pipe;
    for (int l = 0; l < L; ++l) {
      const double t_l = ctx.now();
      if (l + 1 < L && link) ctx.start_copies(c, bytes / L, chunks, m_copy);
      run_compute(compute_s / L, hbm_bytes / L);
      if (l + 1 < L) {
        double end_l = t_l + buffer_s / L;
        if (link) {
          ctx.wait_copies(c);
          transfer_s += c.g.end_s - t_l;
          end_l = settle(t_l, end_l, t_l + layer_cpu_s);
        } else {
          copies.link += buffer_s / L;
          copies.bounds[LoadBound::Hbm] += buffer_s / L;
        }
        ctx.wait(end_l - ctx.now());
        pipe_s += end_l - t_l;
        load_end = end_l;
      }
    }
    load_end = std::max(load_end, t_pipe);
  } else {
    // One flow per GPU for the whole load, compute alongside; then the pipeline's fill (the
    // first layer's load before compute can start) and drain (the last layer's compute after
    // the last load) from per-layer times. On a pipeline stage the worker has launched its
    // forward only once it has issued every layer's objects and their loads have ended (the
    // layer-wise pipeline launches its last layer then): held until load_end.
    const bool held = ctx.stage_worker();
    if (held) ctx.hold_launch(true);
    if (link) ctx.start_copies(c, bytes, chunks * L, m_copy);
    run_compute(compute_s, hbm_bytes);
    load_end = t_pipe + buffer_s;
    if (link) {
      ctx.wait_copies(c);
      transfer_s = c.g.end_s - t_pipe;
      load_end = settle(t_pipe, load_end, t_pipe + L * layer_cpu_s);
    } else {
      copies.link += buffer_s;
      copies.bounds[LoadBound::Hbm] += buffer_s;
    }
    pipe_s = load_end - t_pipe;
    const double end = std::max(load_end + compute.last_layer_s, t_pipe + pipe_s / L + compute_run);
    if (held) {
      ctx.wait(load_end - ctx.now());
      ctx.hold_launch(false);
    }
    ctx.wait(end - ctx.now());
  }
  stats.link_busy_s += transfer_s;
  stats.loaded_bytes_gpu += bytes;
  stats.buffer_bytes_gpu += ls.buffer_tokens * ctx.kv_bytes_per_token_gpu;
  // The pipeline's wall time is the compute plus the load it did not hide; the hidden part is
  // split like the copies' own time. Bound times count the whole load, hidden or not.
  const double wall = ctx.now() - t_pipe;
  const double exposed = std::max(0.0, wall - compute_run);
  time.add_exposed_load(exposed, copies.software, copies.link, copies.wait);
  time.compute_s += wall - exposed;
  *ctx.step_bounds += copies.bounds;
  ctx.trace_load("layerwise", t0, load_end);
  ctx.trace_link("load (layerwise)", t_pipe, load_end);
  ctx.trace_compute(t_pipe, ctx.now());
  return (t_pipe - t0) + pipe_s;  // CPU-side costs + the loads' time
}
}  // namespace

std::unique_ptr<LoadPathStrategy> make_layerwise_load_path(CopyPath copy) {
  return std::make_unique<LayerwiseLoadPath>(copy);
}

}  // namespace kappasim
