// Section 8.8 of the reproduce report (issue 25): κ across generations. The analytic κ model
// (Eq. 6) per GPU on every generation's system preset, from A100 to Rubin and MI300X to MI355X,
// PCIe-only parts, and the C2C / unified-HBM parts; the host-link bandwidth each would need to
// keep the median chat and document-QA request compute-bound; and where the paper's claim (κ_HW
// falls generation over generation because compute outgrows links) holds and where it breaks,
// computed from the rows; the simulated κ_crit beside the analytic one (sweep
// studies/generations). Inputs: the presets, that sweep and section 1's workload medians.
// Markdown only.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include "core/error.hpp"
#include "core/table.hpp"
#include "report/analytic_point.hpp"
#include "report/format.hpp"
#include "report/results.hpp"
#include "report/sections.hpp"

namespace kappasim::report {

namespace {

// The systems of the section in generation order, with the line each belongs to (a pair of
// consecutive systems of one line is one generational step).
struct GenSystem {
  const char* system;
  const char* line;
};
constexpr GenSystem kSystems[] = {
    {"a100", "NVIDIA, PCIe host link"},
    {"h100", "NVIDIA, PCIe host link"},
    {"b200", "NVIDIA, PCIe host link"},
    {"hgx-b300", "NVIDIA, PCIe host link"},
    {"rubin-cpx", "NVIDIA, PCIe host link"},
    {"h20", "NVIDIA, compute-capped or PCIe-only"},
    {"l40s", "NVIDIA, compute-capped or PCIe-only"},
    {"rtx-pro-6000", "NVIDIA, compute-capped or PCIe-only"},
    {"mi300x", "AMD, PCIe host link"},
    {"mi355x", "AMD, PCIe host link"},
    {"hgx-b300-gen6", "faster links"},
    {"gh200", "faster links"},
    {"gb200", "faster links"},
    {"gb300", "faster links"},
    {"vr200", "faster links"},
    {"mi300a", "faster links"},
};

// The columns: a model, and for a model with sliding-window layers both what its architecture
// leaves (K → ∞) and what a unified cache moves (today's stacks; docs/accounting.md).
struct GenColumn {
  const char* model;
  bool unified_kv;
  const char* label;
};
constexpr GenColumn kColumns[] = {
    {"llama-3.1-70b", false, "Llama-3.1-70B"},
    {"qwen3-235b-a22b", false, "Qwen3-235B-A22B"},
    {"deepseek-v3", false, "DeepSeek-V3 (MLA)"},
    {"gpt-oss-120b", false, "gpt-oss-120b, window left (K → ∞)"},
    {"gpt-oss-120b", true, "gpt-oss-120b, unified cache"},
};

// Issue 25: the models of the attention-variants table, with what each row hinges on.
struct VariantModel {
  const char* model;
  const char* label;
};
constexpr VariantModel kVariantModels[] = {
    {"llama-3.1-70b", "Llama-3.1-70B (full attention)"},
    {"gpt-oss-120b", "gpt-oss-120b (sliding 128)"},
    {"gpt-oss-20b", "gpt-oss-20b (sliding 128)"},
    {"gemma-3-27b", "Gemma-3-27B (sliding 1024)"},
    {"llama-4-scout", "Llama-4-Scout (chunked 8192)"},
    {"llama-4-maverick", "Llama-4-Maverick (chunked 8192)"},
    {"qwen3-next-80b-a3b", "Qwen3-Next-80B-A3B (Gated DeltaNet)"},
    {"kimi-linear-48b-a3b", "Kimi-Linear-48B-A3B (KDA + MLA)"},
    {"minimax-m1", "MiniMax-M1 (lightning)"},
    {"deepseek-v3.2-exp", "DeepSeek-V3.2-Exp (MLA + sparse indexer)"},
};

std::string layer_kinds_text(const ModelSpec& m) {
  if (!m.has_layer_pattern()) return std::to_string(m.num_layers) + " F";
  std::string out;
  for (const auto& [kind, letter] :
       {std::pair{LayerKind::Full, "F"}, std::pair{LayerKind::Sliding, "S"},
        std::pair{LayerKind::Chunked, "C"}, std::pair{LayerKind::Linear, "L"}})
    if (const int n = m.count_layers(kind); n > 0)
      out += (out.empty() ? "" : " + ") + std::to_string(n) + " " + letter;
  return out;
}

// A step of a line, or a faster-link part against its PCIe sibling: κ_HW(to) / κ_HW(from).
struct Pair {
  const char* from;
  const char* to;
};
// Generation steps: each part against its predecessor in the same node class (HGX / DGX on
// PCIe, Grace superchips on C2C, AMD OAM). Rubin appears as VR200 against GB300 (both C2C, two
// GPUs per superchip); Rubin CPX, a GDDR7 prefill accelerator, is not B300's successor: it is
// compared below with the part it sits beside.
constexpr Pair kSteps[] = {{"a100", "h100"},
                           {"h100", "b200"},
                           {"b200", "hgx-b300"},
                           {"gb300", "vr200"},
                           {"mi300x", "mi355x"}};
constexpr Pair kLinkFixes[] = {
    {"hgx-b300", "hgx-b300-gen6"}, {"h100", "gh200"},      {"b200", "gb200"},
    {"hgx-b300", "gb300"},         {"rubin-cpx", "vr200"}, {"hgx-b300", "rubin-cpx"},
    {"mi300x", "mi300a"}};

const GenerationRow* find_row(const std::vector<GenerationRow>& rows, const std::string& s) {
  for (const GenerationRow& r : rows)
    if (r.system == s && r.error.empty()) return &r;
  return nullptr;
}

std::string ratio_text(double x) { return fmt_num(x) + "×"; }

// The KV dtype that goes with a table's compute precision (FP4 compute: NVFP4 KV).
DType kv_dtype_of(const std::string& dtype) {
  return dtype == "fp8" ? DType::Fp8 : dtype == "fp4" ? DType::Nvfp4 : DType::Bf16;
}

}  // namespace

GenerationsKappa generations_kappa(const std::string& dtype) {
  GenerationsKappa g;
  g.dtype = dtype;
  for (const GenColumn& c : kColumns) g.columns.push_back(c.label);
  for (const GenSystem& s : kSystems) {
    GenerationRow row;
    row.system = s.system;
    row.line = s.line;
    try {
      const SystemSpec& sys = preset_system(s.system);
      row.gpu = sys.gpu.name;
      row.link = sys.host_link.name;
      for (const GenColumn& c : kColumns) {
        KappaQuery q;
        q.compute_dtype = dtype;
        q.kv_dtype = kv_dtype_of(dtype);
        q.tp = 1;  // per GPU: TP divides F_pf and B_kv alike unless KV heads replicate (8.7)
        q.unified_kv = c.unified_kv;
        const KappaPoint p = evaluate_presets(c.model, s.system, q);
        row.compute = p.compute;
        row.bandwidth = p.bandwidth;
        row.kappa_hw = p.kappa_hw;
        row.kappa_m.push_back(p.kappa_m);
        row.kappa_crit.push_back(p.kappa_crit);
      }
    } catch (const InputError& e) {
      row.error = e.what();
      row.kappa_m.clear();
      row.kappa_crit.clear();
    }
    g.rows.push_back(std::move(row));
  }
  // Models across attention variants (issue 25): unified against hybrid-aware KV on one part.
  for (const VariantModel& v : kVariantModels) {
    GenerationsKappa::Variant row;
    row.model = v.model;
    row.label = v.label;
    KappaQuery q;
    q.compute_dtype = dtype;
    q.kv_dtype = kv_dtype_of(dtype);
    try {
      const ModelSpec& m = preset_model(v.model);
      row.kinds = layer_kinds_text(m);
      const bool linear = m.count_layers(LayerKind::Linear) > 0;
      const bool sparse = m.attention.sparse();
      try {
        q.unified_kv = true;
        const KappaPoint u = evaluate_presets(v.model, kVariantSystem, q);
        row.b_kv_unified = u.b_kv_gpu;
        row.kappa_crit_unified = u.kappa_crit;
      } catch (const InputError&) {
        row.b_kv_unified = row.kappa_crit_unified = NAN;
        row.unified_note = "a unified cache cannot hold linear-attention state (vLLM ValueError)";
      }
      q.unified_kv = false;
      for (double K : kVariantK) {
        q.context_k = K;
        const KappaPoint h = evaluate_presets(v.model, kVariantSystem, q);
        row.b_kv_hybrid.push_back(h.b_kv_gpu);
        row.kappa_crit_hybrid.push_back(h.kappa_crit);
      }
      q.context_k.reset();
      const KappaPoint inf = evaluate_presets(v.model, kVariantSystem, q);
      row.b_kv_hybrid.push_back(inf.b_kv_gpu);
      row.kappa_crit_hybrid.push_back(inf.kappa_crit);
      if (sparse)
        row.hybrid_note =
            "served by neither (the engine times neither the indexer nor the sparse kernels): "
            "analytic only, MLA and indexer keys keep every token";
      else if (linear)
        row.hybrid_note =
            "conditional on a connector that stores and restores the recurrent state per chunk "
            "(LMCache's multi-process mode with vLLM --mamba-cache-mode align [A]; LMCache's "
            "in-process connector does not, #2845) and on the state in the KV dtype [A]";
      else if (m.has_layer_pattern())
        row.hybrid_note =
            "conditional on a connector declaring hybrid support (vLLM 0.28's "
            "OffloadingConnector; not LMCache 0.3.x, which every stack preset runs)";
      else
        row.hybrid_note = "no variant: both accountings agree";
    } catch (const InputError& e) {
      row.hybrid_note = e.what();
    }
    g.variants.push_back(std::move(row));
  }
  // The window's gain for every sliding-window model, on one part (the ratio is B_kv's).
  for (const char* model : {"gpt-oss-120b", "gpt-oss-20b", "gemma-3-27b"}) {
    try {
      KappaQuery q;
      q.compute_dtype = dtype;
      q.kv_dtype = kv_dtype_of(dtype);
      const double window = evaluate_presets(model, "b200", q).kappa_crit;
      q.unified_kv = true;
      g.window_gain.emplace_back(model, window / evaluate_presets(model, "b200", q).kappa_crit);
    } catch (const InputError&) {
      // a preset that cannot be evaluated at this precision: no gain to state
    }
  }
  return g;
}

double bandwidth_needed(const GenerationRow& row, std::size_t column, double kappa_ratio) {
  // Eq. 6: compute-bound while κ_ratio ≤ κ_crit = κ_M · BW / C, so BW ≥ κ_ratio · C / κ_M.
  if (column >= row.kappa_m.size() || !(row.kappa_m[column] > 0)) return NAN;
  return kappa_ratio * row.compute / row.kappa_m[column];
}

namespace {
// The simulated κ_crit beside the analytic one (sweep studies/generations), and the steps'
// simulated ratios.
// The simulated κ_crit ratio of each generation step per model (NaN where the two parts ran at
// different TP: a step's ratio then mixes the TP change with the part's), keyed "from → to".
using SimSteps = std::map<std::string, std::vector<std::pair<std::string, double>>>;
SimSteps simulated_part(std::ostringstream& md, const SweepData& sim) {
  SimSteps steps;
  const ResultsTable& t = sim.table;
  std::vector<std::vector<std::string>> rows;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const std::string m = t.get(r, "model"), s = t.get(r, "system"), tp = t.get(r, "serving.tp");
    if (!t.ok(r)) {
      rows.push_back({m, s, tp, "—", "—", "—", "—", "—", t.get(r, "error")});
      continue;
    }
    const double sim_k = t.num(r, "kappa_crit_simulated"),
                 peak = t.num(r, "kappa_crit_analytic_peak");
    rows.push_back({m, s, tp, fmt_num(peak),
                    kappa_crit_cell(sim_k, t.num(r, "link_binds_from_start"),
                                    t.num(r, "link_never_binds"), t.num(r, "kappa_max")),
                    std::isfinite(sim_k) ? ratio_text(sim_k / peak) : "—",
                    fmt_num(t.num(r, "h2d_load_bytes_per_s") / 1e9) + " / " +
                        fmt_num(t.num(r, "h2d_peak_bytes_per_s") / 1e9),
                    bound_shares(t, r), ""});
  }
  // Where the simulated κ_crit sits against the analytic one, part by part.
  std::vector<std::string> below;
  std::size_t compared = 0;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const double sim_k = t.num(r, "kappa_crit_simulated"),
                 peak = t.num(r, "kappa_crit_analytic_peak");
    if (!t.ok(r) || !std::isfinite(sim_k) || !(peak > 0)) continue;
    ++compared;
    if (sim_k < peak)
      below.push_back(t.get(r, "system") + " (" + t.get(r, "model") + ", " +
                      ratio_text(sim_k / peak) + ")");
  }
  std::string above_below = "sits above the analytic one on every part";
  if (!below.empty()) {
    above_below = "sits above the analytic one except on ";
    for (std::size_t i = 0; i < below.size(); ++i)
      above_below += (i == 0 ? "" : i + 1 == below.size() ? " and " : ", ") + below[i];
    above_below += " (" + std::to_string(below.size()) + " of " + std::to_string(compared) +
                   " rows; the load bound column says what binds there)";
  }
  md << "Simulated beside analytic (sweep studies/generations: Llama-3.1-8B and -70B in BF16, "
     << "T = 128, TP = every GPU of the node, TP 1 on the PCIe-only parts (one GPU loads alone, "
     << "its uplink unshared, so its H2D may exceed the analytic per-GPU share), the default stack "
     << "lmcache-0.3.5 on its kernel load path; isolated requests, deterministic, no "
     << "replicates). The simulated κ_crit charges the compute each part achieves at T = 128 "
     << "(weight reads and per-forward costs, far below peak) and the rate the whole load path "
     << "achieves, so it " << above_below << ":\n\n"
     << markdown_table({"model", "system", "TP", "κ_crit analytic (peak)", "κ_crit simulated",
                        "simulated / analytic", "H2D GB/s per load time / peak",
                        "load bound (shares of load time)", "note"},
                       rows)
     << "\n";
  const auto find = [&](const std::string& model, const std::string& system) {
    for (std::size_t r = 0; r < t.rows.size(); ++r)
      if (t.ok(r) && t.get(r, "model") == model && t.get(r, "system") == system &&
          std::isfinite(t.num(r, "kappa_crit_simulated")))
        return std::optional<std::size_t>(r);
    return std::optional<std::size_t>();
  };
  for (const char* model : {"llama-3.1-70b", "llama-3.1-8b"}) {
    std::string line;
    for (const Pair& p : kSteps) {
      const auto a = find(model, p.from), b = find(model, p.to);
      if (!a || !b) continue;
      const std::string tp_a = t.get(*a, "serving.tp"), tp_b = t.get(*b, "serving.tp");
      const bool same_tp = tp_a == tp_b;
      const double r = t.num(*b, "kappa_crit_simulated") / t.num(*a, "kappa_crit_simulated");
      steps[std::string(p.from) + " → " + p.to].emplace_back(model, same_tp ? r : NAN);
      line += std::string(line.empty() ? "" : "; ") + p.from + " → " + p.to + " analytic " +
              ratio_text(t.num(*b, "kappa_crit_analytic_peak") /
                         t.num(*a, "kappa_crit_analytic_peak")) +
              ", simulated " +
              (same_tp ? ratio_text(r) : "n/a (TP " + tp_a + " vs TP " + tp_b + ")");
    }
    if (!line.empty()) md << "- " << model << ", κ_crit per step: " << line << ".\n";
  }
  // The link upgrade the load path does not see.
  for (const char* model : {"llama-3.1-70b", "llama-3.1-8b"}) {
    const auto a = find(model, "hgx-b300"), b = find(model, "hgx-b300-gen6");
    if (!a || !b) continue;
    const double peak = t.num(*b, "h2d_peak_bytes_per_s") / t.num(*a, "h2d_peak_bytes_per_s");
    const double got = t.num(*b, "h2d_load_bytes_per_s") / t.num(*a, "h2d_load_bytes_per_s");
    const double tags = t.num(*b, "load_bound_share_read_tags"),
                 inflight = t.num(*b, "load_bound_share_sm_inflight");
    const bool limits =
        (std::isfinite(tags) && tags >= 0.25) || (std::isfinite(inflight) && inflight >= 0.25);
    md << "- PCIe 6 on B300 (" << model << "): the link's peak grows " << ratio_text(peak)
       << ", the achieved load rate " << ratio_text(got) << ", simulated κ_crit "
       << ratio_text(t.num(*b, "kappa_crit_simulated") / t.num(*a, "kappa_crit_simulated")) << "."
       << (got < 0.8 * peak && limits
               ? " Conditional on the outstanding-read limits (the PCIe requester's read tags, "
                 "768 assumed on PCIe 6, and the copy kernel's loads in flight; docs/pcie-model.md "
                 "\"SM reads\", issue 20): on PCIe 6 they, not the link, bound the load (load "
                 "bound column), so the faster link shows only as far as they move with it."
               : "")
       << "\n";
    break;
  }
  md << "\n";
  return steps;
}
// The simulated κ_crit across attention variants (sweep studies/attention-variants): unified
// against hybrid-aware KV, with what binds the load, and the text from those rows.
void variants_simulated(std::ostringstream& md, const SweepData& sim, ConclusionLog* log) {
  const ResultsTable& t = sim.table;
  std::vector<std::vector<std::string>> rows;
  std::map<std::string, std::map<std::string, std::size_t>> at;  // model → kv_cache → row
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const std::string m = t.get(r, "model"), kv = t.get(r, "serving.kv_cache");
    if (!t.ok(r)) {
      rows.push_back({m, kv, "—", "—", "—", "—", "—", t.get(r, "error")});
      continue;
    }
    at[m][kv] = r;
    rows.push_back(
        {m, kv, fmt_num(t.num(r, "kappa_crit_analytic_peak")),
         kappa_crit_cell(t.num(r, "kappa_crit_simulated"), t.num(r, "link_binds_from_start"),
                         t.num(r, "link_never_binds"), t.num(r, "kappa_max")),
         fmt_num(t.num(r, "h2d_load_bytes_per_s") / 1e9),
         fmt_num(t.num(r, "h2d_load_model_bytes_per_s") / 1e9), bound_shares(t, r), ""});
  }
  md << "\nSimulated across attention variants (sweep studies/attention-variants: B200 node, TP 8, "
        "BF16, T = 128, lmcache-0.3.5 on its kernel load path; isolated requests, deterministic, "
        "no replicates; `hybrid` is `serving.kv_cache: hybrid`, conditional on a hybrid-aware "
        "connector; the analytic κ_crit is the engine's accounting: unified, or the full "
        "layers' bytes at K → ∞, at the run's TP 8, where a model with fewer KV heads than "
        "ranks (or an MLA latent) holds its KV on every rank, so it can sit several times below "
        "the per-GPU TP 1 figure of the analytic table above):\n\n"
     << markdown_table({"model", "KV cache", "κ_crit analytic (peak)", "κ_crit simulated",
                        "H2D GB/s per GPU per load time", "model-level GB/s per load time",
                        "load bound (shares of load time)", "note"},
                       rows);
  std::vector<std::string> moved;
  for (const auto& [model, kinds] : at) {
    const auto u = kinds.find("unified"), h = kinds.find("hybrid");
    if (u == kinds.end() || h == kinds.end()) continue;
    const double su = t.num(u->second, "kappa_crit_simulated"),
                 sh = t.num(h->second, "kappa_crit_simulated");
    const double au = t.num(u->second, "kappa_crit_analytic_peak"),
                 ah = t.num(h->second, "kappa_crit_analytic_peak");
    const double soft = t.num(h->second, "load_bound_share_software");
    if (!std::isfinite(su) || !std::isfinite(sh)) continue;
    std::string line =
        model + ": analytic " + ratio_text(ah / au) + ", simulated " + ratio_text(sh / su);
    if (std::isfinite(soft) && soft >= 0.5)
      line += " (the stack's software binds " + fmt_num(100 * soft) + "% of the hybrid load time" +
              (sh / su < 1.1 ? ", so fewer bytes barely shorten it)" : ")");
    moved.push_back(line);
  }
  if (!moved.empty()) {
    md << "\n- Hybrid-aware over unified KV, κ_crit: ";
    for (std::size_t i = 0; i < moved.size(); ++i) md << (i ? "; " : "") << moved[i];
    md << ".\n";
    if (log)
      log->add({"8.8",
                "κ_crit with a hybrid-aware KV connector over the unified cache: " +
                    [&] {
                      std::string s;
                      for (std::size_t i = 0; i < moved.size(); ++i)
                        s += (i ? "; " : "") + moved[i];
                      return s;
                    }(),
                "isolated requests, T = 128, B200 TP 8, BF16",
                "a connector declaring hybrid support (not LMCache 0.3.x); the stack's per-chunk "
                "software (lmcache-0.3.5's costs)",
                "kernel path"});
  }
  md << "\n";
}
}  // namespace

