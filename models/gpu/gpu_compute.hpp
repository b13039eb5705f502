// GpuCompute: one GPU's compute engine as a SystemC module (one per GPU of a TP group).
//
// What it models: the kernel sequence of a transformer prefill on this GPU, run in order on one
// stream, each kernel a timed wait whose duration comes from the pure kernel model
// (models/gpu/kernel_timing: roofline of FLOPs at an achievable fraction with tile/wave
// quantisation against HBM bytes, plus a launch overhead; ring all-reduce over NVLink). The
// GPU's SMs are an SmPool: copy kernels (LMCache's zero-copy load path) acquire SMs from it, and
// each compute kernel runs at the fraction of SMs free when it starts.
//
// Events: fine mode (default) waits once per kernel, i.e. per request-layer 10 waits for a dense
// GQA layer (Llama) at tp 1, 13 for a Qwen3 MoE layer, 18 for a DeepSeek-V3 MLA + MoE layer with
// its shared expert (13 for its dense layers); 2 more each at tp > 1 (the all-reduces); plus 3
// per prefill (embedding, final norm, LM head) and 1 for the per-forward host cost; FP8/INT8
// weights add one activation-quantisation kernel per quantised GEMM. Coarse mode
// waits once per layer (the sum of its kernels, all at the SM fraction seen at layer start) and
// once for the edge kernels before and after the layers.
//
// Non-blocking steps (the serving path, issue 13): start_step issues one
// step's HBM traffic as ONE CopyPath::Local flow on this GPU's HBM through the attached link
// back end (attach_link), with bytes = the step's HBM bytes and rate_cap = bytes / step time:
// alone it ends exactly at the step time; when host copies landing in (or read from) the same
// HBM push the resource past its capacity, max-min sharing slows both and the step stretches.
// The step time is taken at the SM fraction free when the step starts (copy kernels holding
// SMs slow its compute-bound part). A step with no HBM bytes, or on a back end without HBM
// (models_hbm() false: packet), is a timed completion of the step time.
//
// Launches: the stack's LaunchSpec (set_launch; models/gpu/launch_model): a forward whose host
// issue time exceeds its GPU time waits the difference (one more wait in run_prefill; inside
// the step time the serving engine passes to start_step: batch_step_time).
// What it ignores: overlap between kernels (one stream; no PDL),
// SMs taken by NCCL, HBM bandwidth used by concurrent copies in the blocking run_* path,
// the time profile of HBM traffic inside a step (a step's bytes are spread evenly over it),
// changes to the SM share during a kernel or step (the share at start holds to its end),
// power and clock throttling, batching of several requests into one forward pass in run_*
// (callers pass the batch's T and K).
//
// Sources: see models/gpu/kernel_timing.hpp and docs/compute-model.md; every efficiency is a
// sourced preset field (presets/gpus/*.yaml).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <systemc>
#include <vector>

#include "interconnects/link_model.hpp"
#include "models/gpu/gpu_spec.hpp"
#include "models/gpu/kernel_timing.hpp"
#include "models/gpu/sm_pool.hpp"
#include "models/llm/architecture.hpp"

namespace kappasim {

class GpuCompute : public sc_core::sc_module {
 public:
  struct Stats {
    PrefillTime time;                // busy time split by kernel kind, FLOPs, kernels run
    std::int64_t kernel_events = 0;  // timed waits issued
    double busy_s() const { return time.compute_time_s; }
  };

  // Throws InputError when the GPU lacks a simulator field or the precision.
  GpuCompute(sc_core::sc_module_name name, const GpuSpec& gpu,
             const std::string& compute_dtype = "bf16", bool coarse = false);

