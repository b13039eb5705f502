// kappasim probe prefill | decode | gemm: the GPU compute model on its own.
//   prefill: runs the SystemC GpuCompute (serving/probes.cpp: run_compute_probe) for one GPU of a
//   TP group over a whole prefill of T new
//            tokens on K cached ones, and prints its time split (equal to prefill_time()).
//   decode:  one decode step of B sequences, each one token over K tokens of KV: the batch of
//            SeqSlice{1, K, finishes} the serving engine times with batch_step_time.
//   gemm:    the time of one M×N×K GEMM, or a sweep of M for N = K = 8192.
//   allreduce: one TP all-reduce per message size (models/gpu/all_reduce), with nccl-tests'
//            algbw and busbw, by NCCL's choice or a stack's (--stack).
#include <cmath>
#include <iostream>

#include "apps/kappasim/cli.hpp"
#include "core/error.hpp"
#include "core/table.hpp"
#include "models/gpu/all_reduce.hpp"
#include "models/gpu/kernel_timing.hpp"
#include "serving/probes.hpp"
#include "serving/serving_spec.hpp"
#include "serving/stack_profile.hpp"

namespace kappasim::cli {

namespace {

void check_precision(const std::string& p) {
  const auto& known = GpuSpec::compute_dtypes();
  if (std::find(known.begin(), known.end(), p) != known.end()) return;
  std::string all;
  for (const auto& k : known) all += (all.empty() ? "" : ", ") + k;
  throw InputError("--precision: unknown compute dtype '" + p + "' (expected " + all + ")");
}

// A system alone (a preset name or YAML file), with the system.* --set overrides.
SystemSpec load_system(const std::string& ref, const std::vector<std::string>& sets) {
  ConfigNode root = ConfigNode::make_map({"<case>", 0, 0});
  root.set("system", ref_node(ref, "system"));
  for (const auto& s : sets) {
    if (s.compare(0, 7, "system.") != 0 && s.compare(0, 7, "system=") != 0)
      throw InputError("--set " + s + ": probe gemm takes only system.* overrides");
    apply_set(root, s);
  }
  return read_preset_config<SystemSpec>(*root.find("system"), "system", "system");
}

double dim_option(const std::string& option, const std::string& text) {
  const double v = count_option(option, text);
  if (v < 1) throw InputError("--" + option + ": must be at least 1, got \"" + text + "\"");
  return v;
}

// The model and system of a probe, its stack's profile (--stack), checked for --tp (it divides
// the heads, fits the system's GPUs) and --precision (the GPU has a peak for it): what probe
// prefill and probe decode share.
struct ProbeCase {
  LoadedCase c;
  StackProfile stack;
};
ProbeCase load_probe_case(const std::string& model, const std::string& system,
                          const std::vector<std::string>& sets, const std::string& stack, int tp,
                          const std::string& precision) {
  ProbeCase pc{load_case(model, system, sets), {}};
  try {
    pc.stack = read_preset_config<StackProfile>(ref_node(stack, "stack"), "stack", "stack");
  } catch (const InputError& e) {
    throw InputError(std::string("--stack: ") + e.what());
  }
  const LoadedCase& c = pc.c;
  try {
    kv_heads_per_gpu(c.config.model, tp);
  } catch (const InputError& e) {
    throw InputError(std::string("--tp: ") + e.what());
  }
  if (tp > c.config.system.gpus)
    throw InputError("--tp: " + std::to_string(tp) + " exceeds the " +
                     std::to_string(c.config.system.gpus) + " GPUs of system " +
                     c.config.system.name);
  c.config.system.gpu.require_sim("system.gpu");
  c.config.system.gpu.peak(precision);
  return pc;
}

int probe_prefill(const std::vector<std::string>& args) {
  std::string model, system, t_text, k_text = "0", precision = "bf16", format = "table",
                                     stack = kDefaultStack, ttft_text = "engine", step_text;
  std::vector<std::string> sets, preset_dirs;
  int tp = 1;
  bool coarse = false;
  po::options_description desc(
      "kappasim probe prefill: simulate one GPU of a TP group prefilling T new tokens over K "
      "cached tokens\n"
      "Usage: kappasim probe prefill --model M --system S --t T [--k K] [--tp N] [options]\n"
      "Options");
  desc.add_options()("model,m", po::value(&model), "model preset name or YAML file")(
      "system,s", po::value(&system), "system preset name or YAML file")(
      "tp", po::value(&tp), "tensor parallelism (default 1)")(
      "t", po::value(&t_text), "new tokens T (at least 1)")("k", po::value(&k_text),
                                                            "cached tokens K (default 0)")(
      "precision", po::value(&precision), "GEMM precision: bf16 (default), fp16, fp8, ...")(
      "coarse", po::bool_switch(&coarse), "one simulation event per layer instead of per kernel")(
      "stack", po::value(&stack),
      "serving stack whose kernel launches (CUDA-graph mode, host cost per launch) to model: a "
      "preset name or YAML file (default lmcache-0.3.5, on vLLM v1)")(
      "ttft", po::value(&ttft_text),
      "engine (default: the prefill alone) or end_to_end (adds the stack's front end: HTTP, "
      "tokenising the T + K prompt tokens, the engine-core hop, the first token's way back; "
      "and the engine's step, serving.step_overhead, as the serving engine charges a request "
      "alone; columns front_end_s, step_overhead_s and ttft_s)")(
      "step-overhead", po::value(&step_text),
      "with --ttft end_to_end: the engine's CPU time per step (serving.step_overhead; default "
      "its default, 2 ms)")("set", po::value(&sets)->composing(),
                            "override a config key: --set system.gpu.gemm_efficiency=0.7")(
      "preset-dir", po::value(&preset_dirs)->composing(), "extra preset folder")(
      "format", po::value(&format), "table, csv or json")("help,h", "this help");
  auto vm = parse("probe prefill", args, desc);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  add_preset_dirs(preset_dirs);
  const Format fmt = parse_format(format);
  if (model.empty()) throw InputError("--model: required");
  if (system.empty()) throw InputError("--system: required");
  if (t_text.empty()) throw InputError("--t: required (new tokens, at least 1)");
  const double T = count_option("t", t_text);
  if (T < 1) throw InputError("--t: need at least 1 new token, got \"" + t_text + "\"");
  const double K = count_option("k", k_text);
  if (tp < 1) throw InputError("--tp: must be at least 1, got " + std::to_string(tp));
  check_precision(precision);
  const bool end_to_end = ttft_end_to_end_option(ttft_text);
  // The engine step a served request alone pays before its first token (serving.step_overhead:
  // scheduling, input preparation, sampling), with the serving default unless given.
  double step_overhead_s = ServingSpec{}.step_overhead_s;
  if (!step_text.empty()) {
    if (!end_to_end) throw InputError("--step-overhead: only with --ttft end_to_end");
    try {
      step_overhead_s = parse_quantity_as(step_text, dim::time);
    } catch (const UnitError& e) {
      throw InputError(std::string("--step-overhead: ") + e.what());
    }
    if (!(step_overhead_s >= 0))
      throw InputError("--step-overhead: must not be negative, got \"" + step_text + "\"");
  }

  const ProbeCase pc = load_probe_case(model, system, sets, stack, tp, precision);
  const LoadedCase& c = pc.c;
  const StackProfile& stack_profile = pc.stack;
  const ModelSpec& m = c.config.model;
  const GpuSpec& gpu = c.config.system.gpu;
  weight_dtype_for(precision);

  {
    // The simulation times the same kernels: bound it before simulating (kMaxProbeSimTimeS).
    const double est_s =
        prefill_time(m, gpu, tp, T, K, precision, DType::Bf16, stack_profile.launch).compute_time_s;
    if (!(est_s <= kMaxProbeSimTimeS))
      throw InputError("--t / --k: prefilling " + format_number(T) + " new tokens over " +
                       format_number(K) + " cached ones would take " + probe_estimate(est_s) +
                       " s of simulated time; a probe may ask for at most " +
                       format_number(kMaxProbeSimTimeS) + " s (docs/bad-inputs.md)");
  }
  ComputeProbeOptions opts;
  opts.model = m;
  opts.gpu = gpu;
  opts.tp = tp;
  opts.t = T;
  opts.k = K;
  opts.precision = precision;
  opts.coarse = coarse;
  opts.launch = stack_profile.launch;
  const ComputeProbeResult s = run_compute_probe(opts);
  const PrefillTime& p = s.time;
  const double end_s = s.sim_time_s;
  // One FLOP convention (docs/accounting.md): f_pf_flops and achieved_flops count F_pf = 2 ·
  // N_active per new token, per GPU / tp, as `kappa` and `measure` do; kernel_flops is what
  // the simulated kernels execute (GEMMs incl. attention over K, the LM head), named apart.
  const double f_pf_gpu = count_params(m).active() * 2 / tp * T;
  const char* graph_mode = "none";
  for (const auto& [name, mode] : graph_mode_names())
    if (mode == stack_profile.launch.graph_mode) graph_mode = name;
  const bool captured =
      forward_launches(stack_profile.launch, T, p.kernels, m.num_layers, 0).captured;
  std::vector<std::string> cols({"model",
                                 "system",
                                 "tp",
                                 "t",
                                 "k",
                                 "precision",
                                 "stack",
                                 "graph_mode",
                                 "captured",
                                 "compute_time_s",
                                 "linear_time_s",
                                 "attention_time_s",
                                 "comm_time_s",
                                 "other_time_s",
                                 "kernels",
                                 "kernel_events",
                                 "f_pf_flops",
                                 "achieved_flops",
                                 "kernel_flops",
                                 "kernel_flops_per_s",
                                 "sim_time_s",
                                 "host_time_s",
                                 "host_issue_s",
                                 "launch_stall_s"});
  std::vector<Cell> row({m.name,
                         c.config.system.name,
                         static_cast<std::int64_t>(tp),
                         T,
                         K,
                         precision,
                         stack_profile.name,
                         std::string(graph_mode),
                         std::string(captured ? "yes" : "no"),
                         p.compute_time_s,
                         p.linear_time_s,
                         p.attention_time_s,
                         p.comm_time_s,
                         p.other_time_s,
                         static_cast<std::int64_t>(p.kernels),
                         s.kernel_events,
                         f_pf_gpu,
                         f_pf_gpu / p.compute_time_s,
                         p.flops,
                         p.flops / p.compute_time_s,
                         end_s,
                         p.host_time_s,
                         p.host_issue_s,
                         p.launch_stall_s});
  std::vector<std::string> shown = {"model",
                                    "system",
                                    "tp",
                                    "t",
                                    "k",
                                    "compute_time_s",
                                    "linear_time_s",
                                    "attention_time_s",
                                    "comm_time_s",
                                    "other_time_s",
                                    "kernels",
                                    "achieved_flops"};
  if (end_to_end) {
    // The served TTFT of one request alone, as the serving engine charges it: the front end
    // before the engine sees it (the whole prompt, T + K tokens, is tokenised), the engine's
    // step (serving.step_overhead, serial with the forward when nothing else runs), the prefill,
    // and its first token's way back.
    const double fe = front_end_s(stack_profile, static_cast<std::int64_t>(T + K));
    cols.insert(cols.end(), {"front_end_s", "step_overhead_s", "ttft_s"});
    row.insert(row.end(), {fe, step_overhead_s, fe + step_overhead_s + p.compute_time_s});
    shown.insert(shown.end(), {"front_end_s", "step_overhead_s", "ttft_s"});
  }
  Table table(cols);
  table.add_row(row);
  if (fmt != Format::Table) {
    std::cout << table.render(fmt);
    return 0;
  }
  std::cout << table.project(shown).text();
  return 0;
}

// The matmul weight bytes one forward of `tokens` tokens reads on one GPU of a TP group: every
// dense weight, the LM head (the embedding table when tied), the routers, and of the routed
// experts only those the tokens touch (expected_experts_touched, as layer_kernels charges) plus
// the shared ones. The embedding gather reads `tokens` rows (left out) and the norms are
// ignored (< 0.1%). Sharded weights are split tp ways; the router is replicated.
double step_weight_bytes(const ModelSpec& m, int tp, double tokens, DType weights) {
  const ParamCounts c = count_params(m);
  const double head = c.lm_head > 0 ? c.lm_head : c.embedding;
  double sharded = c.attention + c.mlp_dense + head;
  if (c.mlp_experts_total > 0) {
    const double E = m.mlp.num_experts, S = m.mlp.num_shared_experts;
    const double per_expert = c.mlp_experts_total / (E + S);  // summed over the MoE layers
    sharded += per_expert * (expected_experts_touched(tokens, m.mlp.experts_per_token, E) + S);
  }
  return (sharded / tp + c.router) * bytes_per_element(weights);
}

int probe_decode(const std::vector<std::string>& args) {
  std::string model, system, batch_text = "1", context_text = "1024", precision = "bf16",
                             kv_dtype_text = "bf16", format = "table", stack = kDefaultStack;
  std::vector<std::string> sets, preset_dirs;
  int tp = 1;
  po::options_description desc(
      "kappasim probe decode: one decode step on one GPU of a TP group: B sequences, each "
      "generating one token whose attention reads K tokens of KV\n"
      "Usage: kappasim probe decode --model M --system S [--batch B] [--context K] [--tp N] "
      "[options]\n"
      "Charged: every kernel of the step as the serving engine times it (batch_step_time with "
      "B slices {T = 1, K, logits}: weights read once for the batch, each sequence's KV read by "
      "attention, the LM head for B rows), the stack's kernel launches (--stack) and the GPU's "
      "per-forward host cost (system.gpu.forward_overhead). Not charged: the scheduler's step "
      "(serving.step_overhead: input preparation, scheduling), the API server (HTTP, "
      "detokenisation, streaming), speculative decoding, prefills batched into the same step. "
      "A served inter-token latency holds those too.\n"
      "Options");
  desc.add_options()("model,m", po::value(&model), "model preset name or YAML file")(
      "system,s", po::value(&system), "system preset name or YAML file")(
      "tp", po::value(&tp), "tensor parallelism (default 1)")(
      "batch", po::value(&batch_text), "sequences decoding in the step, B (default 1)")(
      "context", po::value(&context_text),
      "tokens of KV each sequence already holds, K (default 1024)")(
      "precision", po::value(&precision), "GEMM precision: bf16 (default), fp16, fp8, ...")(
      "kv-dtype", po::value(&kv_dtype_text),
      "KV cache dtype: bf16 (default), fp16, fp8, int8, int4")(
      "stack", po::value(&stack),
      "serving stack whose kernel launches (CUDA-graph mode, host cost per launch) to model: a "
      "preset name or YAML file (default lmcache-0.3.5, on vLLM v1)")(
      "set", po::value(&sets)->composing(),
      "override a config key: --set system.gpu.hbm_efficiency=0.85")(
      "preset-dir", po::value(&preset_dirs)->composing(), "extra preset folder")(
      "format", po::value(&format), "table, csv or json")("help,h", "this help");
  auto vm = parse("probe decode", args, desc);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  add_preset_dirs(preset_dirs);
  const Format fmt = parse_format(format);
  if (model.empty()) throw InputError("--model: required");
  if (system.empty()) throw InputError("--system: required");
  // One slice per sequence is built; a million sequences in one step is far beyond any serving
  // engine's max_num_seqs (vLLM: 256 or 1024 by default).
  const auto bad_batch = [&] {
    return InputError("--batch: need a whole number of sequences from 1 to 1000000, got \"" +
                      batch_text + "\"");
  };
  double B = 0;
  try {
    B = count_option("batch", batch_text);
  } catch (const InputError&) {
    throw bad_batch();
  }
  if (!(B >= 1) || B != std::floor(B) || B > 1e6) throw bad_batch();
  const double K = count_option("context", context_text);
  if (tp < 1) throw InputError("--tp: must be at least 1, got " + std::to_string(tp));
  check_precision(precision);
  const DType kv_dtype = parse_dtype(kv_dtype_text, "--kv-dtype");

  const ProbeCase pc = load_probe_case(model, system, sets, stack, tp, precision);
  const LoadedCase& c = pc.c;
  const StackProfile& stack_profile = pc.stack;
  const ModelSpec& m = c.config.model;
  const GpuSpec& gpu = c.config.system.gpu;
  const DType weights = weight_dtype_for(precision);

  const std::vector<SeqSlice> batch(static_cast<std::size_t>(B), SeqSlice{1, K, true});
  const StepTime st =
      batch_step_time(m, gpu, tp, batch, precision, 1.0, kv_dtype, stack_profile.launch);
  const PrefillTime& p = st.total;
  const double w_bytes = step_weight_bytes(m, tp, B, weights);
  const double kv_bytes = B * kv_bytes_for_prefix_per_gpu(m, kv_dtype, tp, K);
  const char* graph_mode = "none";
  for (const auto& [name, mode] : graph_mode_names())
    if (mode == stack_profile.launch.graph_mode) graph_mode = name;
  const bool captured =
      forward_launches(stack_profile.launch, B, p.kernels, m.num_layers, 0).captured;
  Table table({"model",
               "system",
               "tp",
               "batch",
               "context",
               "precision",
               "kv_dtype",
               "stack",
               "graph_mode",
               "captured",
               "step_time_s",
               "tokens_per_s",
               "linear_time_s",
               "attention_time_s",
               "comm_time_s",
               "other_time_s",
               "host_time_s",
               "launch_stall_s",
               "kernels",
               "flops",
               "hbm_bytes",
               "weight_bytes",
               "kv_bytes",
               "hbm_bandwidth_bytes_per_s",
               "weight_read_bound_s",
               "memory_bound_s"});
  table.add_row({m.name,
                 c.config.system.name,
                 static_cast<std::int64_t>(tp),
                 B,
                 K,
                 precision,
                 std::string(dtype_name(kv_dtype)),
                 stack_profile.name,
                 std::string(graph_mode),
                 std::string(captured ? "yes" : "no"),
                 p.compute_time_s,
                 B / p.compute_time_s,
                 p.linear_time_s,
                 p.attention_time_s,
                 p.comm_time_s,
                 p.other_time_s,
                 p.host_time_s,
                 p.launch_stall_s,
                 static_cast<std::int64_t>(p.kernels),
                 p.flops,
                 p.hbm_bytes,
                 w_bytes,
                 kv_bytes,
                 gpu.hbm_bandwidth_Bps,
                 w_bytes / gpu.hbm_bandwidth_Bps,
                 (w_bytes + kv_bytes) / gpu.hbm_bandwidth_Bps});
  if (fmt != Format::Table) {
    std::cout << table.render(fmt);
    return 0;
  }
  std::cout << table
                   .project({"model", "system", "tp", "batch", "context", "step_time_s",
                             "tokens_per_s", "linear_time_s", "attention_time_s", "comm_time_s",
                             "weight_read_bound_s", "memory_bound_s"})
                   .text();
  std::cout << "\nweight_read_bound_s / memory_bound_s: the step's weight bytes (and its KV) at "
               "the HBM peak of "
            << format_number(gpu.hbm_bandwidth_Bps / 1e12)
            << " TB/s; step_time_s holds no scheduler step (serving.step_overhead)\n";
  return 0;
}

int probe_gemm(const std::vector<std::string>& args) {
  std::string system, m_text, n_text = "8192", k_text = "8192", precision = "bf16",
                              format = "table";
  std::vector<std::string> sets, preset_dirs;
  po::options_description desc(
      "kappasim probe gemm: time of one GEMM (M×K activations times K×N weights) on a system's "
      "GPU\n"
      "Usage: kappasim probe gemm --system S [--m M] [--n N] [--k K] [options]\n"
      "Without --m: a sweep M = 16, 32, ..., 65536 at the given N and K (default 8192).\n"
      "Options");
  desc.add_options()("system,s", po::value(&system), "system preset name or YAML file")(
      "m", po::value(&m_text), "rows M (tokens); default: the sweep")(
      "n", po::value(&n_text), "columns N (default 8192)")("k", po::value(&k_text),
                                                           "inner dimension K (default 8192)")(
      "precision", po::value(&precision), "bf16 (default), fp16, fp8, ...")(
      "set", po::value(&sets)->composing(),
      "override a system key: --set system.gpu.gemm_efficiency=0.7")(
      "preset-dir", po::value(&preset_dirs)->composing(), "extra preset folder")(
      "format", po::value(&format), "table, csv or json")("help,h", "this help");
  auto vm = parse("probe gemm", args, desc);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  add_preset_dirs(preset_dirs);
  const Format fmt = parse_format(format);
  if (system.empty()) throw InputError("--system: required");
  check_precision(precision);
  const double N = dim_option("n", n_text), K = dim_option("k", k_text);
  std::vector<double> ms;
  if (vm.count("m")) {
    ms.push_back(dim_option("m", m_text));
  } else {
    for (double m = 16; m <= 65536; m *= 2) ms.push_back(m);
  }
  const SystemSpec sys = load_system(system, sets);
  const GpuSpec& gpu = sys.gpu;
  gpu.require_sim("system.gpu");
  const double peak = gpu.peak(precision);
  weight_dtype_for(precision);
  Table table({"system", "precision", "m", "n", "k", "flops", "time_s", "achieved_flops",
               "efficiency", "compute_efficiency", "bound"});
  for (double M : ms) {
    const KernelTime t = gemm_kernel_time(gpu, M, N, K, precision);
    const double flops = 2 * M * N * K;
    table.add_row({sys.name, precision, M, N, K, flops, t.time_s, flops / t.time_s,
                   flops / t.time_s / peak, t.efficiency,
                   std::string(t.flops_time_s >= t.memory_time_s ? "compute" : "memory")});
  }
  if (fmt != Format::Table) {
    std::cout << table.render(fmt);
    return 0;
  }
  std::cout << table
                   .project(
                       {"m", "n", "k", "flops", "time_s", "achieved_flops", "efficiency", "bound"})
                   .text();
  std::cout << "\n"
            << sys.name << ", " << precision << ": efficiency = achieved / peak (" << peak
            << " FLOP/s), launch overhead included\n";
  return 0;
}

int probe_allreduce(const std::vector<std::string>& args) {
  std::string system, stack, tp_text = "8", format = "table",
                             sizes_text = "8 B,1 KiB,64 KiB,1 MiB,16 MiB,256 MiB,1 GiB";
  std::vector<std::string> sets, preset_dirs;
  po::options_description desc(
      "kappasim probe allreduce: one tensor-parallel all-reduce per message size over the "
      "system's NVLink (models/gpu/all_reduce), with nccl-tests' algbw = bytes / time and busbw "
      "= algbw x 2(p-1)/p\n"
      "Usage: kappasim probe allreduce --system S [--tp N] [--sizes LIST] [--stack NAME]\n"
      "Without --stack: NCCL's own choice of algorithm and protocol (what nccl-tests measures).\n"
      "Options");
  desc.add_options()("system,s", po::value(&system), "system preset name or YAML file")(
      "tp", po::value(&tp_text), "GPUs in the all-reduce (default 8)")(
      "sizes", po::value(&sizes_text),
      "comma-separated message sizes per GPU (default \"8 B,1 KiB,64 KiB,1 MiB,16 MiB,256 MiB,1 "
      "GiB\")")("stack", po::value(&stack),
                "serving stack whose all-reduce to use (launch.all_reduce); default: NCCL")(
      "set", po::value(&sets)->composing(),
      "override a system key: --set system.gpu.all_reduce.ring_bus_bandwidth=300GB/s")(
      "preset-dir", po::value(&preset_dirs)->composing(), "extra preset folder")(
      "format", po::value(&format), "table, csv or json")("help,h", "this help");
  auto vm = parse("probe allreduce", args, desc);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  add_preset_dirs(preset_dirs);
  const Format fmt = parse_format(format);
  if (system.empty()) throw InputError("--system: required");
  const double tp = count_option("tp", tp_text);
  if (!(tp >= 2) || tp != std::floor(tp) || tp > 1024)
    throw InputError("--tp: an all-reduce needs a whole number of GPUs from 2 to 1024, got \"" +
                     tp_text + "\"");
  const std::vector<double> sizes = parse_sizes(sizes_text);
  const SystemSpec sys = load_system(system, sets);
  if (tp > sys.gpus)
    throw InputError("--tp: " + tp_text + " exceeds the " + std::to_string(sys.gpus) +
                     " GPUs of system " + sys.name);
  AllReduceImpl impl;
  std::string library = "nccl";
  if (!stack.empty()) {
    // ref_node names --stack in its errors.
    const StackProfile sp =
        read_preset_config<StackProfile>(ref_node(stack, "stack"), "stack", "stack");
    impl = sp.launch.all_reduce;
    for (const auto& [name, v] : all_reduce_library_names())
      if (v == impl.library) library = name;
  }
  const int p = static_cast<int>(tp);
  Table table({"system", "ranks", "library", "bytes", "algorithm", "protocol", "time_s",
               "algbw_Bps", "busbw_Bps"});
  for (double bytes : sizes) {
    const AllReduceTime t = all_reduce_time(sys.gpu, p, bytes, impl);
    const double algbw = bytes / t.time_s;
    table.add_row({sys.name, tp, library, bytes, t.algorithm, t.protocol, t.time_s, algbw,
                   algbw * 2 * (tp - 1) / tp});
  }
  if (fmt != Format::Table) {
    std::cout << table.render(fmt);
    return 0;
  }
  std::cout << table.project({"bytes", "algorithm", "protocol", "time_s", "algbw_Bps", "busbw_Bps"})
                   .text();
  std::cout << "\n"
            << sys.name << ", " << p << " GPUs, " << library
            << ": busbw = algbw x 2(p-1)/p (nccl-tests); docs/compute-model.md \"All-reduce\"\n";
  return 0;
}

}  // namespace

int cmd_probe_compute(const std::string& verb, const std::vector<std::string>& args) {
  if (verb == "prefill") return probe_prefill(args);
  if (verb == "decode") return probe_decode(args);
  if (verb == "gemm") return probe_gemm(args);
  if (verb == "allreduce") return probe_allreduce(args);
  throw InputError("kappasim probe: expected prefill, decode, gemm or allreduce, got '" + verb +
                   "'");
}

}  // namespace kappasim::cli
