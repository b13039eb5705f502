// Section 8.9 of the reproduce report: prefill/decode disaggregation under KV offloading. Four
// DGX H100 nodes co-located or split into prefill and decode pools (1P3D, 2P2D, 3P1D), chat and
// document QA, two models, the hand-off's descriptor posting cost at its measured value and at 0;
// on both of the studies' baselines; and, on the kernel path, one model and workload under each
// transfer-engine profile (cluster.handoff). Input: sweeps studies/pd-disagg, studies/pd-disagg-
// layerwise, studies/pd-disagg-handoff, studies/pd-disagg-node (one node over NVLink) and
// studies/pd-decode-tier (a decode node's own KV tier). Output:
// Markdown (docs/disaggregation.md explains the mechanism).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <sstream>

#include "core/table.hpp"
#include "core/units.hpp"
#include "report/format.hpp"
#include "report/replicates.hpp"
#include "report/sections.hpp"
#include "report/serving_tables.hpp"

namespace kappasim::report {

namespace {

const std::vector<std::string> kConfigCols = {"model", "workload", "a_role", "a_nodes", "post"};

// "2P2D": the node groups' counts (a_nodes prefill, b_nodes decode; a study without a b_nodes
// column has four nodes in all), "co-located (4 mixed)" for mixed groups.
std::string split_name(const ResultsTable& t, std::size_t r) {
  const int p = static_cast<int>(std::lround(t.num(r, "a_nodes")));
  const int d = t.has("b_nodes") ? static_cast<int>(std::lround(t.num(r, "b_nodes"))) : 4 - p;
  if (t.get(r, "a_role") == "mixed") return "co-located (" + std::to_string(p + d) + " mixed)";
  return std::to_string(p) + "P" + std::to_string(d) + "D";
}

// The hand-off's share of the median TTFT: handoff_p50_s / ttft_p50_s (replicate means).
double handoff_share_of(const ResultsTable& t, const std::vector<std::size_t>& rows) {
  const double h = mean_of(t, rows, "handoff_p50_s"), f = mean_of(t, rows, "ttft_p50_s");
  return std::isfinite(h) && f > 0 ? h / f : NAN;
}
std::string handoff_share(const ResultsTable& t, const std::vector<std::size_t>& rows) {
  const double x = handoff_share_of(t, rows);
  return std::isfinite(x) ? pct(x) : "—";
}

// Goodput at the study's SLOs (serving.slo on every node: goodput_rps, slo_attainment): "2.3 ±
// 0.1 (n=2); 99%"; "—" for a study without SLOs.
std::string goodput_cell(const ResultsTable& t, const std::vector<std::size_t>& rows) {
  if (!t.has("goodput_rps") || !std::isfinite(mean_of(t, rows, "goodput_rps"))) return "—";
  return interval_cell(t, rows, "goodput_rps") + "; " + pct(mean_of(t, rows, "slo_attainment"));
}

// Whether every row's SLOs (the study's slo_ttft / slo_tpot labels) are the MLPerf Inference
// latency limits (mlcommons/inference loadgen/mlperf.conf) the report's sentence names for its
// workload: llama2-70b-interactive's TTFT 450 ms / TPOT 40 ms for chat (sharegpt),
// llama3_1-405b's Server 6 s / 175 ms for document QA (narrativeqa, docfinqa). Only then does
// the report name MLPerf as their source.
bool slos_are_mlperf(const ResultsTable& t, const std::vector<std::vector<std::size_t>>& configs) {
  if (!t.has("slo_ttft") || !t.has("slo_tpot") || !t.has("workload")) return false;
  const auto near = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * b; };
  for (const auto& cr : configs) {
    const std::string w = t.get(cr[0], "workload");
    const bool chat = w == "sharegpt", qa = w == "narrativeqa" || w == "docfinqa";
    if (!chat && !qa) return false;
    double ttft = NAN, tpot = NAN;
    try {
      ttft = parse_quantity_as(t.get(cr[0], "slo_ttft"), dim::time);
      tpot = parse_quantity_as(t.get(cr[0], "slo_tpot"), dim::time);
    } catch (const std::exception&) {
      return false;
    }
    if (!(chat ? near(ttft, 0.450) && near(tpot, 0.040) : near(ttft, 6.0) && near(tpot, 0.175)))
      return false;
  }
  return true;
}

// The SLOs each workload's rows were held to (the study's slo_ttft / slo_tpot labels).
std::string slo_sentence(const ResultsTable& t,
                         const std::vector<std::vector<std::size_t>>& configs) {
  if (!t.has("slo_ttft") || !t.has("slo_tpot")) return "";
  std::vector<std::string> seen;
  for (const auto& cr : configs) {
    const std::size_t r = cr[0];
    const std::string s = t.get(r, "workload") + " TTFT ≤ " + t.get(r, "slo_ttft") +
                          " and TPOT ≤ " + t.get(r, "slo_tpot");
    if (std::find(seen.begin(), seen.end(), s) == seen.end()) seen.push_back(s);
  }
  std::string out =
      "Goodput counts the requests per simulated second whose own TTFT and TPOT "
      "both met their workload's SLOs (";
  for (std::size_t i = 0; i < seen.size(); ++i) out += (i ? "; " : "") + seen[i];
  if (!slos_are_mlperf(t, configs))
    return out +
           "; the study's own limits, not a published set [A], taken per request as "
           "DistServe's goodput does); the share after it is the SLO attainment.\n\n";
  return out +
         "; MLPerf Inference's latency limits, loadgen/mlperf.conf: llama2-70b-interactive for "
         "chat, llama3_1-405b's long-context Server limits for document QA, taken per request as "
         "DistServe's goodput does, where MLPerf applies them at the run's 99th percentile [A]); "
         "the share after it is the SLO attainment.\n\n";
}

// Goodput at the SLOs per model and posting cost: for each workload (by its mean κ_ratio), the
// P/D split that keeps the most goodput against the co-located pool's, and whether the prefill
// pool that split gives shrinks or grows as κ_ratio grows (issue 23: how the P:D ratio must change
// under offloading).
std::string goodput_part(const SweepData& study,
                         const std::vector<std::vector<std::size_t>>& configs,
                         const std::string& baseline, ConclusionLog* log) {
  const ResultsTable& t = study.table;
  if (!t.has("goodput_rps") || !t.has("kappa_ratio_mean")) return "";
  std::ostringstream md;
  md << "\nGoodput at the SLOs (computed; " << kReplicateNote
     << "), per model and posting cost: by workload, in order of its mean κ_ratio, the P/D split "
     << "with the most goodput against the co-located pool's:\n";
  std::vector<std::pair<std::string, std::string>> groups;  // (model, post)
  for (const auto& cr : configs) {
    const std::size_t r = cr[0];
    if (t.get(r, "a_role") == "mixed") continue;
    const std::pair<std::string, std::string> g{t.get(r, "model"), t.get(r, "post")};
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
  }
  for (const auto& [model, post] : groups) {
    struct Wl {
      std::string name;
      double kappa = NAN;
      std::vector<std::size_t> colo, best;
      std::vector<std::vector<std::size_t>> splits;
      double best_goodput = -1;
      int p_min = 0, p_max = 0;  // the prefill pools of the splits tied with the best
      std::string tied;          // their names
    };
    std::vector<Wl> wls;
    for (const auto& cr : configs) {
      const std::size_t r = cr[0];
      if (t.get(r, "model") != model || !first_ok(t, cr)) continue;
      const bool mixed = t.get(r, "a_role") == "mixed";
      if (!mixed && t.get(r, "post") != post) continue;
      const std::string w = t.get(r, "workload");
      auto it = std::find_if(wls.begin(), wls.end(), [&](const Wl& x) { return x.name == w; });
      if (it == wls.end()) {
        Wl fresh;
        fresh.name = w;
        it = wls.insert(wls.end(), fresh);
      }
      if (mixed) {
        if (it->colo.empty()) it->colo = cr;
        continue;
      }
      it->splits.push_back(cr);
      const double g = mean_of(t, cr, "goodput_rps");
      if (std::isfinite(g) && g > it->best_goodput) {
        it->best_goodput = g;
        it->best = cr;
        it->kappa = mean_of(t, cr, "kappa_ratio_mean");
      }
    }
    wls.erase(std::remove_if(wls.begin(), wls.end(),
                             [](const Wl& w) { return w.colo.empty() || w.best.empty(); }),
              wls.end());
    if (wls.empty()) continue;
    // Tied with the best: not below it by the paired test, or within 1% of its goodput (a
    // difference no deployment would size pools by).
    for (Wl& w : wls) {
      w.p_min = 1 << 20;
      for (const auto& cr : w.splits) {
        const double g = mean_of(t, cr, "goodput_rps");
        const stats::Interval d = paired(t, w.best, cr, "goodput_rps");
        const bool below = std::isfinite(g) && d.n >= 2 && stats::interval_sign(d) > 0 &&
                           w.best_goodput - g > 0.01 * w.best_goodput;
        if (!std::isfinite(g) || below) continue;
        const int p = static_cast<int>(std::lround(t.num(cr[0], "a_nodes")));
        w.p_min = std::min(w.p_min, p);
        w.p_max = std::max(w.p_max, p);
        w.tied += (w.tied.empty() ? "" : ", ") + split_name(t, cr[0]);
      }
    }
    std::stable_sort(wls.begin(), wls.end(),
                     [](const Wl& a, const Wl& b) { return a.kappa < b.kappa; });
    std::ostringstream line;
    line << model << " at " << post << " per descriptor:";
    for (const Wl& w : wls) {
      line << " " << w.name << " (κ_ratio " << fmt_num(w.kappa) << "): the most goodput of the "
           << "splits, " << goodput_cell(t, w.best) << " of SLOs met, with "
           << split_name(t, w.best[0]) << " (tied with it: " << w.tied
           << "), against the co-located pool's " << goodput_cell(t, w.colo) << " ("
           << versus(t, w.best, w.colo, "goodput_rps", "co-located", "req/s") << ");";
    }
    // How the goodput-best prefill pool moves from the lowest to the highest κ_ratio: only when
    // the tied sets do not overlap.
    if (wls.size() > 1) {
      const Wl &lo = wls.front(), &hi = wls.back();
      line << " from κ_ratio " << fmt_num(lo.kappa) << " to " << fmt_num(hi.kappa) << " the "
           << "goodput-best prefill pool "
           << (hi.p_max < lo.p_min   ? "shrinks"
               : hi.p_min > lo.p_max ? "grows"
                                     : "does not move by more than the replicates resolve")
           << " (" << lo.tied << " → " << hi.tied << ")";
    }
    std::string claim = line.str();
    if (claim.back() == ';') claim.pop_back();
    md << "- " << claim << "\n";
    if (log) {
      std::vector<std::vector<std::size_t>> group_configs;
      for (const auto& cr : configs)
        if (t.get(cr[0], "model") == model &&
            (t.get(cr[0], "a_role") == "mixed" || t.get(cr[0], "post") == post))
          group_configs.push_back(cr);
      log->add({"8.9", claim, regime_brief(study, group_configs),
                std::string(slos_are_mlperf(t, configs)
                                ? "the SLOs (MLPerf's p99 limits taken per request [A]); "
                                : "the SLOs (the study's own limits [A]); ") +
                    "the offered rate (below "
                    "what the co-located pool serves [A]: a pool split that holds the SLOs at this "
                    "rate may not at a higher one); the hand-off's posting cost on the decode node "
                    "(3.75 µs, vLLM #50913); the network between the nodes not modelled",
                baseline});
    }
  }
  return md.str();
}

std::string part(const SweepData& study, const std::string& baseline, ConclusionLog* log) {
  const ResultsTable& t = study.table;
  std::ostringstream md;
  // The co-located pool posts no descriptors: its runs repeat under every posting cost, and
  // count once (in the table and the regime).
  std::vector<std::vector<std::size_t>> configs;
  for (const auto& cr : configurations(t, kConfigCols))
    if (configs.empty() || t.get(cr[0], "a_role") != "mixed" ||
        t.get(cr[0], "post") == t.get(configs.front()[0], "post"))
      configs.push_back(cr);
  std::vector<std::vector<std::string>> rows;
  for (const auto& cr : configs) {
    const std::size_t r = cr[0];
    const bool pd = t.get(r, "a_role") != "mixed";
    if (!first_ok(t, cr)) {
      rows.push_back({t.get(r, "model"), t.get(r, "workload"), split_name(t, r), t.get(r, "post"),
                      "failed: " + t.get(r, "error")});
      continue;
    }
    rows.push_back({t.get(r, "model"), t.get(r, "workload"), split_name(t, r),
                    pd ? t.get(r, "post") : "—", interval_cell(t, cr, "throughput_rps"),
                    goodput_cell(t, cr), interval_cell(t, cr, "ttft_p50_s"),
                    interval_cell(t, cr, "ttft_p99_s"), interval_cell(t, cr, "tpot_p50_s"),
                    pd ? interval_cell(t, cr, "handoff_p50_s") : "—",
                    pd ? handoff_share(t, cr) : "—",
                    fmt_num(mean_of(t, cr, "a.gpu_utilization")) + " / " +
                        fmt_num(mean_of(t, cr, "b.gpu_utilization"))});
  }
  md << "**Baseline: " << baseline << ".** " << regime_paragraph(study, configs)
     << slo_sentence(t, configs)
     << markdown_table({"model", "workload", "pools", "post per descriptor", "throughput (req/s)",
                        "goodput (req/s; SLOs met)", "TTFT p50 (s)", "TTFT p99 (s)", "TPOT p50 (s)",
                        "hand-off p50 (s)", "hand-off / TTFT p50", "GPU utilisation a / b"},
                       rows)
     << "\nConclusions (computed; " << kReplicateNote << "), per model and workload: the P/D "
     << "split with the lowest TTFT p99 against the co-located pool, at the measured posting cost "
     << "and with none (strided descriptors), and TPOT p50 against the co-located pool's:\n";
  // Per (model, workload): the co-located rows, and per posting cost the best split's.
  std::vector<std::pair<std::string, std::string>> groups;
  for (const auto& cr : configs) {
    const std::pair<std::string, std::string> g{t.get(cr[0], "model"), t.get(cr[0], "workload")};
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
  }
  for (const auto& [model, workload] : groups) {
    std::vector<std::size_t> colo;
    std::map<std::string, std::pair<double, std::vector<std::size_t>>> best;  // post -> best split
    std::vector<std::string> posts;
    for (const auto& cr : configs) {
      const std::size_t r = cr[0];
      if (t.get(r, "model") != model || t.get(r, "workload") != workload || !first_ok(t, cr))
        continue;
      if (t.get(r, "a_role") == "mixed") {
        if (colo.empty()) colo = cr;
        continue;
      }
      const std::string post = t.get(r, "post");
      const double p99 = mean_of(t, cr, "ttft_p99_s");
      if (!best.count(post)) posts.push_back(post);
      if (!best.count(post) || p99 < best[post].first) best[post] = {p99, cr};
    }
    if (colo.empty() || posts.empty()) continue;
    std::vector<std::string> verdicts;
    std::ostringstream line;
    line << model << ", " << workload << ":";
    bool worse_any = false, better_any = false;
    for (const std::string& post : posts) {
      const auto& b = best[post].second;
      const double ratio = best[post].first / mean_of(t, colo, "ttft_p99_s");
      (ratio > 1 ? worse_any : better_any) = true;
      line << " at " << post << " per descriptor " << split_name(t, b[0]) << " has TTFT p99 "
           << interval_cell(t, b, "ttft_p99_s") << " s, " << fmt_num(ratio) << "× the co-located "
           << interval_cell(t, colo, "ttft_p99_s") << " s ("
           << versus(t, b, colo, "ttft_p99_s", "co-located", "s") << "), hand-off "
           << handoff_share(t, b) << " of its TTFT p50, TPOT p50 "
           << interval_cell(t, b, "tpot_p50_s") << " s against "
           << interval_cell(t, colo, "tpot_p50_s") << " s;";
    }
    std::string claim = line.str();
    claim.pop_back();
    md << "- " << claim << "\n";
    if (log) {
      std::vector<std::vector<std::size_t>> group_configs;
      for (const auto& cr : configs)
        if (t.get(cr[0], "model") == model && t.get(cr[0], "workload") == workload)
          group_configs.push_back(cr);
      const bool flips = worse_any && better_any;
      log->add({"8.9", claim, regime_brief(study, group_configs),
                std::string(flips ? "conditional on " : "") +
                    "the hand-off's descriptor posting cost (3.75 µs measured by vLLM #50913; 0 "
                    "with NIXL 1.5's strided descriptors); the decode node recomputing the last "
                    "prompt token (vLLM NixlConnector); the network between the nodes not modelled",
                baseline});
    }
  }
  md << goodput_part(study, configs, baseline, log) << "\n";
  return md.str();
}

// ---- the transfer-engine profiles (studies/pd-disagg-handoff) ----

// A profile's column label: "nixl-vllm", or "profile/variant" for the profile with one of its
// assumptions at the other end of its plausible range.
std::string base_profile(const std::string& label) { return label.substr(0, label.find('/')); }
std::string variant_of(const std::string& label) {
  const auto at = label.find('/');
  return at == std::string::npos ? "" : label.substr(at + 1);
}

// What each profile's verdict hinges on (its preset's assumptions: presets/transfer-engines/),
// and what its variants set.
struct ProfileNote {
  const char* what;       // how the engine moves the KV, in a few words
  const char* hinges_on;  // the assumption the verdict depends on
};
ProfileNote profile_note(const std::string& profile) {
  if (profile == "nixl-vllm")
    return {"one READ descriptor per layer, block and K/V",
            "the descriptor count and its posting cost (one descriptor per layer, block and K/V "
            "at 3.75 µs each, measured by vLLM #50913; NIXL 1.5's strided descriptors, not "
            "merged in vLLM, would make it one per layer)"};
  if (profile == "mooncake-te")
    return {"one 64 KiB slice per work request of each layer's and K/V's contiguous run",
            "a request's blocks being one contiguous run in both pools (the profile's "
            "assumption: a fresh pool; one run per block gives as many work requests as "
            "nixl-vllm's descriptors); the 3.40 µs per slice fitted to Mooncake's published "
            "transfer times (H800, 200 Gb/s RoCE)"};
  if (profile == "lmcache-pd")
    return {"one WRITE descriptor per 256-token chunk",
            "its fixed cost per transfer, 0.40 ms assumed (no LMCache P/D figure is published; "
            "its preset names 0.1-1 ms); the P/D buffer's gather and scatter copies not modelled"};
  if (profile == "p2p-nccl")
    return {"each layer's KV pushed during the prefill, one NCCL send per layer",
            "its fixed cost per layer's send, 0.05 ms assumed (the ZMQ PUT round trip; no "
            "P2pNccl figure is published; its preset names 0.02-0.2 ms); the prefill step's wait "
            "for its send queue and the receive buffer's size not modelled"};
  return {"its preset's figures", "its preset's figures (presets/transfer-engines/)"};
}
std::string variant_text(const std::string& v) {
  if (v == "one-run-per-block") return "one run per block (a fragmented pool)";
  if (v == "fixed-1ms") return "a fixed cost of 1 ms";
  if (v == "strided") return "strided descriptors (no posting cost)";
  if (v == "fixed-0.2ms") return "a fixed cost of 0.2 ms per layer's send";
  return v;
}

std::string handoff_part(const SweepData& study, ConclusionLog* log) {
  const ResultsTable& t = study.table;
  std::ostringstream md;
  // The profiles' rows are the first model's (its pools lay out the KV alike); the rows of any
  // other model (pools of different layouts: the re-shard) go to layouts_part.
  std::vector<std::string> key = {"a_role", "a_nodes", "handoff"};
  for (const char* c : {"model", "a_layout", "b_layout"})
    if (t.has(c)) key.push_back(c);
  std::vector<std::vector<std::size_t>> configs;
  for (const auto& cr : configurations(t, key))
    if (!t.has("model") || t.get(cr[0], "model") == t.get(0, "model")) configs.push_back(cr);
  std::string model, workload;
  if (!t.rows.empty() && t.has("point") && !study.dir.empty()) {
    const std::string dir = point_dir(study.dir, t, 0);
    model = point_config_text(dir, "model");
    workload = point_config_text(dir, "workload.type");
  }
  const std::string subject =
      model.empty() ? "" : model + (workload.empty() ? "" : ", " + workload) + ", ";
  md << "#### Transfer-engine profiles\n\n"
     << "The same four nodes on the kernel path"
     << (subject.empty() ? "" : " (" + subject.substr(0, subject.size() - 2) + ")")
     << ", with the hand-off's software as each transfer-engine profile (`cluster.handoff`, "
     << "docs/disaggregation.md): nixl-vllm (vLLM's NixlConnector, the rows above), mooncake-te "
     << "(vLLM's MooncakeConnector over the Mooncake Transfer Engine), lmcache-pd (LMCache's "
     << "P/D backend over NIXL), which move the whole prompt after the prefill, and p2p-nccl "
     << "(vLLM's P2pNcclConnector, which sends each layer as its prefill compute ends).";
  std::vector<std::string> variants;  // "profile with <variant_text>", in order
  for (const auto& cr : configs) {
    const std::string label = t.get(cr[0], "handoff");
    const std::string v = t.get(cr[0], "a_role") == "mixed" ? "" : variant_of(label);
    const std::string text = base_profile(label) + " with " + variant_text(v);
    if (!v.empty() && std::find(variants.begin(), variants.end(), text) == variants.end())
      variants.push_back(text);
  }
  if (!variants.empty()) {
    md << " A row `profile/variant` is that profile with one assumption set to the other end of "
       << "its plausible range:";
    for (std::size_t i = 0; i < variants.size(); ++i)
      md << (i == 0 ? " " : i + 1 == variants.size() ? " and " : ", ") << variants[i];
    md << ".";
  }
  md << "\n\n" << regime_paragraph(study, configs);
  std::vector<std::vector<std::string>> rows;
  for (const auto& cr : configs) {
    const std::size_t r = cr[0];
    const bool pd = t.get(r, "a_role") != "mixed";
    if (!first_ok(t, cr)) {
      rows.push_back(
          {split_name(t, r), pd ? t.get(r, "handoff") : "—", "failed: " + t.get(r, "error")});
      continue;
    }
    rows.push_back({split_name(t, r), pd ? t.get(r, "handoff") : "—",
                    interval_cell(t, cr, "first_token_rps"), interval_cell(t, cr, "ttft_p50_s"),
                    interval_cell(t, cr, "ttft_p99_s"),
                    pd ? interval_cell(t, cr, "handoff_p50_s") : "—",
                    pd ? interval_cell(t, cr, "handoff_transfer_mean_s") : "—",
                    pd ? handoff_share(t, cr) : "—"});
  }
  md << markdown_table({"pools", "transfer engine", "first tokens (req/s)", "TTFT p50 (s)",
                        "TTFT p99 (s)", "hand-off p50 (s)", "pull mean (s)", "hand-off / TTFT p50"},
                       rows);
  // Two profiles whose runs came out identical (every replicate's TTFT and hand-off to the last
  // digit) say so, lest the rows read as one copied into the other.
  std::vector<std::string> same;
  for (std::size_t i = 0; i < configs.size(); ++i)
    for (std::size_t j = i + 1; j < configs.size(); ++j) {
      const auto &a = configs[i], &b = configs[j];
      const std::size_t ra = a[0], rb = b[0];
      if (t.get(ra, "a_role") == "mixed" || t.get(rb, "a_role") == "mixed" ||
          split_name(t, ra) != split_name(t, rb) || a.size() != b.size() || !first_ok(t, a) ||
          !first_ok(t, b))
        continue;
      bool equal = true;
      for (std::size_t k = 0; k < a.size() && equal; ++k)
        for (const char* col : {"ttft_p50_s", "ttft_p99_s", "handoff_p50_s", "first_token_rps"})
          equal = equal && t.get(a[k], col) == t.get(b[k], col);
      if (equal)
        same.push_back(split_name(t, ra) + " " + t.get(ra, "handoff") + " and " +
                       t.get(rb, "handoff"));
    }
  if (!same.empty()) {
    md << "\nRuns identical to the last digit in every replicate (not one row copied into "
          "another: what sets the two profiles apart never reaches the pull's critical path here):";
    for (std::size_t i = 0; i < same.size(); ++i) md << (i ? "; " : " ") << same[i];
    md << ".\n";
  }
  md << "\nConclusions (computed; " << kReplicateNote << "), per profile: the P/D split with the "
     << "lowest TTFT p99 against the co-located pool, its hand-off against nixl-vllm's at the "
     << "same split, and its verdict: (a) TTFT p99 not above the co-located pool's, above it "
     << "within 10× or more than 10× above it, (b) the hand-off most of the TTFT p50 (it bounds "
     << "the first token) or under half of it; each checked "
     << "with the profile's assumption at its other end (\"conditional on\" where either "
     << "flips):\n";
  std::vector<std::size_t> colo;
  std::vector<std::string> profiles;  // base profiles, in order
  for (const auto& cr : configs) {
    if (!first_ok(t, cr)) continue;
    if (t.get(cr[0], "a_role") == "mixed") {
      if (colo.empty()) colo = cr;
      continue;
    }
    const std::string label = t.get(cr[0], "handoff");
    if (variant_of(label).empty() &&
        std::find(profiles.begin(), profiles.end(), label) == profiles.end())
      profiles.push_back(label);
  }
  if (colo.empty()) {
    md << "- no co-located row completed: no verdict.\n\n";
    return md.str();
  }
  const double colo_p99 = mean_of(t, colo, "ttft_p99_s");
  auto find = [&](const std::string& label, const std::string& a_nodes) {
    for (const auto& cr : configs)
      if (first_ok(t, cr) && t.get(cr[0], "a_role") != "mixed" &&
          t.get(cr[0], "handoff") == label && t.get(cr[0], "a_nodes") == a_nodes)
        return cr;
    return std::vector<std::size_t>{};
  };
  for (const std::string& profile : profiles) {
    std::vector<std::size_t> best;
    double best_p99 = NAN;
    for (const auto& cr : configs) {
      if (!first_ok(t, cr) || t.get(cr[0], "a_role") == "mixed" ||
          t.get(cr[0], "handoff") != profile)
        continue;
      const double p99 = mean_of(t, cr, "ttft_p99_s");
      if (best.empty() || p99 < best_p99) best = cr, best_p99 = p99;
    }
    const std::string a_nodes = t.get(best[0], "a_nodes");
    const std::string split = split_name(t, best[0]);
    const double ratio = best_p99 / colo_p99;
    const ProfileNote note = profile_note(profile);
    std::ostringstream line;
    line << subject << profile << " (" << note.what << "): " << split << " has TTFT p99 "
         << interval_cell(t, best, "ttft_p99_s") << " s, " << fmt_num(ratio) << "× the co-located "
         << interval_cell(t, colo, "ttft_p99_s") << " s ("
         << versus(t, best, colo, "ttft_p99_s", "co-located", "s") << "), hand-off p50 "
         << interval_cell(t, best, "handoff_p50_s") << " s, " << handoff_share(t, best)
         << " of its TTFT p50";
    if (profile != "nixl-vllm") {
      const auto nixl = find("nixl-vllm", a_nodes);
      const double h = mean_of(t, best, "handoff_p50_s");
      const double hn = nixl.empty() ? NAN : mean_of(t, nixl, "handoff_p50_s");
      if (std::isfinite(h) && hn > 0)
        line << " (" << fmt_num(h / hn) << "× nixl-vllm's at " << split << ")";
    }
    // The verdict: (a) TTFT p99 against the co-located pool's: not above, above within 10x, or
    // more than 10x; (b) the hand-off most of the TTFT p50 (what bounds a P/D request's first
    // token) or under half of it.
    auto p99_class = [](double r) { return r > 10 ? 2 : r > 1 ? 1 : 0; };
    static const char* const kP99[] = {"not above the co-located pool's",
                                       "above the co-located pool's, within 10×",
                                       "over 10× the co-located pool's"};
    const double share = handoff_share_of(t, best);
    // The class is read off replicate means; with a paired interval that contains 0 the
    // replicates do not resolve it, and the verdict says so.
    const bool unresolved =
        p99_class(ratio) > 0 && stats::interval_sign(paired(t, best, colo, "ttft_p99_s")) == 0;
    line << ": TTFT p99 " << kP99[p99_class(ratio)]
         << (unresolved ? " by the replicate means (not resolved: the paired interval contains 0)"
                        : "")
         << ", the hand-off " << (share >= 0.5 ? "most" : "under half") << " of the TTFT p50";
    bool flips = false, checked = false;
    for (const auto& cr : configs) {
      const std::string label = t.get(cr[0], "handoff");
      if (!first_ok(t, cr) || t.get(cr[0], "a_role") == "mixed" || base_profile(label) != profile ||
          variant_of(label).empty() || t.get(cr[0], "a_nodes") != a_nodes)
        continue;
      const double vr = mean_of(t, cr, "ttft_p99_s") / colo_p99;
      const double vs = handoff_share_of(t, cr);
      const bool flip_a = p99_class(vr) != p99_class(ratio);
      const bool flip_b =
          std::isfinite(vs) && std::isfinite(share) && (vs >= 0.5) != (share >= 0.5);
      flips = flips || flip_a || flip_b;
      checked = true;
      line << "; with " << variant_text(variant_of(label)) << ", TTFT p99 "
           << interval_cell(t, cr, "ttft_p99_s") << " s (" << fmt_num(vr)
           << "× the co-located), hand-off p50 " << interval_cell(t, cr, "handoff_p50_s") << " s, "
           << handoff_share(t, cr) << " of its TTFT p50: ";
      if (!flip_a && !flip_b)
        line << "the same verdict";
      else
        line << "the verdict flips ("
             << (flip_a ? std::string("TTFT p99 ") + kP99[p99_class(vr)] : "")
             << (flip_a && flip_b ? "; " : "")
             << (flip_b ? "the hand-off's share of the TTFT p50 crosses half" : "") << ")";
    }
    const std::string claim = line.str();
    md << "- " << claim << "\n";
    if (log) {
      std::vector<std::vector<std::size_t>> group{colo};
      for (const auto& cr : configs)
        if (base_profile(t.get(cr[0], "handoff")) == profile && t.get(cr[0], "a_role") != "mixed")
          group.push_back(cr);
      log->add({"8.9", claim, regime_brief(study, group),
                std::string(flips ? "conditional on " : "") + note.hinges_on +
                    (checked ? "" : " (not simulated at its other end in this run)") +
                    "; the decode node recomputing the last prompt token; the network between "
                    "the nodes not modelled",
                "kernel path"});
    }
  }
  md << "\n";
  return md.str();
}

// ---- pools of different KV layouts (studies/pd-disagg-handoff's other model) ----

// A layout label as the study writes it ("tp4-dp4-ep16") in words ("TP 4 × DP 4, EP 16").
std::string layout_words(const std::string& label) {
  std::string out;
  std::size_t at = 0;
  while (at < label.size()) {
    std::size_t end = label.find('-', at);
    if (end == std::string::npos) end = label.size();
    const std::string part = label.substr(at, end - at);
    std::size_t d = 0;
    while (d < part.size() && !std::isdigit(static_cast<unsigned char>(part[d]))) ++d;
    std::string name = part.substr(0, d);
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const std::string sep = out.empty() ? "" : name == "EP" ? ", " : " × ";
    out += sep + name + " " + part.substr(d);
    at = end + 1;
  }
  return out;
}

std::string layouts_part(const SweepData& study, ConclusionLog* log) {
  const ResultsTable& t = study.table;
  if (!t.has("model") || !t.has("b_layout") || t.rows.empty()) return "";
  const std::string first = t.get(0, "model");
  std::vector<std::vector<std::size_t>> configs;
  for (const auto& cr :
       configurations(t, {"model", "a_role", "a_nodes", "handoff", "a_layout", "b_layout"}))
    if (t.get(cr[0], "model") != first) configs.push_back(cr);
  if (configs.empty()) return "";
  std::ostringstream md;
  md << "#### Pools of different KV layouts (the re-shard)\n\n"
     << "Another model on the same four nodes, each replica spanning two of them, with each "
     << "pool's layout as DeepSeek's deployment shapes them: the prefill pool's attention "
     << "tensor-parallel within data-parallel ranks, the decode pool's data-parallel with one GPU "
     << "per rank, experts parallel over all GPUs of a replica. Where the layouts differ the "
     << "hand-off re-shards the KV: each decode GPU reads the layers and heads it holds from the "
     << "prefill GPUs holding them (an MLA latent whole from one TP rank; docs/disaggregation.md, "
     << "\"The re-shard\"). The hand-off's profile is nixl-vllm.\n\n"
     << regime_paragraph(study, configs);
  std::vector<std::vector<std::string>> rows;
  for (const auto& cr : configs) {
    const std::size_t r = cr[0];
    const bool pd = t.get(r, "a_role") != "mixed";
    const std::string lay = layout_words(t.get(r, "a_layout")) +
                            (pd ? " → " + layout_words(t.get(r, "b_layout")) : " (both groups)");
    if (!first_ok(t, cr)) {
      rows.push_back({t.get(r, "model"), split_name(t, r), lay, "failed: " + t.get(r, "error")});
      continue;
    }
    rows.push_back(
        {t.get(r, "model"), split_name(t, r), lay,
         interval_cell(t, cr, "first_token_rps") + " / " + interval_cell(t, cr, "arrival_rps"),
         fmt_num(mean_of(t, cr, "requests_rejected")), interval_cell(t, cr, "ttft_p50_s"),
         interval_cell(t, cr, "ttft_p99_s"), interval_cell(t, cr, "tpot_p50_s"),
         pd ? interval_cell(t, cr, "handoff_transfer_mean_s") : "—",
         pd ? fmt_num(mean_of(t, cr, "handoff_bytes_mean") / 1e9) : "—"});
  }
  md << markdown_table({"model", "pools (replicas)", "layout (prefill → decode)",
                        "first tokens / arrivals (req/s)", "rejected", "TTFT p50 (s)",
                        "TTFT p99 (s)", "TPOT p50 (s)", "pull mean (s)", "hand-off GB (mean)"},
                       rows)
     << "\nConclusions (computed; " << kReplicateNote << "):\n";
  // Per model: the re-shard's pull against the same layout on both pools at the same split.
  std::vector<std::string> models;
  for (const auto& cr : configs)
    if (std::find(models.begin(), models.end(), t.get(cr[0], "model")) == models.end())
      models.push_back(t.get(cr[0], "model"));
  for (const std::string& m : models) {
    std::vector<std::size_t> same, reshard;
    for (const auto& cr : configs) {
      const std::size_t r = cr[0];
      if (t.get(r, "model") != m || t.get(r, "a_role") == "mixed" || !first_ok(t, cr)) continue;
      (t.get(r, "a_layout") == t.get(r, "b_layout") ? same : reshard) = cr;
    }
    if (same.empty() || reshard.empty()) continue;
    const double bytes =
        mean_of(t, reshard, "handoff_bytes_mean") / mean_of(t, same, "handoff_bytes_mean");
    const double pull = mean_of(t, reshard, "handoff_transfer_mean_s") /
                        mean_of(t, same, "handoff_transfer_mean_s");
    std::ostringstream line;
    line << m << ", " << split_name(t, reshard[0]) << ": prefill "
         << layout_words(t.get(reshard[0], "a_layout")) << " to decode "
         << layout_words(t.get(reshard[0], "b_layout")) << " hands off " << fmt_num(bytes)
         << "× the bytes of the same layout on both pools ("
         << layout_words(t.get(same[0], "b_layout")) << ") in a pull of "
         << interval_cell(t, reshard, "handoff_transfer_mean_s") << " s against "
         << interval_cell(t, same, "handoff_transfer_mean_s") << " s (" << fmt_num(pull)
         << "×), TTFT p99 " << interval_cell(t, reshard, "ttft_p99_s") << " s against "
         << interval_cell(t, same, "ttft_p99_s") << " s, TPOT p50 "
         << interval_cell(t, reshard, "tpot_p50_s") << " s against "
         << interval_cell(t, same, "tpot_p50_s") << " s, "
         << fmt_num(mean_of(t, reshard, "requests_rejected")) << " against "
         << fmt_num(mean_of(t, same, "requests_rejected"))
         << " requests rejected per replicate (a prompt whose KV no decode rank's pool holds)";
    const std::string claim = line.str();
    md << "- " << claim << "\n";
    if (log)
      log->add({"8.9", claim, regime_brief(study, {same, reshard}),
                "the re-shard's source choice (one TP rank per MLA latent) and descriptor count "
                "(one per contiguous run of a piece: vLLM's HND layout); the posting cost per "
                "descriptor (3.75 µs, vLLM #50913); the network between the nodes not modelled",
                "kernel path"});
  }
  md << "\n";
  return md.str();
}

// ---- prefill and decode on one node (studies/pd-disagg-node) ----

// The same TP 4 prefill and TP 4 decode pools on one DGX H100 (hand-off over NVLink) or on two
// nodes (over the NICs), per transfer-engine profile: the pull, and whether the hand-off is most
// of the TTFT p50 on each link.
std::string node_part(const SweepData& study) {
  const ResultsTable& t = study.table;
  std::ostringstream md;
  md << "#### Prefill and decode on one node\n\n"
     << "Llama-3.1-70B (BF16) on document QA with a TP 4 prefill and a TP 4 decode engine, both "
     << "on one DGX H100 (`cluster.nodes[].host`: the hand-off is a GPU-to-GPU copy over NVLink, "
     << "450 GB/s per direction per GPU) or on two nodes (over the two GPUs' ConnectX-7 ports, "
     << "50 GB/s), under each transfer-engine profile; NIXL's posting is assumed to cost the same "
     << "per descriptor over NVLink (`cuda_ipc`) as over RDMA, the fast end of its range "
     << "(docs/disaggregation.md). Sweep `studies/pd-disagg-node`.\n\n";
  const auto configs = configurations(t, {"link", "handoff"});
  md << regime_paragraph(study, configs);
  std::vector<std::vector<std::string>> rows;
  std::map<std::string, std::map<std::string, std::vector<std::size_t>>> by;  // profile, link
  std::vector<std::string> profiles;
  for (const auto& cr : configs) {
    const std::size_t r = cr[0];
    const std::string link = t.get(r, "link"), h = t.get(r, "handoff");
    if (!first_ok(t, cr)) {
      rows.push_back({link, h, "failed: " + t.get(r, "error")});
      continue;
    }
    if (std::find(profiles.begin(), profiles.end(), h) == profiles.end()) profiles.push_back(h);
    by[h][link] = cr;
    rows.push_back({link, h, interval_cell(t, cr, "ttft_p50_s"), interval_cell(t, cr, "ttft_p99_s"),
                    interval_cell(t, cr, "handoff_transfer_mean_s"),
                    interval_cell(t, cr, "handoff_p50_s"), handoff_share(t, cr)});
  }
  md << markdown_table({"link", "transfer engine", "TTFT p50 (s)", "TTFT p99 (s)", "pull mean (s)",
                        "hand-off p50 (s)", "hand-off / TTFT p50"},
                       rows)
     << "\nComputed, per profile: the pull over the NICs against NVLink, and the hand-off's "
     << "share of the TTFT p50 on each link (" << kReplicateNote << "):\n";
  for (const std::string& h : profiles) {
    const auto& m = by[h];
    const auto nv = m.find("nvlink"), nic = m.find("nic");
    if (nv == m.end() || nic == m.end()) continue;
    const double pn = mean_of(t, nic->second, "handoff_transfer_mean_s");
    const double pv = mean_of(t, nv->second, "handoff_transfer_mean_s");
    const double sn = handoff_share_of(t, nic->second), sv = handoff_share_of(t, nv->second);
    const char* why = pn / pv < 1.5 ? " (posting binds on both links: NVLink does not shorten it)"
                      : sn >= 0.5 && sv < 0.5 ? " (NVLink removes the hand-off bound)"
                      : sv < 0.5 ? " (the hand-off bounds the first token on neither link)"
                                 : " (the hand-off bounds the first token on both links)";
    md << "- " << h << ": the pull takes " << fmt_num(pn / pv) << "× as long over the NICs as "
       << "over NVLink; the hand-off is " << pct(sn) << " of the TTFT p50 across nodes and "
       << pct(sv) << " on one node" << why << "; TTFT p50 "
       << fmt_num(mean_of(t, nic->second, "ttft_p50_s")) << " s across nodes, "
       << fmt_num(mean_of(t, nv->second, "ttft_p50_s")) << " s on one node.\n";
  }
  md << "\n";
  return md.str();
}

// ---- a decode node's own KV tier (studies/pd-decode-tier) ----

// One prefill and one decode node on a shared CXL pool, LMCache's P/D backend: the decode node
// without its tier (`none`) or storing the chunks decode fills through to the pool (`pool`), per
// offered rate: the prefill node's loaded share of prompt tokens, TTFT and TPOT.
std::string decode_tier_part(const SweepData& study, ConclusionLog* log) {
  const ResultsTable& t = study.table;
  std::ostringstream md;
  md << "#### A decode node's own KV tier\n\n"
     << "Llama-3.1-70B (BF16) on the ShareGPT-like chat, one prefill and one decode DGX H100 "
     << "(TP 8, 256 GB DRAM each, both on one 1 TB CXL pool), LMCache 0.3.5 with its P/D backend "
     << "(`lmcache-pd`) handing the KV off. `none`: the decode node stores nothing (the shipped "
     << "P/D recipes), so a conversation's next turn recomputes the previous answer on the "
     << "prefill node; `pool`: `cluster.nodes[].decode_tier` with LMCache's `save_decode_cache` "
     << "(LMCache PR #2509's decoder config): the decode node stores each chunk decode fills, "
     << "blocking its step, through its DRAM tier to the pool, where the next turn's prefill "
     << "finds it (docs/disaggregation.md, \"A decode node's KV tier\"). No warm tier. Sweep "
     << "`studies/pd-decode-tier`. First tokens per second against arrivals says whether the "
     << "prefill node keeps up; completions per second against arrivals over the run's middle "
     << "80% (`mid_completion_rps`, `mid_arrival_rps`: without the decode of the last outputs "
     << "after the last arrival, which completions over the whole run count) whether the "
     << "decode node does.\n\n";
  const auto configs = configurations(t, {"decode_tier", "rate"});
  md << regime_paragraph(study, configs);
  // The prefill node's loaded share of the prompt tokens (replicate means).
  const auto loaded = [&](const std::vector<std::size_t>& cr) {
    const double c = mean_of(t, cr, "cached_tokens_total");
    const double k = mean_of(t, cr, "computed_tokens_total");
    return c + k > 0 ? c / (c + k) : NAN;
  };
  std::vector<std::vector<std::string>> rows;
  std::map<std::string, std::map<std::string, std::vector<std::size_t>>> by;  // rate, arm
  std::vector<std::string> rates;
  for (const auto& cr : configs) {
    const std::size_t r = cr[0];
    const std::string arm = t.get(r, "decode_tier"), rate = t.get(r, "rate");
    if (!first_ok(t, cr)) {
      rows.push_back({arm, rate, "failed: " + t.get(r, "error")});
      continue;
    }
    if (std::find(rates.begin(), rates.end(), rate) == rates.end()) rates.push_back(rate);
    by[rate][arm] = cr;
    const double stored = mean_of(t, cr, "decode_tier_stored_chunks");
    rows.push_back(
        {arm, rate, fmt_num(mean_of(t, cr, "arrival_rps")), interval_cell(t, cr, "first_token_rps"),
         interval_cell(t, cr, "mid_completion_rps") + " / " +
             interval_cell(t, cr, "mid_arrival_rps"),
         pct(loaded(cr)), interval_cell(t, cr, "ttft_p50_s"), interval_cell(t, cr, "ttft_p99_s"),
         interval_cell(t, cr, "tpot_p50_s"), std::isfinite(stored) ? fmt_num(stored) : "—"});
  }
  md << markdown_table(
            {"decode tier", "rate (req/s)", "arrivals (req/s)", "first tokens (req/s)",
             "completions / arrivals, middle 80% (req/s)", "prompt tokens loaded", "TTFT p50 (s)",
             "TTFT p99 (s)", "TPOT p50 (s)", "decode-tier chunks stored"},
            rows)
     << "\nComputed, per offered rate: the decode tier against none (" << kReplicateNote << "):\n";
  std::ostringstream claim;
  claim << "A decode node's own tier (LMCache save_decode_cache, a shared CXL pool), Llama-3.1-70B "
           "chat, 1P1D:";
  std::vector<std::vector<std::size_t>> compared;
  for (const std::string& rate : rates) {
    const auto& m = by[rate];
    const auto pool = m.find("pool"), none = m.find("none");
    if (pool == m.end() || none == m.end()) continue;
    const auto& a = pool->second;
    const auto& b = none->second;
    compared.push_back(a);
    compared.push_back(b);
    std::ostringstream line;
    line << "at " << rate << " req/s the prefill node loads " << pct(loaded(a))
         << " of prompt tokens against " << pct(loaded(b)) << "; TTFT p50 "
         << fmt_num(mean_of(t, a, "ttft_p50_s") / mean_of(t, b, "ttft_p50_s")) << "× ("
         << versus(t, a, b, "ttft_p50_s", "none", "s") << "), TTFT p99 "
         << versus(t, a, b, "ttft_p99_s", "none", "s") << ", TPOT p50 "
         << fmt_num(mean_of(t, a, "tpot_p50_s") / mean_of(t, b, "tpot_p50_s")) << "× ("
         << versus(t, a, b, "tpot_p50_s", "none", "s") << ")";
    md << "- " << line.str() << ".\n";
    claim << " " << line.str() << ";";
  }
  if (log && !compared.empty()) {
    std::string c = claim.str();
    c.pop_back();
    log->add({"8.9", c, regime_brief(study, compared),
              "conditional on the pool's read being cheaper than recomputing the answer's tokens "
              "(the CXL pool standing for a remote store shared by both pools [A]: its bandwidth "
              "and latency, not a network store's) and on LMCache's store cost on the decode step "
              "(blocking, one store per filled chunk; its 0.3.5 costs); the next turn reaching "
              "the prefill node after the answer's chunks are stored (ShareGPT-like chat turns)",
              "kernel path"});
  }
  md << "\n";
  return md.str();
}

}  // namespace

