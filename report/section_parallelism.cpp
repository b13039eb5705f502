// Section 8.7 of the reproduce report (issue 14): DeepSeek-V3 and Qwen3-235B-A22B under TP-8 and
// DP-attention + EP (2-node layouts where the model needs them), κ_crit per layout from the
// analytic model (models/llm/parallelism + models/analytic, as `kappasim kappa --layout`) and the
// serving figures at 70 RPS side by side with replicate intervals (sweep studies/parallelism),
// and what becomes of the κ paper's MLA conclusion, stated from the computed numbers. A layout
// the engine does not simulate reads "not simulated" with the engine's reason. Output: Markdown.
#include <cmath>
#include <map>
#include <sstream>

#include "core/table.hpp"
#include "report/analytic_point.hpp"
#include "report/format.hpp"
#include "report/replicates.hpp"
#include "report/sections.hpp"
#include "report/serving_tables.hpp"

namespace kappasim::report {

namespace {
struct Case {
  std::string model, layout;
};
// The layouts of the study (experiments/studies/parallelism.yaml's, in its order, plus the
// one-node layouts DeepSeek-V3 does not fit, for the analytic side).
const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"qwen3-235b-a22b", "tp=8"},
      {"qwen3-235b-a22b", "dp_attention=8,ep=8"},
      {"deepseek-v3", "tp=8"},
      {"deepseek-v3", "dp_attention=8,ep=8"},
      {"deepseek-v3", "tp=8,pp=2,nodes=2"},
      {"deepseek-v3", "dp_attention=16,ep=16,nodes=2"},
  };
  return c;
}

// vLLM's default gpu_memory_utilization: the share of HBM a worker may use.
constexpr double kGpuMemoryUtilization = 0.9;

}  // namespace

std::vector<LayoutKappa> parallelism_kappa(const std::string& system, const std::string& dtype) {
  std::vector<LayoutKappa> out;
  const double hbm = preset_system(system).gpu.hbm_capacity_bytes;
  for (const Case& c : cases()) {
    KappaQuery q;
    q.compute_dtype = dtype;
    q.layout = parse_layout(c.layout, "layout '" + c.layout + "'");
    const KappaPoint p = evaluate_presets(c.model, system, q);
    LayoutKappa k;
    k.model = c.model;
    k.layout = p.layout->name;
    k.gpus = p.layout->cost.gpus;
    k.b_kv_share = p.layout->b_kv_share;
    k.kv_replication = p.layout->cost.kv_replication;
    k.kappa_crit = p.kappa_crit;
    k.kappa_crit_comm = p.layout->kappa_crit_comm;
    k.weight_bytes_gpu = p.layout->weight_bytes_gpu;
    k.fits = k.weight_bytes_gpu < kGpuMemoryUtilization * hbm;
    // Issue 23 item 5: the same layout with serving.replicated_kv: shard_allgather.
    q.shard_replicated_kv = true;
    const KappaPoint sh = evaluate_presets(c.model, system, q);
    k.kappa_crit_shard = sh.kappa_crit;
    k.kappa_crit_comm_shard = sh.layout->kappa_crit_comm;
    // Overlapped: the host link's shard only (the gather hidden behind the next layer's load
    // while NVLink is faster than the host link by more than r - 1).
    k.kappa_crit_shard_overlap = p.kappa_crit * k.kv_replication;
    k.nvlink_Bps = preset_system(system).gpu.nvlink_Bps.value_or(0);
    out.push_back(k);
  }
  return out;
}

