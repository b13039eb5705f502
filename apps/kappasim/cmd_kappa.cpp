// kappasim kappa / kappasim roofline: the analytic κ calculator on preset or file-defined
// models and systems.
#include <algorithm>
#include <iostream>
#include <set>

#include "apps/kappasim/cli.hpp"
#include "core/table.hpp"
#include "models/analytic/kappa.hpp"
#include "models/gpu/kernel_timing.hpp"

namespace kappasim::cli {

namespace {

struct CommonOptions {
  std::vector<std::string> models, systems, sets, preset_dirs;
  std::string precision = "bf16", kv_dtype = "bf16", compute, bandwidth = "peak", convention, fpf,
              context, new_tokens, format = "table";
  int tp = 1;
  double kaplan_context = 4096;
  bool dump = false;
  bool unified_kv = false;           // issue 25
  std::string replicated_kv;         // issue 23 item 5: each_rank | shard_allgather
  std::vector<std::string> layouts;  // kappa --layout (issue 14)
};

void add_common(po::options_description& d, CommonOptions& o) {
  d.add_options()("model,m", po::value(&o.models)->multitoken(),
                  "model preset name(s) or YAML file(s); default: every model preset")(
      "system,s", po::value(&o.systems)->multitoken(),
      "system preset name(s) or YAML file(s); default: every system preset")(
      "precision", po::value(&o.precision), "compute dtype whose peak is C_eff (bf16, fp8, ...)")(
      "kv-dtype", po::value(&o.kv_dtype),
      "KV cache dtype: bf16, fp16, fp8, int8, int4, nvfp4, mxfp4")(
      "tp", po::value(&o.tp),
      "tensor parallelism: per-GPU F_pf / tp and KV share (with KV-head replication)")(
      "compute", po::value(&o.compute),
      "C_eff per GPU instead of the GPU's peak, e.g. \"2000 TFLOP/s\"")(
      "bandwidth", po::value(&o.bandwidth),
      "host->GPU bandwidth per GPU: peak (the link's, per direction) or a value, e.g. \"64 GB/s\"")(
      "fpf-convention", po::value(&o.convention),
      "F_pf convention: 2n-active (default, the paper's), 2n-nonembedding, matmul-no-head, kaplan")(
      "kaplan-context", po::value(&o.kaplan_context),
      "n_ctx of the kaplan convention (default 4096)")(
      "fpf", po::value(&o.fpf),
      "F_pf per new token for the whole model, overriding the convention, e.g. \"146.4 GFLOP\"")(
      "set", po::value(&o.sets)->composing(),
      "override a config key: --set system.gpu.hbm_bandwidth=\"4 TB/s\"")(
      "preset-dir", po::value(&o.preset_dirs)->composing(),
      "extra preset folder (<dir>/models, <dir>/systems, ...)")("format", po::value(&o.format),
                                                                "table, csv or json")(
      "unified-kv", po::bool_switch(&o.unified_kv),
      "B_kv as the serving engine keeps it: a unified KV cache (vLLM with a KV connector), in "
      "which sliding-window layers hold every token too (issue 25; the same for a model without "
      "a layer pattern)")(
      "replicated-kv", po::value(&o.replicated_kv),
      "KV replicated over TP ranks (tp > KV heads, MLA): each_rank (default: every GPU loads its "
      "copy) or shard_allgather (1/r over each host link, then an NVLink ring all-gather; "
      "serving.replicated_kv, docs/parallelism.md)")(
      "dump-config", po::bool_switch(&o.dump),
      "print the effective configuration of each case and exit")("help,h", "this help");
}

// K and T of the analytic model (issue 26 item 23): the model is linear in them, so they may be
// an average or a median of a distribution (the median NarrativeQA request's T is 9.2), as the
// kappa kind's K: and T: are. Simulations (`measure`, `run`) take whole tokens.
double analytic_tokens_option(const std::string& option, const std::string& text) {
  double v = 0;
  try {
    v = parse_quantity_as(text, dim::none);
  } catch (const UnitError& e) {
    throw InputError("--" + option + ": " + e.what());
  }
  if (!(v >= 0 && v <= 1e12))
    throw InputError("--" + option + ": expected a number of tokens between 0 and 1e12, got \"" +
                     text + "\"");
  return v;
}

KappaQuery make_query(const CommonOptions& o, const po::variables_map& vm) {
  KappaQuery q;
  q.compute_dtype = o.precision;
  {
    std::vector<std::string> known = GpuSpec::compute_dtypes();
    if (std::find(known.begin(), known.end(), o.precision) == known.end()) {
      std::string all;
      for (const auto& k : known) all += (all.empty() ? "" : ", ") + k;
      throw InputError("--precision: unknown compute dtype '" + o.precision + "' (expected " + all +
                       ")");
    }
  }
  q.kv_dtype = parse_dtype(o.kv_dtype, "--kv-dtype");
  if (o.tp < 1) throw InputError("--tp: must be at least 1, got " + std::to_string(o.tp));
  q.tp = o.tp;
  if (vm.count("compute"))
    q.compute_override = quantity_option("compute", o.compute, dim::flop_rate);
  if (o.bandwidth != "peak")
    q.bandwidth_override = quantity_option("bandwidth", o.bandwidth, dim::bandwidth);
  if (vm.count("fpf-convention")) {
    bool found = false;
    std::string all;
    for (const auto& [n, c] : fpf_convention_names()) {
      all += (all.empty() ? "" : ", ") + std::string(n);
      if (o.convention == n) {
        q.convention = c;
        found = true;
      }
    }
    if (!found)
      throw InputError("--fpf-convention: unknown convention '" + o.convention + "' (expected " +
                       all + ")");
  }
  if (!(o.kaplan_context >= 0)) throw InputError("--kaplan-context: must not be negative");
  q.kaplan_context = o.kaplan_context;
  q.unified_kv = o.unified_kv;
  if (!o.replicated_kv.empty()) {
    std::vector<std::string> names;
    for (const auto& [n, v] : replicated_kv_names()) {
      names.emplace_back(n);
      if (o.replicated_kv == n) q.shard_replicated_kv = v == ReplicatedKv::ShardAllgather;
    }
    if (std::find(names.begin(), names.end(), o.replicated_kv) == names.end()) {
      const std::string near = nearest(o.replicated_kv, names);
      throw InputError("--replicated-kv: unknown value '" + o.replicated_kv + "'" +
                       (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                       "; expected each_rank or shard_allgather");
    }
  }
  if (vm.count("fpf")) q.fpf_override = quantity_option("fpf", o.fpf, dim::flops);
  if (vm.count("context")) q.context_k = analytic_tokens_option("context", o.context);
  if (vm.count("t")) {
    q.new_tokens_t = analytic_tokens_option("t", o.new_tokens);
    if (*q.new_tokens_t < 1) throw InputError("--t: need at least 1 new token");
  }
  return q;
}

// evaluate_kappa, with --tp named when the model's heads do not split tp ways.
KappaPoint evaluate_case(LoadedCase& c, const KappaQuery& q) {
  if (q.layout) {
    // Issue 14: the layout is checked against this model and system, naming the option.
    const std::string what = "--layout '" + layout_name(*q.layout) + "' (model " +
                             c.config.model.name + ", system " + c.config.system.name + ")";
    validate_layout(*q.layout, c.config.model, c.config.system.gpus, what);
    return evaluate_kappa(c.config.model, c.config.system, q, &c.provenance);
  }
  try {
    kv_heads_per_gpu(c.config.model, q.tp);
  } catch (const InputError& e) {
    throw InputError("--tp " + std::to_string(q.tp) + ": " + e.what());
  }
  return evaluate_kappa(c.config.model, c.config.system, q, &c.provenance);
}

std::vector<std::string> or_all(const std::vector<std::string>& v, const std::string& kind) {
  return v.empty() ? PresetRegistry::instance().names(kind) : v;
}

// Issue 25: with no --system (every built-in system), a query that needs a GPU-GPU link (TP or
// a multi-GPU layout) skips the PCIe-only systems (L40S, RTX PRO 6000, Rubin CPX) instead of
// failing the whole table; named with -s, such a system is refused naming
// system.gpu.nvlink_bandwidth (models/analytic/kappa). The skipped names go to stderr.
bool skip_linkless(bool all_systems, const SystemSpec& s, int tp, const ParallelismSpec* layout) {
  if (!all_systems || s.gpu.nvlink_Bps) return false;
  return layout ? layout->gpus() > 1 : tp > 1;
}
// Likewise an FP4 KV dtype skips the systems whose GPU cannot write FP4 (require_kv_dtype_support,
// models/gpu/kernel_timing); named with -s they are refused naming kv_dtype.
bool skip_no_fp4(bool all_systems, const SystemSpec& s, DType kv_dtype) {
  return all_systems && !kv_dtype_supported(s.gpu, kv_dtype);
}
void note_skipped(const std::vector<std::string>& skipped, const std::string& why) {
  if (skipped.empty()) return;
  std::string names;
  for (const auto& n : skipped)
    if (names.find("'" + n + "'") == std::string::npos)
      names += (names.empty() ? "'" : ", '") + n + "'";
  std::cerr << "kappasim: note: skipped system(s) " << names << ": " << why
            << "; name one with --system to see why\n";
}
const char* const kNoLink = "no GPU-GPU link (system.gpu.nvlink_bandwidth) for tensor parallelism";
const char* const kNoFp4 = "no FP4 support for an FP4 KV dtype (kv_dtype)";

}  // namespace

int cmd_kappa(const std::vector<std::string>& args) {
  CommonOptions o;
  po::options_description desc(
      "kappasim kappa: the analytic κ model (arXiv 2601.19910 Eq. 3, 6) per model × system\n"
      "Usage: kappasim kappa [--model M ...] [--system S ...] [options]\nOptions");
  add_common(desc, o);
  desc.add_options()("context,k", po::value(&o.context),
                     "cached tokens K: adds attention FLOPs over K (κ_crit(K)) and, with --t, the "
                     "TTFT decomposition")("t", po::value(&o.new_tokens),
                                           "new tokens T (default 1 when --context is given)")(
      "layout", po::value(&o.layouts)->composing(),
      "parallelism layout(s), one row each: tp=8 | dp_attention=8,ep=8 | tp=8,pp=2,nodes=2 "
      "(keys tp, dp_attention, ep, pp, nodes, nic_bandwidth; docs/parallelism.md)");
  auto vm = parse("kappa", args, desc);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  add_preset_dirs(o.preset_dirs);
  const Format fmt = parse_format(o.format);
  const KappaQuery q = make_query(o, vm);
  const auto models = or_all(o.models, "model");
  const auto systems = or_all(o.systems, "system");
  // ---- parallelism layouts (issue 14): without --layout every output stays as it was ----
  std::vector<ParallelismSpec> layouts;
  for (const auto& l : o.layouts) layouts.push_back(parse_layout(l, "--layout '" + l + "'"));
  if (!layouts.empty() && vm.count("tp"))
    throw InputError("--tp and --layout: give the tensor parallelism inside the layout (tp=N)");
  const bool with_layout = !layouts.empty();
  if (!with_layout) layouts.emplace_back();  // one pass, no layout

  std::vector<std::string> cols = {"model",           "system",        "tp",
                                   "compute_dtype",   "kv_dtype",      "fpf_convention",
                                   "n_active_params", "b_kv_bytes",    "b_kv_gpu_bytes",
                                   "f_pf_flops",      "compute_flops", "bandwidth_bytes_per_s",
                                   "kappa_m",         "kappa_hw",      "kappa_crit"};
  const bool attn = q.context_k || q.new_tokens_t;
  const bool ttft = q.context_k && q.new_tokens_t;
  if (attn)
    for (const char* c : {"context_k", "new_tokens_t", "f_attention_flops", "kappa_crit_attention"})
      cols.emplace_back(c);
  if (ttft)
    for (const char* c : {"kappa_ratio", "t_transfer_s", "t_compute_s", "ttft_s", "p_oh",
                          "utilization", "t_compute_attention_s", "ttft_attention_s",
                          "p_oh_attention", "utilization_attention", "bound"})
      cols.emplace_back(c);
  if (with_layout)
    for (const char* c :
         {"layout", "dp_attention", "ep", "pp", "nodes", "gpus", "b_kv_gpu_share_bytes",
          "kv_replication", "f_pf_gpu_flops", "ep_ranks_reached", "ep_nodes_reached",
          "nvlink_bytes_per_token", "nic_bytes_per_token", "t_comm_per_token_s", "kappa_crit_comm",
          "weight_bytes_gpu"})
      cols.emplace_back(c);
  // ---- issue 23 item 5: the sharded load's columns only with --replicated-kv ----
  const bool with_shard = !o.replicated_kv.empty();
  if (with_shard)
    for (const char* c :
         {"replicated_kv", "kv_copies_r", "host_bytes_per_token_gpu",
          "allgather_nvlink_bytes_per_token_gpu", "allgather_s_per_token", "b_kv_host_equiv_bytes"})
      cols.emplace_back(c);
  // ---- KV tiers below DRAM (issue 14): columns and a block only when a system has tiers ----
  bool with_tiers = false;
  if (!o.dump) {
    CaseLoader probe(o.sets);
    for (const auto& s : systems)
      with_tiers = with_tiers || has_tiers(probe.get(models.front(), s).config.system);
  }
  const std::vector<std::string> tier_names = {"dram", "cxl", "nvme", "nvme-gds"};
  if (with_tiers) {
    cols.emplace_back("tier_io_bytes");
    for (std::string t : tier_names) {
      std::replace(t.begin(), t.end(), '-', '_');
      cols.emplace_back("tier_" + t + "_bandwidth_bytes_per_s");
      cols.emplace_back("kappa_crit_" + t);
    }
  }
  // ---- issue 25: models whose B_kv depends on K (sliding / linear layers) get a column saying
  // the K their B_kv and κ hold at; without such a model every output stays as it was ----
  bool with_kv_at = false;
  if (!o.dump) {
    CaseLoader probe(o.sets);
    for (const auto& mm : models)
      with_kv_at = with_kv_at || probe.get(mm, systems.front()).config.model.has_layer_pattern();
  }
  if (with_kv_at) cols.emplace_back("kv_at_k");
  std::vector<std::pair<KappaPoint, std::string>> tier_points;  // (point, layout name)
  cols.emplace_back("compute_source");
  cols.emplace_back("bandwidth_source");
  Table table(cols);

  std::string dumps;
  std::vector<std::string> skipped;      // PCIe-only systems left out of an all-systems TP query
  std::vector<std::string> skipped_fp4;  // GPUs without FP4 left out of an FP4-KV query
  CaseLoader loader(o.sets);
  for (const auto& m : models) {
    for (const auto& s : systems) {
      for (const ParallelismSpec& layout : layouts) {
        LoadedCase c = loader.get(m, s);
        if (o.dump) {
          dumps += "# model " + m + " on system " + s + "\n" + dump_case(c) + "---\n";
          break;
        }
        KappaQuery ql = q;
        if (with_layout) ql.layout = layout;
        if (skip_linkless(o.systems.empty(), c.config.system, q.tp,
                          with_layout ? &layout : nullptr)) {
          skipped.push_back(s);
          continue;
        }
        if (skip_no_fp4(o.systems.empty(), c.config.system, q.kv_dtype)) {
          skipped_fp4.push_back(s);
          continue;
        }
        KappaPoint p = evaluate_case(c, ql);
        std::vector<Cell> row = {p.model,
                                 p.system,
                                 static_cast<std::int64_t>(p.tp),
                                 p.compute_dtype,
                                 p.kv_dtype,
                                 p.convention,
                                 p.n_active_params,
                                 p.b_kv,
                                 p.b_kv_gpu,
                                 p.f_pf,
                                 p.compute,
                                 p.bandwidth,
                                 p.kappa_m,
                                 p.kappa_hw,
                                 p.kappa_crit};
        if (attn) {
          row.insert(row.end(),
                     {*p.context_k, *p.new_tokens_t, *p.f_attention, *p.kappa_crit_attention});
        }
        if (ttft) {
          const TtftParts& a = *p.ttft;
          const TtftParts& b = *p.ttft_attention;
          row.insert(row.end(), {*p.context_k / *p.new_tokens_t, a.t_transfer, a.t_compute,
                                 a.ttft_serial(), a.p_oh(), a.utilization(), b.t_compute,
                                 b.ttft_serial(), b.p_oh(), b.utilization(),
                                 std::string(b.t_transfer > b.t_compute ? "link" : "compute")});
        }
        if (p.layout) {
          const KappaLayout& L = *p.layout;
          const ParallelismSpec& y = L.cost.layout;
          row.insert(
              row.end(),
              {L.name, static_cast<std::int64_t>(y.dp_attention), static_cast<std::int64_t>(y.ep),
               static_cast<std::int64_t>(y.pp), static_cast<std::int64_t>(y.nodes),
               static_cast<std::int64_t>(L.cost.gpus), L.b_kv_share, L.cost.kv_replication, L.f_gpu,
               L.cost.ep_ranks_reached, L.cost.ep_nodes_reached, L.nvlink_bytes, L.nic_bytes,
               L.t_comm, L.kappa_crit_comm, L.weight_bytes_gpu});
        }
        if (with_shard) {
          const KappaShardedKv sk = p.sharded_kv.value_or(KappaShardedKv{});
          const bool on = p.sharded_kv.has_value();
          row.insert(row.end(), {std::string(on ? "shard_allgather" : "each_rank"),
                                 static_cast<std::int64_t>(sk.r), on ? sk.host_bytes : p.b_kv_share,
                                 sk.gather_bytes, sk.gather_s, p.b_kv_share});
        }
        if (with_tiers) {
          // Empty cells by push_back of a default Cell (a ternary of two Cells trips GCC 12's
          // -O3 maybe-uninitialized false positive on the variant's string member).
          if (p.tiers.empty())
            row.emplace_back();
          else
            row.emplace_back(p.tier_io_bytes);
          for (const std::string& t : tier_names) {
            auto it = std::find_if(p.tiers.begin(), p.tiers.end(),
                                   [&](const TierLoad& x) { return x.tier == t; });
            if (it == p.tiers.end()) {
              row.emplace_back();
              row.emplace_back();
            } else {
              row.emplace_back(it->load_Bps);
              row.emplace_back(it->kappa_crit);
            }
          }
          if (!p.tiers.empty()) tier_points.emplace_back(p, p.layout ? p.layout->name : "");
        }
        if (with_kv_at) row.emplace_back(p.kv_at.empty() ? std::string("any K") : p.kv_at);
        row.emplace_back(p.compute_source);
        row.emplace_back(p.bandwidth_source);
        table.add_row(std::move(row));
      }
    }
  }
  note_skipped(skipped, kNoLink);
  note_skipped(skipped_fp4, kNoFp4);
  // Issue 25: B_kv here is what the architecture leaves; the serving engine (and every stack
  // it models) keeps every layer's tokens, which --unified-kv shows.
  if (with_kv_at && !o.unified_kv)
    std::cerr << "kappasim: note: B_kv of a model with a layer pattern is what its layers "
                 "leave; the serving engine keeps and moves every sliding-window layer's tokens "
                 "too (a unified KV cache, as vLLM keeps it with a KV connector): --unified-kv "
                 "gives that accounting; linear-attention models are not served "
                 "(docs/accounting.md)\n";
  if (o.dump) {
    std::cout << dumps;
    return 0;
  }
  if (fmt != Format::Table) {
    std::cout << table.render(fmt);
    return 0;
  }
  std::vector<std::string> shown = {"model",      "system",        "b_kv_gpu_bytes",
                                    "f_pf_flops", "compute_flops", "bandwidth_bytes_per_s",
                                    "kappa_m",    "kappa_hw",      "kappa_crit"};
  if (with_layout)  // issue 14: the layout, its per-GPU shares and κ with communication
    shown = {"model",
             "system",
             "layout",
             "gpus",
             "b_kv_gpu_bytes",
             "b_kv_gpu_share_bytes",
             "f_pf_gpu_flops",
             "t_comm_per_token_s",
             "weight_bytes_gpu",
             "kappa_crit",
             "kappa_crit_comm"};
  if (with_shard)
    for (const char* c :
         {"kv_copies_r", "host_bytes_per_token_gpu", "allgather_nvlink_bytes_per_token_gpu"})
      shown.emplace_back(c);
  if (attn) shown.push_back("kappa_crit_attention");
  if (with_kv_at) shown.push_back("kv_at_k");
  if (ttft)
    for (const char* c :
         {"ttft_s", "p_oh", "utilization", "ttft_attention_s", "p_oh_attention", "bound"})
      shown.emplace_back(c);
  std::cout << table.project(shown).text();
  std::cout << "\nprecision " << q.compute_dtype << ", KV " << dtype_name(q.kv_dtype)
            << (with_layout ? ", layouts as listed" : ", TP " + std::to_string(q.tp))
            << ", F_pf convention "
            << (table.rows().empty() ? "" : std::get<std::string>(table.rows()[0][5]));
  if (q.context_k) std::cout << ", K = " << format_number(*q.context_k);
  if (q.new_tokens_t) std::cout << ", T = " << format_number(*q.new_tokens_t);
  std::cout << "\n";
  if (with_kv_at)
    std::cout << "  kv_at_k: B_kv and κ of a model with sliding-window or linear-attention layers "
                 "hold at that K only (KV left by a K-token prefix / K; K → ∞: full layers only; "
                 "give --context K)\n";
  std::set<std::string> seen;
  for (const auto& r : table.rows()) {
    std::string line = "  " + std::get<std::string>(r[1]) +
                       ": C_eff = " + std::get<std::string>(r[r.size() - 2]) +
                       "; BW = " + std::get<std::string>(r[r.size() - 1]);
    if (seen.insert(line).second) std::cout << line << "\n";
  }
  if (!tier_points.empty()) {  // issue 14: one row per tier (docs/memory-tiers.md)
    std::vector<std::string> tcols = {"model", "system"};
    if (with_layout) tcols.emplace_back("layout");
    for (const char* c : {"tier", "capacity_bytes", "request_bytes", "bandwidth_bytes_per_s",
                          "bound", "kappa_hw", "kappa_crit", "usd_per_gb"})
      tcols.emplace_back(c);
    Table tiers(tcols);
    for (const auto& [p, layout] : tier_points)
      for (const TierLoad& t : p.tiers) {
        std::vector<Cell> row = {p.model, p.system};
        if (with_layout) row.emplace_back(layout);
        row.insert(row.end(),
                   {t.tier, t.capacity_bytes, p.tier_io_bytes, t.load_Bps, t.bound, t.kappa_hw,
                    t.kappa_crit, t.usd_per_byte ? Cell{usd_per_gb(*t.usd_per_byte)} : Cell{}});
        tiers.add_row(std::move(row));
      }
    std::cout << "\nper-tier κ_crit: each tier's bandwidth per GPU with every GPU loading from it "
                 "at once (nvme: through a host-DRAM bounce; nvme-gds: GPUDirect Storage; "
                 "request_bytes: a 256-token chunk of the GPU's KV; usd_per_gb: an assumption; "
                 "docs/memory-tiers.md)\n"
              << tiers.text();
  }
  return 0;
}

int cmd_roofline(const std::vector<std::string>& args) {
  CommonOptions o;
  o.format = "csv";
  double lo = 1, hi = 1e5;
  int points = 61;
  po::options_description desc(
      "kappasim roofline: attainable FLOP/s per GPU against the workload's κ_ratio, ridge at "
      "κ_crit\n"
      "Usage: kappasim roofline --model M --system S [options]\nOptions");
  add_common(desc, o);
  desc.add_options()("kappa-min", po::value(&lo), "smallest κ_ratio (default 1)")(
      "kappa-max", po::value(&hi), "largest κ_ratio (default 1e5)")(
      "points", po::value(&points), "points, log-spaced (default 61)");
  auto vm = parse("roofline", args, desc);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  add_preset_dirs(o.preset_dirs);
  const Format fmt = parse_format(o.format);
  const KappaQuery q = make_query(o, vm);
  if (points > 100000) throw InputError("--points: at most 100000");
  Table table({"model", "system", "kappa_ratio", "attainable_flops_overlap",
               "attainable_flops_serial", "p_oh", "bound", "kappa_crit", "compute_flops"});
  std::string dumps;
  std::vector<std::string> skipped, skipped_fp4;
  CaseLoader loader(o.sets);
  for (const auto& m : or_all(o.models, "model")) {
    for (const auto& s : or_all(o.systems, "system")) {
      LoadedCase c = loader.get(m, s);
      if (o.dump) {
        dumps += "# model " + m + " on system " + s + "\n" + dump_case(c) + "---\n";
        continue;
      }
      if (skip_linkless(o.systems.empty(), c.config.system, q.tp, nullptr)) {
        skipped.push_back(s);
        continue;
      }
      if (skip_no_fp4(o.systems.empty(), c.config.system, q.kv_dtype)) {
        skipped_fp4.push_back(s);
        continue;
      }
      KappaPoint p = evaluate_case(c, q);
      for (const RooflineRow& r : roofline(p, lo, hi, points))
        table.add_row({p.model, p.system, r.kappa_ratio, r.attainable_overlap, r.attainable_serial,
                       r.p_oh, std::string(r.link_bound ? "link" : "compute"), p.kappa_crit,
                       p.compute});
    }
  }
  note_skipped(skipped, kNoLink);
  note_skipped(skipped_fp4, kNoFp4);
  std::cout << (o.dump ? dumps : table.render(fmt));
  return 0;
}

}  // namespace kappasim::cli