std::string section_disagg(const SweepData& kernel, const SweepData* layerwise, ConclusionLog* log,
                           const SweepData* handoff, const SweepData* node,
                           const SweepData* decode_tier) {
  std::ostringstream md;
  md << "### 8.9 Prefill/decode disaggregation under KV offloading\n\n"
     << "P/D disaggregation assumes prefill is compute-bound; with KV offloading most of a "
     << "prompt is loaded, not computed. Four DGX H100 nodes (TP 8, ConnectX-7 50 GB/s per GPU) "
     << "serve Llama-3.1-70B (BF16) or Qwen3-235B-A22B (FP8) with decode, co-located (every node "
     << "prefills and decodes) or split into a prefill and a decode pool. Each node's CPU tier "
     << "holds its workload's prefixes. A decode node pulls each prompt's KV from its prefill "
     << "node as vLLM's NixlConnector does: one RDMA read descriptor per layer, block and K/V "
     << "region posted by its worker, through its NIC and out of the prefill GPU's NIC port, "
     << "then recomputes the prompt's last token "
     << "at its next step (docs/disaggregation.md). TTFT is the decode node's first token. The "
     << "posting cost is swept: 3.75 µs per descriptor as measured (vLLM issue #50913) and 0 "
     << "(NIXL 1.5's strided descriptors, one per layer). Routers: round robin at both stages.\n\n";
  md << part(kernel, "kernel path", log);
  if (layerwise) md << part(*layerwise, "layer-wise path", log);
  if (handoff) md << handoff_part(*handoff, log) << layouts_part(*handoff, log);
  if (node) md << node_part(*node);
  if (decode_tier) md << decode_tier_part(*decode_tier, log);
  md << "\nWhat this does not model: the network between the nodes (the two GPUs' NIC ports and "
     << "HBM bound the pull; each node's fabric is solved on its own), "
     << (node ? "the CPU cores two engines on one host share, "
              : "hand-offs within a node over NVLink, ")
     << (handoff ? "layer-wise sending during the prefill (Mooncake's and LMCache's layer-wise "
                   "modes), LMCache's P/D buffer copies, "
                 : "the other transfer engines' profiles (mooncake-te, lmcache-pd: `kappasim list "
                   "transfer-engine`, docs/disaggregation.md), ")
     << "vLLM's first-token seeding (PR #51919, open) and the proxy's HTTP hops.\n\n";
  return md.str();
}

}  // namespace kappasim::report