std::string section_parallelism(const std::vector<LayoutKappa>& kappa, const SweepData* serving,
                                const std::string& serving_missing, ConclusionLog* log) {
  std::ostringstream md;
  md << "### 8.7 Parallelism: TP-8 vs DP-attention + EP for DeepSeek-V3 and Qwen3-235B-A22B\n\n"
     << "FP8 compute (both models' official FP8 checkpoints), BF16 KV, DGX H100 nodes (8× H100 "
        "SXM5 80 GB, PCIe 5 x16 per GPU, one 400 Gb/s NIC per GPU). Under TP the attention is "
        "split by head: GQA KV heads split (replicated when TP exceeds the KV heads) and an MLA "
        "latent is whole on every rank; under DP-attention each rank holds and loads only its own "
        "requests' KV, and the MoE experts are sharded over the EP ranks with an all-to-all "
        "(docs/parallelism.md). κ_crit from the analytic model per GPU (`kappasim kappa "
        "--layout`); κ_crit with comm. adds the TP all-reduce / EP all-to-all / PP bytes at the "
        "links' peak, serial with compute. Weights fit when they are under 90% of the 80 GB "
        "(vLLM's gpu_memory_utilization; the activation reserve is not counted here).\n\n";
  std::vector<std::vector<std::string>> rows;
  for (const LayoutKappa& k : kappa) {
    const bool copies = k.kv_replication > 1 + 1e-9;
    rows.push_back({k.model, k.layout, std::to_string(k.gpus), fmt_num(k.b_kv_share / 1e3),
                    fmt_num(k.kv_replication), fmt_num(k.weight_bytes_gpu / 1e9),
                    k.fits ? "yes" : "no", fmt_num(k.kappa_crit), fmt_num(k.kappa_crit_comm),
                    copies ? fmt_num(k.kappa_crit_shard) : "= each_rank",
                    copies ? fmt_num(k.kappa_crit_comm_shard) : "= each_rank"});
  }
  md << markdown_table({"model", "layout", "GPUs", "KV KB per token per GPU", "KV copies",
                        "weights GB per GPU", "fits", "κ_crit", "κ_crit with comm.",
                        "κ_crit, shard_allgather", "κ_crit with comm., shard_allgather"},
                       rows)
     << "\n"
     << "shard_allgather (`serving.replicated_kv`, `kappasim kappa --replicated-kv`; "
        "docs/parallelism.md): the r GPUs of a TP group holding the same KV (KV copies r) each "
        "load 1/r of it over their own host link, then a ring all-gather sends the other "
        "(r − 1)/r over NVLink, in series with the load; the κ denominator is the host link's "
        "time for b/r plus the all-gather's at the NVLink peak, in host-link bytes.\n\n";

  // Serving at 70 RPS.
  std::vector<std::vector<std::string>> srows;
  if (serving) {
    const ResultsTable& t = serving->table;
    const bool rkv = t.has("replicated_kv");
    std::vector<std::string> by = {"load_path", "workload", "model", "layout"};
    if (rkv) by.push_back("replicated_kv");
    for (const auto& cr : configurations(t, by)) {
      const std::size_t r = cr[0];
      const std::string path = baseline_path(t, r);
      const std::string layout =
          t.get(r, "layout") +
          (rkv && t.get(r, "replicated_kv") == "shard_allgather" ? " + shard_allgather" : "");
      if (!first_ok(t, cr)) {
        srows.push_back({path, t.get(r, "workload"), t.get(r, "model"), layout,
                         "not simulated: " + t.get(r, "error")});
        continue;
      }
      srows.push_back(
          {path, t.get(r, "workload"), t.get(r, "model"), layout,
           interval_cell(t, cr, "throughput_rps"), interval_cell(t, cr, "ttft_mean_s"),
           interval_cell(t, cr, "ttft_p50_s"), interval_cell(t, cr, "ttft_p99_s"),
           pct(mean_of(t, cr, "gpu_utilization")), pct(mean_of(t, cr, "link_busy_fraction")),
           fmt_num(mean_of(t, cr, "dp_rank_imbalance")), pct(mean_of(t, cr, "ep_a2a_time_share"))});
    }
  } else {
    srows.push_back({"—", "—", "—", "—", "not simulated: " + serving_missing});
  }
  md << "Serving at 70 RPS (NarrativeQA-like document QA over 20 documents whose KV the 1.5 TB "
        "pool holds, and ShareGPT-like chat; experiments/studies/parallelism.yaml), both "
        "baselines:\n\n"
     << markdown_table({"load path", "workload", "model", "layout", "throughput (req/s)",
                        "TTFT mean (s)", "TTFT p50 (s)", "TTFT p99 (s)", "GPU util.", "link busy",
                        "DP rank imbalance (max / mean tokens)", "EP all-to-all time share"},
                       srows)
     << "\n"
     << "Every row runs the one serving engine with the same stack (LMCache 0.3.5 with its "
        "per-chunk software costs, blocking stores) on each of the studies' two baselines: its "
        "default kernel load path and its layer-wise path (the paper's testbed, section 5b). "
        "Within a baseline rows differ by layout (issue 21; the layouts beyond TP used to run "
        "a second engine that loaded by DMA without the stack's software costs, which favoured "
        "them when loads dominated), and so by which prompts fit: a DP-attention rank's KV pool "
        "must hold a whole prompt, so it rejects long prompts a TP group's pooled KV serves (a "
        "verdict over different request sets says so). On the layer-wise path the stack's "
        "per-(layer, chunk) "
        "Python runs on each rank for that rank's requests, so DP-attention ranks issue their "
        "loads side by side where TP ranks all issue the same request's. Both models are MoE, so "
        "their DP ranks step in lockstep (dummy batches); "
        "the DP rank imbalance is that lockstep's waste. "
        "`tp=8,pp=2,nodes=2` keeps up to two micro-batches in flight, one per stage (vLLM's "
        "batch queue, max_concurrent_batches = pp); a stage's KV load is issued when its "
        "micro-batch starts, not when it reaches the stage.\n\n";

  // Serving: each model's DP-attention layout against its TP-style layout, paired by replicate.
  if (serving) {
    const ResultsTable& t = serving->table;
    const std::vector<std::pair<std::string, std::pair<std::string, std::string>>> pairs = {
        {"qwen3-235b-a22b", {"tp=1,dp_attention=8,ep=8", "tp=8"}},
        {"deepseek-v3", {"tp=1,dp_attention=16,ep=16,nodes=2", "tp=8,pp=2,nodes=2"}}};
    std::string lines;
    const bool two_paths = t.has("load_path");
    for (const std::string path : {"kernel", "layerwise"})
      for (const std::string w : {"narrativeqa", "sharegpt"})
        for (const auto& [m, lp] : pairs) {
          if (!two_paths && path != "kernel") continue;
          std::map<std::string, std::string> ea = {
              {"workload", w}, {"model", m}, {"layout", lp.first}};
          std::map<std::string, std::string> eb = {
              {"workload", w}, {"model", m}, {"layout", lp.second}};
          if (two_paths) ea["load_path"] = eb["load_path"] = path;
          if (t.has("replicated_kv")) ea["replicated_kv"] = eb["replicated_kv"] = "each_rank";
          const auto a = t.where(ea);
          const auto b = t.where(eb);
          if (!first_ok(t, a) || !first_ok(t, b)) continue;
          const std::string line =
              w + ", " + m + " (" + path + " path): " + lp.first + " against " + lp.second +
              ": throughput " + interval_cell(t, a, "throughput_rps") + " vs " +
              interval_cell(t, b, "throughput_rps") + " req/s (" +
              versus(t, a, b, "throughput_rps", lp.second, "req/s") +
              (overloaded_count(*serving, {a, b}) == 0
                   ? "; both keep up with the offered load, so the served "
                     "throughput is that load and its difference the run's "
                     "drain, not a capacity"
                   : "") +
              "); TTFT p50 " + versus(t, a, b, "ttft_p50_s", lp.second, "s") +
              different_request_sets(t, {{lp.first, a}, {lp.second, b}}, "prompts",
                                     "larger than one rank's KV pool: the layout that rejects "
                                     "more serves only the shorter prompts, so its throughput "
                                     "and latency are not like for like");
          lines += "- " + line + ".\n";
          if (log)
            log->add({"8.7", line,
                      regime_brief(*serving, {a, b}) + " (replicate means over 3 workload seeds)",
                      "EP all-to-all and PP activations over the fabric at the links' sourced "
                      "rates; PP with one micro-batch in flight per stage (vLLM's batch queue)",
                      path + " path; every layout on the one engine with the same stack and path"});
        }
    if (!lines.empty())
      md << "Serving, each model's DP-attention layout against its TP-style one (computed; "
            "replicates paired by seed):\n"
         << lines << "\n";
  }

  // Issue 23 item 5: the replicated layouts with their KV loaded once (shard_allgather) against
  // every rank loading its copy (each_rank), paired by replicate, with the regime of the pair.
  std::string shard_lines;
  struct ShardPair {
    std::vector<std::size_t> each, shard, dp;
  };
  std::map<std::string, ShardPair> shard_pairs;  // "path|workload|model" -> rows
  std::string sim_mla;           // the runs' reading where loading once moved throughput
  bool sim_mla_more = false;     // ... and whether it lifted DeepSeek-V3 more than Qwen3-235B
  bool sim_mla_resolved = true;  // ... and whether DeepSeek-V3's gain is beyond its replicates
  if (serving && serving->table.has("replicated_kv")) {
    const ResultsTable& t = serving->table;
    const bool two_paths = t.has("load_path");
    const std::vector<std::pair<std::string, std::pair<std::string, std::string>>> reps = {
        {"qwen3-235b-a22b", {"tp=8", "tp=1,dp_attention=8,ep=8"}},
        {"deepseek-v3", {"tp=8,pp=2,nodes=2", "tp=1,dp_attention=16,ep=16,nodes=2"}}};
    for (const std::string path : {"kernel", "layerwise"})
      for (const std::string w : {"narrativeqa", "sharegpt"})
        for (const auto& [m, lp] : reps) {
          if (!two_paths && path != "kernel") continue;
          std::map<std::string, std::string> e = {
              {"workload", w}, {"model", m}, {"layout", lp.first}};
          if (two_paths) e["load_path"] = path;
          std::map<std::string, std::string> d = e;
          d["layout"] = lp.second;
          e["replicated_kv"] = "each_rank";
          d["replicated_kv"] = "each_rank";
          std::map<std::string, std::string> sh = e;
          sh["replicated_kv"] = "shard_allgather";
          const auto a = t.where(sh);
          const auto b = t.where(e);
          if (!first_ok(t, a) || !first_ok(t, b)) continue;
          shard_pairs[path + "|" + w + "|" + m] = {b, a, t.where(d)};
          const double load_a = mean_of(t, a, "load_mean_s");
          const double gather = mean_of(t, a, "kv_allgather_s");
          const double hit = mean_of(t, b, "tier_hit_rate");
          std::string line = w + ", " + m + " " + lp.first + " (" + path +
                             " path): shard_allgather against each_rank: throughput " +
                             interval_cell(t, a, "throughput_rps") + " vs " +
                             interval_cell(t, b, "throughput_rps") + " req/s (" +
                             versus(t, a, b, "throughput_rps", "each_rank", "req/s") +
                             "); TTFT p50 " + versus(t, a, b, "ttft_p50_s", "each_rank", "s") +
                             "; mean load " + fmt_num(load_a) + " vs " +
                             fmt_num(mean_of(t, b, "load_mean_s")) + " s";
          if (std::isfinite(gather))
            line += "; the NVLink all-gathers took " + fmt_num(gather) + " s per GPU over the run";
          if (std::isfinite(hit)) line += "; tier hit rate " + pct(hit);
          if (first_ok(t, shard_pairs[path + "|" + w + "|" + m].dp))
            line += "; DP-attention (" + lp.second + ", nothing replicated) " +
                    interval_cell(t, shard_pairs[path + "|" + w + "|" + m].dp, "throughput_rps") +
                    " req/s";
          shard_lines += "- " + line + ". Regime: " + regime_brief(*serving, {a, b}) + ".\n";
          if (log)
            log->add({"8.7", line,
                      regime_brief(*serving, {a, b}) + " (replicate means over 3 workload seeds)",
                      "NVLink 450 GB/s per direction and 2.8 µs per ring step (the GPU preset's "
                      "nvlink_bandwidth, nvlink_latency); the all-gather in series with each "
                      "load group's shards [A]",
                      path + " path; shard_allgather a modelled connector option, not a shipped "
                             "one"});
        }
  }
  if (!shard_lines.empty())
    md << "Serving, the replicated layouts with their KV loaded once (`serving.replicated_kv: "
          "shard_allgather`: each GPU loads 1/r over its host link, the ring all-gathers the rest "
          "over NVLink in the fabric) against every rank loading its copy (computed; replicates "
          "paired by seed):\n"
       << shard_lines << "\n";
  if (serving && !shard_pairs.empty()) {
    // What the runs say of MLA's conclusion: the gain of loading once, DeepSeek-V3 (8 copies)
    // against Qwen3-235B (2 copies), and how close it brings TP-8 x PP-2 to DP-16 + EP-16, with
    // the share of load + compute time KV loading took under each_rank (the bound).
    const ResultsTable& t = serving->table;
    std::string verdicts;
    for (const std::string path : {"kernel", "layerwise"})
      for (const std::string w : {"narrativeqa", "sharegpt"}) {
        const auto ds = shard_pairs.find(path + "|" + w + "|deepseek-v3");
        const auto qw = shard_pairs.find(path + "|" + w + "|qwen3-235b-a22b");
        if (ds == shard_pairs.end() || qw == shard_pairs.end()) continue;
        const auto gain = [&t](const ShardPair& p) {
          return mean_of(t, p.shard, "throughput_rps") / mean_of(t, p.each, "throughput_rps");
        };
        const double g_ds = gain(ds->second), g_q = gain(qw->second);
        const double xfer = mean_of(t, ds->second.each, "transfer_time_fraction");
        // The load's active bound under each_rank: the stack's software or the link's copies.
        const double sw = mean_of(t, ds->second.each, "load_bound_share_software");
        const double lk = mean_of(t, ds->second.each, "load_bound_share_link");
        std::string v = w + " (" + path + " path): loading once multiplies served throughput by " +
                        fmt_num(g_ds) + " for DeepSeek-V3 (TP-8 × PP-2, 8 copies) and " +
                        fmt_num(g_q) + " for Qwen3-235B (TP-8, 2 copies)";
        if (std::isfinite(xfer))
          v += "; KV loading took " + pct(xfer) +
               " of DeepSeek-V3's "
               "load + compute time under each_rank";
        if (std::isfinite(sw) && std::isfinite(lk))
          v += ", that load bound by the stack's software " + pct(sw) + " and by the link " +
               pct(lk) + " of its time";
        if (first_ok(t, ds->second.dp))
          v += "; DeepSeek-V3 then serves " +
               fmt_num(mean_of(t, ds->second.shard, "throughput_rps") /
                       mean_of(t, ds->second.dp, "throughput_rps")) +
               "× its DP-16 + EP-16 throughput (each_rank: " +
               fmt_num(mean_of(t, ds->second.each, "throughput_rps") /
                       mean_of(t, ds->second.dp, "throughput_rps")) +
               "×)";
        // A gain the replicates resolve: the paired interval of the throughputs excludes 0.
        const auto resolved = [&t](const ShardPair& p) {
          return stats::interval_sign(paired(t, p.shard, p.each, "throughput_rps")) > 0;
        };
        const bool r_ds = resolved(ds->second), r_q = resolved(qw->second);
        v += g_ds > 1.1 && !r_ds
                 ? ": DeepSeek-V3's gain is within its replicate spread (the paired interval "
                   "contains 0), so these runs do not resolve whether loading once relieves MLA"
             : g_ds > 1.1 && g_ds > g_q
                 ? ": the latent's copies bound the load, so loading them once relieves MLA more "
                   "than GQA here"
             : g_ds > 1.1 ? std::string(": loading once helps ") +
                                (r_q ? "both"
                                     : "DeepSeek-V3 (Qwen3-235B's gain within its "
                                       "replicate spread)") +
                                ", MLA not more than GQA here"
             : std::isfinite(xfer) && xfer < 0.5
                 ? ": loading once changes little here (KV loading is the smaller share of the "
                   "time: see the regime above)"
             : std::isfinite(sw) && sw > 0.5
                 ? ": loading once changes little here (the stack's software binds the load, "
                   "not the host link)"
                 : ": loading once changes little here (the host link is not what binds)";
        verdicts += "- " + v + ".\n";
        if (sim_mla.empty() && (g_ds > 1.1 || g_q > 1.1)) {
          sim_mla = fmt_num(g_ds) + "× DeepSeek-V3's served throughput against " + fmt_num(g_q) +
                    "× Qwen3-235B's (" + w + ", " + path + " path, at 70 RPS offered" +
                    (r_ds ? "" : "; DeepSeek-V3's gain within its replicate spread") + ")";
          sim_mla_more = g_ds > g_q;
          sim_mla_resolved = r_ds;
        }
      }
    if (!verdicts.empty())
      md << "What the runs say of MLA's conclusion (replicate means; the regime of each pair "
            "above):\n"
         << verdicts << "\n";
  }

  // The MLA conclusion, from the numbers above.
  auto find = [&](const std::string& m, const std::string& l) -> const LayoutKappa* {
    for (const LayoutKappa& k : kappa)
      if (k.model == m && k.layout == l) return &k;
    return nullptr;
  };
  const LayoutKappa* ds_tp = find("deepseek-v3", "tp=8");
  const LayoutKappa* ds_dp = find("deepseek-v3", "tp=1,dp_attention=8,ep=8");
  const LayoutKappa* q_tp = find("qwen3-235b-a22b", "tp=8");
  const LayoutKappa* q_dp = find("qwen3-235b-a22b", "tp=1,dp_attention=8,ep=8");
  const LayoutKappa* ds_pp = find("deepseek-v3", "tp=8,pp=2,nodes=2");
  const LayoutKappa* ds_dp16 = find("deepseek-v3", "tp=1,dp_attention=16,ep=16,nodes=2");
  md << "The κ paper's MLA conclusion, recomputed:\n";
  if (ds_tp && ds_dp && q_tp && q_dp) {
    md << "- Under TP-8 DeepSeek-V3's latent is held " << fmt_num(ds_tp->kv_replication)
       << " times (once per rank): each GPU loads " << fmt_num(ds_tp->b_kv_share / 1e3)
       << " KB per cached token and κ_crit is " << fmt_num(ds_tp->kappa_crit) << ", "
       << fmt_num(ds_tp->kappa_crit / q_tp->kappa_crit) << "× Qwen3-235B's "
       << fmt_num(q_tp->kappa_crit) << " (GQA, KV copies " << fmt_num(q_tp->kv_replication)
       << "): MLA's small latent buys little while it is replicated.\n"
       << "- Under DP-attention + EP-8 the latent is no longer replicated (KV copies "
       << fmt_num(ds_dp->kv_replication) << "): each GPU loads " << fmt_num(ds_dp->b_kv_share / 1e3)
       << " KB per replica token, κ_crit rises " << fmt_num(ds_dp->kappa_crit / ds_tp->kappa_crit)
       << "× to " << fmt_num(ds_dp->kappa_crit) << ", "
       << fmt_num(ds_dp->kappa_crit / q_dp->kappa_crit) << "× Qwen3-235B under the same "
       << "layout (" << fmt_num(q_dp->kappa_crit) << ", itself "
       << fmt_num(q_dp->kappa_crit / q_tp->kappa_crit) << "× its TP-8 value). ";
    // The reading follows the ratios: MLA "helps" where DeepSeek-V3's κ_crit clearly exceeds
    // Qwen3's under the same layout (a 1.5× margin, well above the analytic inputs' rounding).
    const bool helps_tp = ds_tp->kappa_crit > 1.5 * q_tp->kappa_crit;
    // DeepSeek-V3's one-node layouts need more than 80 GB per GPU; the two-node layouts that fit
    // (TP-8 × PP-2, DP-16 + EP-16) hold the same KV per token per rank, so the same κ_crit.
    const auto fit_note = [&]() -> std::string {
      if (ds_tp->fits && ds_dp->fits) return "";
      const bool same = ds_pp && ds_dp16 && ds_pp->fits && ds_dp16->fits &&
                        fmt_num(ds_pp->kappa_crit) == fmt_num(ds_tp->kappa_crit) &&
                        fmt_num(ds_dp16->kappa_crit) == fmt_num(ds_dp->kappa_crit);
      return same ? "; DeepSeek-V3's weights do not fit one node under either layout (" +
                        fmt_num(ds_tp->weight_bytes_gpu / 1e9) + " and " +
                        fmt_num(ds_dp->weight_bytes_gpu / 1e9) +
                        " GB per GPU); the two-node layouts that fit (TP-8 × PP-2, DP-16 + "
                        "EP-16) give the same κ_crit"
                  : "; DeepSeek-V3's weights do not fit one node under " +
                        std::string(ds_tp->fits   ? "DP-attention + EP-8"
                                    : ds_dp->fits ? "TP-8"
                                                  : "either layout") +
                        " (a layout on paper only)";
    };
    const bool helps_dp = ds_dp->kappa_crit > 1.5 * q_dp->kappa_crit;
    if (log)
      log->add({"8.7",
                "MLA under TP-8 vs DP-attention + EP-8: DeepSeek-V3's analytic κ_crit " +
                    fmt_num(ds_tp->kappa_crit) + " → " + fmt_num(ds_dp->kappa_crit) + " (" +
                    fmt_num(ds_tp->kappa_crit / q_tp->kappa_crit) + "× and " +
                    fmt_num(ds_dp->kappa_crit / q_dp->kappa_crit) +
                    "× Qwen3-235B's under the same layouts): the latent pays only once it is not "
                    "replicated",
                "analytic per GPU (Eq. 6 at peak), DGX H100, FP8 compute, BF16 KV" + fit_note(),
                "the KV replication of each layout (by construction: the latent is whole on "
                "every TP rank)",
                "analytic (no stack software)"});
    if (helps_dp && !helps_tp)
      md << "So the conclusion changes with the layout: under TP the replicated latent leaves "
            "DeepSeek-V3 about as easy to make link-bound as Qwen3-235B; once the latent is no "
            "longer replicated, MLA's small latent does raise κ_crit, by about the factor the "
            "latent is smaller than Qwen3's per-token KV.\n";
    else if (helps_dp && helps_tp)
      md << "MLA raises κ_crit over Qwen3-235B under both layouts; DP-attention widens the gap.\n";
    else
      md << "MLA does not raise κ_crit clearly over Qwen3-235B under either layout here.\n";
    // Issue 23 item 5: the same comparison with the replicated KV loaded once.
    {
      const bool helps_shard = ds_tp->kappa_crit_shard > 1.5 * q_tp->kappa_crit_shard;
      const std::string nvl = fmt_num(ds_tp->nvlink_Bps / 1e9);
      md << "- With replicated KV loaded once (shard_allgather: each GPU loads 1/r over its host "
            "link, a ring all-gather over NVLink the rest, in series) TP-8 DeepSeek-V3's κ_crit "
            "becomes "
         << fmt_num(ds_tp->kappa_crit_shard) << " ("
         << fmt_num(ds_tp->kappa_crit_shard / ds_tp->kappa_crit)
         << "× each_rank's, r = " << fmt_num(ds_tp->kv_replication) << ") and Qwen3-235B's "
         << fmt_num(q_tp->kappa_crit_shard) << " ("
         << fmt_num(q_tp->kappa_crit_shard / q_tp->kappa_crit)
         << "×, r = " << fmt_num(q_tp->kv_replication) << "): DeepSeek-V3 is now "
         << fmt_num(ds_tp->kappa_crit_shard / q_tp->kappa_crit_shard)
         << "× Qwen3-235B under TP-8 (DP-attention + EP-8: "
         << fmt_num(ds_dp->kappa_crit / q_dp->kappa_crit) << "×), and "
         << fmt_num(ds_tp->kappa_crit_shard / ds_dp->kappa_crit)
         << "× its own DP-attention + EP-8 κ_crit. ";
      if (helps_shard && !helps_tp)
        md << "So MLA's conclusion changes with the connector: loading the latent once per TP "
              "group (not once per rank) makes MLA pay under TP too, without DP-attention's "
              "copied attention weights; ";
      else if (helps_shard && helps_tp)
        md << "MLA already raised κ_crit under TP-8; loading the latent once widens the gap; ";
      else
        md << "So MLA's conclusion does not change: even loaded once, the latent under TP-8 "
              "does not raise κ_crit clearly over Qwen3-235B (the all-gather's NVLink time "
              "stands in for most of the host bytes saved); ";
      md << "conditional on the all-gather's NVLink rate (" << nvl
         << " GB/s per direction, the GPU preset's) and on it running in series with the host "
            "load; a connector that hid the all-gather behind the next layer's host load would "
            "reach r × each_rank's κ_crit ("
         << fmt_num(ds_tp->kappa_crit_shard_overlap) << " for DeepSeek-V3, "
         << fmt_num(q_tp->kappa_crit_shard_overlap)
         << " for Qwen3-235B), the bound then the host link's shard alone.";
      if (!sim_mla.empty())
        md << " The runs "
           << (!sim_mla_resolved             ? "do not resolve it"
               : sim_mla_more == helps_shard ? "agree"
                                             : "do not agree")
           << ": loading once lifted " << sim_mla
           << (sim_mla_more ? ""
                            : " — DeepSeek-V3 runs as TP-8 × PP-2 on two nodes there, "
                              "each stage loading half the layers' latent, with a "
                              "micro-batch per stage and its own all-gather (r = 8) on NVLink");
      md << "\n";
      if (log)
        log->add({"8.7",
                  "Replicated KV loaded once (shard_allgather) under TP-8: DeepSeek-V3's analytic "
                  "κ_crit " +
                      fmt_num(ds_tp->kappa_crit) + " → " + fmt_num(ds_tp->kappa_crit_shard) +
                      ", Qwen3-235B's " + fmt_num(q_tp->kappa_crit) + " → " +
                      fmt_num(q_tp->kappa_crit_shard) + " (DeepSeek-V3 " +
                      fmt_num(ds_tp->kappa_crit_shard / q_tp->kappa_crit_shard) +
                      "× Qwen3-235B): MLA's conclusion " +
                      (helps_shard != helps_tp ? "changes" : "does not change") +
                      " under TP when the connector loads the latent once",
                  "analytic per GPU (Eq. 6 at peak), DGX H100, FP8 compute, BF16 KV",
                  "conditional on the NVLink all-gather rate (" + nvl +
                      " GB/s per direction) and the all-gather in series with the host load [A]",
                  "analytic (no stack software); shard_allgather a modelled connector option"});
    }
    if (ds_pp && ds_dp16)
      md << "- DeepSeek-V3 fits no one-node layout (weights "
         << fmt_num(ds_tp->weight_bytes_gpu / 1e9) << " GB per GPU at TP-8, "
         << fmt_num(ds_dp->weight_bytes_gpu / 1e9)
         << " GB at DP-8 + EP-8): on two nodes TP-8 × PP-2 keeps κ_crit at "
         << fmt_num(ds_pp->kappa_crit) << " (" << fmt_num(ds_pp->kv_replication)
         << " copies of each layer's latent), DP-16 + EP-16 reaches "
         << fmt_num(ds_dp16->kappa_crit)
         << "; with the communication serial to compute (the EP all-to-all now crosses the NIC) "
         << fmt_num(ds_pp->kappa_crit_comm) << " against " << fmt_num(ds_dp16->kappa_crit_comm)
         << ".\n";
  } else {
    md << "- not computed: a layout of the comparison is missing.\n";
  }
  // Against the workloads' published median κ_ratio (mission.md: ShareGPT 100, NarrativeQA 5000,
  // DocFinQA 10000): which of them stay above the largest κ_crit of a layout that fits.
  const LayoutKappa* top = nullptr;
  for (const LayoutKappa& k : kappa)
    if (k.fits && (!top || k.kappa_crit_comm > top->kappa_crit_comm)) top = &k;
  if (top) {
    md << "\nThe largest κ_crit of a layout that fits, with communication, is "
       << fmt_num(top->kappa_crit_comm) << " (" << top->model << ", " << top->layout << "). ";
    std::string above;
    for (const auto& [w, med] : std::vector<std::pair<std::string, double>>{
             {"ShareGPT", 100}, {"NarrativeQA", 5000}, {"DocFinQA", 10000}})
      above += (above.empty() ? "" : ", ") + w + " " + fmt_num(med) + " (" +
               fmt_num(med / top->kappa_crit_comm) + "× it)";
    md << "The published median κ_ratio (mission.md) against it: " << above
       << "; a median above κ_crit means the median request is still link-bound there.";
  }
  md << " The serving rows are replicate means over three workload seeds (" << kReplicateNote
     << ").\n\n";
  return md.str();
}

}  // namespace kappasim::report
