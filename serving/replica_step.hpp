// One lockstep step of a model replica laid out beyond plain tensor parallelism (issue 14):
// attention data-parallel ranks (DP-attention) with expert parallelism (EP), pipeline stages
// (PP) and replicas spanning several nodes. Pure: no SystemC; the layout step model
// (serving/step_model.cpp, the layout step) times what this returns, the tests check it by hand.
//
// What it models (docs/parallelism.md "Simulating the layouts", with sources):
//  - per stage, every DP rank runs its own batch's attention and its non-expert kernels (norms,
//    projections, dense MLPs, shared experts, router) on its `tp` GPUs (kernel_timing's
//    batch_step_time); a rank with no work runs a one-token dummy batch (vLLM DP: MoE layers
//    need every rank, execute_dummy_batch);
//  - per MoE layer, the routed experts run on every GPU of the stage over all ranks' tokens,
//    balanced over the EP ranks (each GPU: E/ep whole experts, tokens·k/ep token-expert pairs;
//    timed as layer_kernels' grouped expert GEMMs at tp = stage GPUs: the same FLOPs and expert
//    weight bytes). With ep = 1 and dp > 1 the experts are tensor-parallel over the stage
//    after an all-gather (the same kernels, exactly) and a reduce-scatter after;
//  - EP dispatch and combine all-to-all per MoE layer, DeepEP normal kernels: within a node
//    straight over NVLink to each selected rank; to another node once over the NIC (RDMA, to
//    the GPU of the same local index), forwarded there over NVLink to that node's other
//    selected ranks. A token reaches a GPU with probability 1 − p_holder_not_selected (expert
//    groups respected). Each GPU's NVLink and NIC ports work in parallel at their peak per
//    direction; a phase ends when the busiest port has moved its bytes, plus one link latency;
//  - the step lasts the slowest rank's non-expert time (lockstep) plus the a2a phases and the
//    experts (no overlap of communication with compute: vLLM's default without dual-batch
//    overlap); a step's PP stages run one after the other, with their activations sent to the
//    next stage between them (the layout step model keeps pp steps in flight, one per stage).
// Ignores: expert-load imbalance (EPLB), TP > 1 inside a rank for the a2a (each GPU of a rank
// sends its 1/tp share of the rank's tokens), congestion beyond the per-port model.
#pragma once

#include <vector>

#include "models/gpu/kernel_timing.hpp"
#include "models/llm/parallelism.hpp"
#include "serving/run_spec.hpp"

namespace kappasim {

// The layout and link figures one replica's steps need, made once from the run spec.
struct ReplicaLayout {
  ParallelismSpec p;
  LayoutCost cost;
  int tp = 1, dp = 1, stage_gpus = 1, pp = 1, gpus = 1, gpus_per_node = 1;
  double nvlink_Bps = 0, nvlink_latency_s = 0;  // per direction, GPU to GPU (system.gpu)
  double nic_Bps = 0, nic_latency_s = 0;        // per GPU per direction (system or layout)
  double p_gpu = 0;   // probability a token needs a given other EP rank (per MoE layer)
  double p_node = 0;  // probability a token needs a given other node of the stage
};
// Validates the layout against the model and system (validate_layout; path
// "serving.parallelism"); NVLink bandwidth required when a stage has more than one GPU.
ReplicaLayout make_replica_layout(const RunSpec& spec);
// Paged-KV blocks of one rank under the layout: gpu_memory_utilization × HBM less the layout's
// weights per GPU (largest stage) and the activation reserve, over the rank's KV bytes per token
// (its fullest stage). The engine's rank pool, and the isolated-request probe's largest
// request (serving/measure; issue 26 item 22: it sized a PP / multi-node layout at TP alone).
// `carve_bytes`: per GPU, taken out of the pool for a GPU-side KV buffer of kind hbm.
// InputError naming serving.parallelism when no HBM is left.
std::int64_t replica_kv_blocks(const RunSpec& spec, const ReplicaLayout& L, double carve_bytes = 0);

struct ReplicaStepCost {
  std::vector<double> rank_tokens;  // tokens each rank computes this step (0: dummy batch)
  // Per stage, per rank: attention + non-expert kernels of the stage's layers (edge kernels
  // on the first / last stage).
  std::vector<std::vector<double>> rank_local_s;
  std::vector<double> stage_local_s;  // per stage: the slowest rank
  // Per stage: MoE layers, experts, a2a phases (incl. the ep = 1 gather), activations out.
  std::vector<int> stage_moe_layers;
  std::vector<int> stage_layers;  // per stage: its layers (vLLM's partition)
  std::vector<double> stage_expert_s, stage_dispatch_s, stage_combine_s, stage_pp_s;
  // One MoE layer's dispatch bytes per (sender, receiver) stage GPU (any stage: every stage
  // has the same ranks' tokens); empty without EP.
  std::vector<double> layer_pair_dispatch_bytes;
  double dispatch_latency_s = 0, combine_latency_s = 0;  // one phase's link latency
  double pp_bytes_per_gpu = 0;  // activations one GPU sends to the next stage
  double edge_s = 0;            // the edge kernels (embedding, LM head): the last stage's
  double local_s = 0;           // Σ stages of the slowest rank
  double expert_s = 0;          // routed experts, one GPU, all MoE layers
  double dispatch_s = 0,
         combine_s = 0;    // EP all-to-all (or the ep = 1 all-gather / reduce-scatter)
  double pp_s = 0;         // activations between stages
  double step_s = 0;       // local_s + dispatch_s + expert_s + combine_s + pp_s
  double rank_idle_s = 0;  // mean over ranks of (slowest − own) non-expert time: DP imbalance
  // EP bytes of the step, all MoE layers, both phases, summed over GPUs.
  double a2a_nvlink_bytes = 0, a2a_nic_bytes = 0, pp_bytes = 0;
  // Dispatch bytes of the step per (sender, receiver) GPU of one stage, all its MoE layers:
  // [sender * stage_gpus + receiver] (combine: the transpose × combine/dispatch bytes per value).
  std::vector<double> pair_dispatch_bytes;
  double flops = 0, hbm_bytes = 0;  // per GPU, averaged over the replica's GPUs
  // Stage s's share of the step: its non-expert kernels, a2a phases, experts and activations
  // out (the step's stages add up to step_s).
  double stage_s(std::size_t s) const {
    return stage_local_s[s] + stage_dispatch_s[s] + stage_expert_s[s] + stage_combine_s[s] +
           stage_pp_s[s];
  }
};

// `rank_batches[r]`: rank r's slices this step (empty: a dummy batch).
ReplicaStepCost replica_step_cost(const RunSpec& spec, const ReplicaLayout& L,
                                  const std::vector<std::vector<SeqSlice>>& rank_batches);

// The a2a part alone, for one MoE layer: per sender token counts per stage GPU (`gpu_tokens`,
// size stage_gpus) → bytes per (sender, receiver) pair for one phase at `bytes_per_value`, and
// each GPU's NVLink / NIC bytes out and in. DeepEP routing as above.
struct A2aPhase {
  std::vector<double> pair_bytes;  // [sender * S + receiver]
  std::vector<double> nvl_out, nvl_in, nic_out, nic_in;
  double time_s = 0;  // slowest port + latency
};
A2aPhase a2a_phase(const ReplicaLayout& L, const ModelSpec& m,
                   const std::vector<double>& gpu_tokens, double bytes_per_value);

}  // namespace kappasim