std::string section_generations(const GenerationsKappa& bf16, const GenerationsKappa& fp8,
                                const GenerationsKappa& fp4, const SweepData* sim,
                                const std::map<std::string, double>& workload_medians,
                                ConclusionLog* log, const SweepData* variants_sim) {
  std::ostringstream md;
  md << "### 8.8 κ across generations (issue 25)\n\n"
     << "Regime: the analytic model (Eq. 6) per GPU at TP 1, peak dense compute of the precision "
     << "and the host link's peak per GPU and direction (its share where GPUs share an uplink or "
     << "a C2C port), F_pf = 2·N_active, no attention FLOPs and no software costs. It is not a "
     << "bound either way: κ_crit goes as BW / C, and a part's achieved compute and link rates "
     << "fall below their peaks by different fractions. On LMCache's kernel path the simulated "
     << "κ_crit of 8.1 (A100, H100, B200 classes) sits above it (a 128-token step's achieved "
     << "compute falls further below its peak than the achieved link rate); on the layer-wise "
     << "path it sits below it (the stack's per-(layer, chunk) software binds); the simulated "
     << "rows further down say which, part by part. TP divides F_pf and B_kv alike, so these "
        "per-GPU figures hold at any TP "
     << "where KV heads do not replicate (8.7 has the node-level layouts). gpt-oss-120b is shown "
     << "twice: with its sliding layers keeping only their window (what the architecture leaves, "
     << "K → ∞) and on the unified KV cache today's stacks run, which keeps every layer's tokens "
     << "(docs/accounting.md, \"What a serving stack keeps and moves\").\n\n";

  const auto kappa_table = [&](const GenerationsKappa& g) {
    std::vector<std::string> header = {
        "system", "GPU", "host link", "C (FLOP/s)", "BW per GPU (GB/s)", "κ_HW"};
    for (const std::string& c : g.columns) header.push_back("κ_crit " + c);
    std::vector<std::vector<std::string>> rows;
    for (const GenerationRow& r : g.rows) {
      if (!r.error.empty()) {
        std::vector<std::string> row = {r.system, "—", "—", "—", "—", "—"};
        for (std::size_t i = 0; i + 1 < g.columns.size(); ++i) row.push_back("—");
        row.push_back(r.error);
        rows.push_back(row);
        continue;
      }
      std::vector<std::string> row = {r.system,
                                      r.gpu,
                                      r.link,
                                      fmt_num(r.compute / 1e12) + " T",
                                      fmt_num(r.bandwidth / 1e9),
                                      fmt_num(r.kappa_hw)};
      for (double k : r.kappa_crit) row.push_back(fmt_num(k));
      rows.push_back(row);
    }
    return markdown_table(header, rows);
  };
  md << "BF16 compute, BF16 KV:\n\n" << kappa_table(bf16) << "\n";
  md << "FP8 compute, FP8 KV (a GPU without an FP8 peak says so):\n\n" << kappa_table(fp8) << "\n";
  md << "FP4 compute, NVFP4 KV (0.5625 B per element with its scales; only the parts that write "
        "FP4):\n\n"
     << kappa_table(fp4) << "\n";

  // The host-link bandwidth per GPU that keeps each workload's median request compute-bound.
  if (!workload_medians.empty()) {
    std::vector<std::string> header = {"system", "BW per GPU has (GB/s)"};
    std::vector<std::size_t> cols = {0, 1};  // Llama-3.1-70B, Qwen3-235B-A22B
    for (const auto& [w, med] : workload_medians)
      for (std::size_t c : cols)
        header.push_back(bf16.columns[c] + " at the " + w + " median (κ " + fmt_num(med) +
                         "), GB/s");
    std::vector<std::vector<std::string>> rows;
    for (const GenerationRow& r : bf16.rows) {
      if (!r.error.empty()) continue;
      std::vector<std::string> row = {r.system, fmt_num(r.bandwidth / 1e9)};
      for (const auto& [w, med] : workload_medians)
        for (std::size_t c : cols) {
          const double need = bandwidth_needed(r, c, med);
          row.push_back(fmt_num(need / 1e9) + (need <= r.bandwidth ? " (has it)" : ""));
        }
      rows.push_back(row);
    }
    md << "Host-link bandwidth per GPU each part would need to keep the median request of each "
       << "workload compute-bound (BF16; BW = κ_ratio · C / κ_M, the `kappasim solve` question "
       << "in closed form), against what it has:\n\n"
       << markdown_table(header, rows) << "\n";
  }

  SimSteps sim_steps;
  if (sim) sim_steps = simulated_part(md, *sim);

  // Where the claim holds and where it breaks, from the BF16 rows.
  md << "Where the paper's claim holds and where it breaks (BF16 κ_HW = BW / C, ratios of "
        "consecutive parts):\n\n";
  std::string steps;
  for (const Pair& p : kSteps) {
    const GenerationRow* a = find_row(bf16.rows, p.from);
    const GenerationRow* b = find_row(bf16.rows, p.to);
    if (!a || !b) continue;
    const double r = b->kappa_hw / a->kappa_hw;
    steps += std::string(steps.empty() ? "" : "; ") + p.from + " → " + p.to + " " + ratio_text(r) +
             (r < 0.99   ? " (holds)"
              : r > 1.01 ? " (breaks)"
                         : " (flat)");
    // The simulated κ_crit of the same step (kernel path, T = 128), and whether it turns the
    // other way: the achieved compute and load rates, not the peaks, set it.
    if (const auto it = sim_steps.find(std::string(p.from) + " → " + p.to); it != sim_steps.end()) {
      std::string sims;
      bool reverses = false;
      for (const auto& [model, x] : it->second) {
        sims += std::string(sims.empty() ? "" : ", ") + model + " " +
                (std::isfinite(x) ? ratio_text(x) : std::string("n/a (TP differs)"));
        if (std::isfinite(x) && ((r < 0.99 && x > 1.01) || (r > 1.01 && x < 0.99))) reverses = true;
      }
      steps += " [simulated " + sims + (reverses ? ": reverses" : "") + "]";
    }
    md << "- " << p.from << " → " << p.to << ": compute " << ratio_text(b->compute / a->compute)
       << ", link " << ratio_text(b->bandwidth / a->bandwidth) << ", κ_HW " << ratio_text(r)
       << (r < 0.99   ? ": **holds** (compute outgrew the link)"
           : r > 1.01 ? ": **breaks** (the link grew faster than compute)"
                      : ": flat")
       << ".\n";
  }
  if (log && !steps.empty())
    log->add(
        {"8.8",
         "The paper's claim that κ_HW falls generation over generation, BF16 κ_HW ratio: " + steps,
         "analytic per GPU at TP 1, peak compute and peak link per GPU (not a bound either "
         "way); in brackets the simulated κ_crit of the same step (LMCache's kernel path, T = "
         "128, the node's TP), which turns the other way where a part's achieved compute at "
         "T = 128 did not grow with its peak",
         "datasheet peaks; the link share per GPU where GPUs share an uplink (each preset's "
         "tags)",
         "analytic (no stack software); the simulated rows of 8.8 give each part's achieved "
         "κ_crit"});
  for (const Pair& p : kLinkFixes) {
    const GenerationRow* a = find_row(bf16.rows, p.from);
    const GenerationRow* b = find_row(bf16.rows, p.to);
    if (!a || !b) continue;
    md << "- " << p.to << " against " << p.from << " (" << b->link << " vs " << a->link
       << "): κ_HW " << ratio_text(b->kappa_hw / a->kappa_hw) << ".\n";
  }
  // A lower precision against BF16 on the same part: C grows, B_kv shrinks.
  const auto precision_line = [&](const GenerationsKappa& low, const std::string& what,
                                  const std::string& why) {
    std::vector<std::string> moved;
    for (const GenerationRow& a : bf16.rows) {
      const GenerationRow* b = find_row(low.rows, a.system);
      if (!b || !a.error.empty() || a.kappa_crit.empty() || b->kappa_crit.empty()) continue;
      moved.push_back(a.system + " " + ratio_text(b->kappa_crit[0] / a.kappa_crit[0]));
    }
    if (moved.empty()) return;
    md << "- " << what << " against BF16 (" << bf16.columns[0] << " κ_crit): ";
    for (std::size_t i = 0; i < moved.size(); ++i) md << (i ? ", " : "") << moved[i];
    md << ". " << why << "\n";
  };
  precision_line(fp8, "FP8 compute with FP8 KV",
                 "Halving B_kv doubles κ_M and doubling C halves κ_HW, so κ_crit moves only as far "
                 "as a part's FP8 peak is not twice its BF16 one.");
  precision_line(fp4, "FP4 compute with NVFP4 KV",
                 "κ moves both ways: B_kv falls to 0.5625 / 2 of BF16's (κ_M × 3.56) while C "
                 "rises by the part's FP4 / BF16 peak ratio, so κ_crit falls wherever that ratio "
                 "exceeds 3.56 (the C column above against the BF16 table's): on those parts FP4 "
                 "widens the link-bound region.");
  if (!bf16.window_gain.empty()) {
    md << "- Sliding-window attention: the window leaves ";
    for (std::size_t i = 0; i < bf16.window_gain.size(); ++i)
      md << (i ? ", " : "") << bf16.window_gain[i].first << " "
         << ratio_text(bf16.window_gain[i].second);
    md << " the κ_crit of the unified cache the modelled stacks run (the B_kv ratio, the same on "
          "every part); today's connectors move every layer's tokens, so the window helps "
          "compute, not the link. Conditional on the connector: a hybrid-aware one (vLLM 0.28's "
          "OffloadingConnector) would load the window only.\n";
  }
  // Models across attention variants (issue 25): the unified cache against a hybrid-aware one.
  if (!bf16.variants.empty()) {
    const std::string k0 = fmt_num(kVariantK[0]), k1 = fmt_num(kVariantK[1]);
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> gains;
    for (const GenerationsKappa::Variant& v : bf16.variants) {
      if (v.b_kv_hybrid.size() != std::size(kVariantK) + 1) {
        rows.push_back({v.label, "—", "—", "—", "—", "—", "—", "—", "—", "—", v.hybrid_note});
        continue;
      }
      const bool u = std::isfinite(v.kappa_crit_unified);
      const double gain = u ? v.kappa_crit_hybrid[1] / v.kappa_crit_unified : NAN;
      if (u && gain > 1.01) gains.push_back(v.model + " " + ratio_text(gain));
      rows.push_back(
          {v.label, v.kinds, u ? fmt_num(v.b_kv_unified) : "—", fmt_num(v.b_kv_hybrid[0]),
           fmt_num(v.b_kv_hybrid[1]), u ? fmt_num(v.kappa_crit_unified) : "—",
           fmt_num(v.kappa_crit_hybrid[0]), fmt_num(v.kappa_crit_hybrid[1]),
           fmt_num(v.kappa_crit_hybrid[2]), u ? ratio_text(gain) : "—",
           v.unified_note.empty() ? v.hybrid_note
                                  : "unified: " + v.unified_note + "; hybrid: " + v.hybrid_note});
    }
    md << "\nModels across attention variants (issue 25; BF16 compute and KV on " << kVariantSystem
       << ", per GPU at TP 1, the analytic regime above: peak compute, peak link, no attention "
          "FLOPs). B_kv is the KV bytes a cached token moves: on the unified cache today's "
          "stacks run (every attention layer keeps every token; docs/accounting.md) and with a "
          "hybrid-aware connector (`serving.kv_cache: hybrid`: sliding layers their window, "
          "chunked layers K mod C, linear layers one state per request, so B_kv = KV(K) / K "
          "depends on K; K → ∞ is the full layers' bytes alone). F full, S sliding, C chunked, "
          "L linear layers:\n\n"
       << markdown_table({"model", "layers", "B_kv unified (B/token)", "B_kv hybrid K = " + k0,
                          "B_kv hybrid K = " + k1, "κ_crit unified", "κ_crit hybrid K = " + k0,
                          "κ_crit hybrid K = " + k1, "κ_crit hybrid K → ∞",
                          "hybrid / unified at K = " + k1, "hinges on"},
                         rows);
    if (!gains.empty()) {
      md << "\n- A hybrid-aware connector raises κ_crit at K = " << k1 << " by ";
      for (std::size_t i = 0; i < gains.size(); ++i) md << (i ? ", " : "") << gains[i];
      md << " (the B_kv ratio, the same on every part), conditional on such a connector: the "
            "stack presets run LMCache 0.3.x, which turns vLLM's hybrid KV cache manager off. "
            "The models without a unified value are not served with offloading on those "
            "stacks (the engine refuses them unless serving.kv_cache is hybrid).\n";
    }
    const GenerationsKappa::Variant* top = nullptr;
    for (const GenerationsKappa::Variant& v : bf16.variants)
      if (v.kappa_crit_hybrid.size() > 1 &&
          (!top || v.kappa_crit_hybrid[1] > top->kappa_crit_hybrid[1]))
        top = &v;
    if (top)
      md << "- Highest κ_crit at K = " << k1 << " with a hybrid-aware connector: " << top->model
         << " (" << fmt_num(top->kappa_crit_hybrid[1]) << ", B_kv " << fmt_num(top->b_kv_hybrid[1])
         << " B per token): " << top->hybrid_note << ".\n";
  }
  if (variants_sim) variants_simulated(md, *variants_sim, log);
  md << "\nAssumptions these rows hinge on: peak compute and peak link (Eq. 6 at the peaks; "
     << "the achieved fractions differ by part); the per-GPU split of a shared C2C port (GB200, "
     << "GB300, VR200: an even split, not published) and of a shared PCIe uplink (DGX A100, "
     << "L40S and RTX PRO servers); announced, not measured, figures for VR200, Rubin CPX and "
     << "MI355X's host link (presets/README.md, each preset's tags). A verdict above that turns "
     << "on a ratio within 10% of 1 is conditional on those figures.\n\n";
  return md.str();
}

}  // namespace kappasim::report