  SmPool& sm_pool() { return m_sms; }
  const SmPool& sm_pool() const { return m_sms; }
  // Notified (at the next delta) whenever a copy kernel takes or frees some of this GPU's SMs.
  const sc_core::sc_event& sms_changed() const { return m_sms_changed; }
  // Books `seconds` of compute moving `hbm_bytes` that ran outside start_step (a phase advancing
  // at the SM fraction copy kernels left it: serving/step_model's run_beside_copy_kernels).
  void account_held(double seconds, double hbm_bytes);
  const GpuSpec& gpu() const { return m_gpu; }
  const Stats& stats() const { return m_stats; }
  bool coarse() const { return m_coarse; }
  // How the serving stack launches this GPU's kernels (StackProfile::launch; default: no host
  // launch cost). Set before the simulation starts.
  void set_launch(const LaunchSpec& launch) { m_launch = launch; }
  const LaunchSpec& launch() const { return m_launch; }

  // Blocking: call from an SC_THREAD. Concurrent callers are served one at a time (one compute
  // stream per GPU).
  void run_layer(const ModelSpec& m, int layer, double T, double K, int tp);
  // Embedding, every layer, final norm and LM head.
  void run_prefill(const ModelSpec& m, double T, double K, int tp);

  // ---- non-blocking steps (serving) ----
  // The link back end that carries this GPU's Local HBM flows, and this GPU's index in it.
  void attach_link(LinkModel& link, int gpu_index);
  int gpu_index() const { return m_index; }
  // Starts one step of `compute_time_s` (at all SMs) moving `hbm_bytes` through HBM, `delay_s`
  // from now; r (filled here: gpu, CopyPath::Local, bytes, rate_cap_Bps) joins g and ends when
  // the step does. `sm_bound_s` (<= compute_time_s): the part that runs at the SM roof and
  // scales as 1 / compute_fraction() (the SMs copy kernels leave free now); the rest does not.
  // Returns the step's time alone (at the SM fraction now). One step at a time per GPU is the
  // caller's business (one compute stream). Call from a process or during elaboration.
  double start_step(double compute_time_s, double hbm_bytes, TransferRequest& r, TransferGroup& g,
                    double delay_s = 0, double sm_bound_s = 0);
  // start_step on every GPU of gpus[0, n) at once, rs[i] GPU i's request: the GPUs of one
  // tensor-parallel group (or pipeline stage) computing one step. Their per-layer all-reduces
  // keep them within a layer of each other, so the step moves in lockstep: when every GPU's step
  // is an HBM flow on one link back end with the same bytes and rate cap, the back end moves them
  // as one flow crossing each GPU's HBM, at the slowest GPU's rate (LinkModel::start_lockstep;
  // alone, or beside the same load on each GPU, that is each GPU's own rate). Each GPU's stats
  // are its own as start_step's. Otherwise each GPU's step starts on its own.
  static void start_steps(GpuCompute* const* gpus, std::size_t n, double compute_time_s,
                          double hbm_bytes, TransferRequest* rs, TransferGroup& g);

 private:
  // start_step's first half: r filled and the stats booked; the step's time alone, and whether
  // it is an HBM flow on m_link (else it is timed: finish_timed).
  double book_step(double compute_time_s, double hbm_bytes, TransferRequest& r, double sm_bound_s,
                   bool& flow);
  void on_timed();
  void finish_timed(TransferRequest& r, TransferGroup& g, double delay_s, double t);
  void run_kernels(const std::vector<Kernel>& ks);
  GpuSpec m_gpu;
  std::string m_dtype;
  DType m_weights;
  bool m_coarse;
  LaunchSpec m_launch;
  SmPool m_sms;
  sc_core::sc_mutex m_stream;
  Stats m_stats;
  LinkModel* m_link = nullptr;
  int m_index = 0;
  struct Timed {
    TransferRequest* req;
    TransferGroup* group;
  };
  std::multimap<sc_core::sc_time, Timed> m_timed;  // timed completions not yet due
  sc_core::sc_event m_timed_ev;
  sc_core::sc_event m_sms_changed;
};

}  // namespace kappasim
