// Capacity at a TTFT SLO (see capacity.hpp).
#include "analysis/capacity.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "analysis/evaluate.hpp"
#include "core/table.hpp"
#include "core/units.hpp"
#include "sweeps/sweep_spec.hpp"

namespace kappasim::analysis {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kMaxRounds = 200;

// Four significant digits for the text summary (the JSON and CSV keep every digit).
std::string g4(double v) {
  if (!std::isfinite(v)) return "n/a";
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

std::string pct_name(double p) {
  char b[32];
  std::snprintf(b, sizeof b, "p%g", p * 100);
  return b;
}

}  // namespace

void CapacitySpec::validate(const std::string& path) const {
  const std::string p = path.empty() ? "" : path + ".";
  if (!(percentile > 0)) throw InputError(p + "percentile: expected above 0 (0.99 = p99)");
  if (rate_lo > 0 && rate_hi > 0 && !(rate_lo < rate_hi))
    throw InputError(p + "rate_lo: must be below rate_hi");
  if (!(rel_tol < 1)) throw InputError(p + "tol: expected a fraction below 1 (e.g. 0.02)");
  if (!(warmup < 1)) throw InputError(p + "warmup: expected below 1");
  if (replicates > 1000) throw InputError(p + "replicates: at most 1000");
}

double CapacityProbe::metric(const std::string& name) const {
  const auto it = metrics.find(name);
  return it == metrics.end() ? kNaN : it->second;
}

const char* capacity_status_name(ReplicateCapacity::Status s) {
  switch (s) {
    case ReplicateCapacity::Status::Found:
      return "found";
    case ReplicateCapacity::Status::MetAtTop:
      return "met_at_top";
    case ReplicateCapacity::Status::NeverMet:
      return "never_met";
  }
  return "";
}

CapacityResult search_capacity(const CapacityOracle& oracle, const CapacitySpec& spec) {
  if (!(spec.rate_lo > 0 && spec.rate_lo < spec.rate_hi))
    throw std::logic_error("search_capacity: expected 0 < rate_lo < rate_hi");
  const std::size_t n = static_cast<std::size_t>(spec.replicates);
  CapacityResult out;
  out.replicates.resize(n);
  int round = 0;
  // Runs one batch, appends its probes, returns their indices in out.probes.
  auto run = [&](const std::vector<CapacityProbeAsk>& asks, std::vector<CapacityProbe>* into) {
    const std::vector<CapacityProbeAnswer> ans = oracle(asks);
    if (ans.size() != asks.size()) throw std::logic_error("capacity oracle: wrong answer count");
    std::vector<std::size_t> idx;
    for (std::size_t i = 0; i < asks.size(); ++i) {
      if (!ans[i].ok)
        throw InputError(
            "capacity search: the run at workload.rate = " + format_number(asks[i].rate) +
            " (replicate " + std::to_string(asks[i].replicate) + ") failed: " + ans[i].error);
      CapacityProbe p;
      p.replicate = asks[i].replicate;
      p.round = round;
      p.rate = asks[i].rate;
      p.metrics = ans[i].metrics;
      p.warnings = ans[i].warnings;
      const double q = p.metric("ttft_q_s");
      p.met = std::isfinite(q) && q <= spec.slo_ttft_s;
      idx.push_back(into->size());
      into->push_back(std::move(p));
    }
    return idx;
  };
  // Round 0: both ends for every replicate.
  std::vector<CapacityProbeAsk> asks;
  for (std::size_t r = 0; r < n; ++r) {
    asks.push_back({r, spec.rate_lo});
    asks.push_back({r, spec.rate_hi});
  }
  const auto first = run(asks, &out.probes);
  std::vector<double> lo(n, spec.rate_lo), hi(n, spec.rate_hi);
  std::vector<bool> active(n, false);
  for (std::size_t r = 0; r < n; ++r) {
    ReplicateCapacity& rc = out.replicates[r];
    const CapacityProbe& at_lo = out.probes[first[2 * r]];
    const CapacityProbe& at_hi = out.probes[first[2 * r + 1]];
    if (!at_lo.met) {
      rc.status = ReplicateCapacity::Status::NeverMet;
      rc.rate_met = rc.capacity_rps = kNaN;
      rc.rate_not_met = spec.rate_lo;
    } else if (at_hi.met) {
      rc.status = ReplicateCapacity::Status::MetAtTop;
      rc.rate_met = spec.rate_hi;
      rc.rate_not_met = kNaN;
      rc.probe = first[2 * r + 1];
    } else {
      rc.status = ReplicateCapacity::Status::Found;
      rc.probe = first[2 * r];
      active[r] = true;
    }
  }
  // Bisection in log space, all open replicates in one batch per round.
  for (;;) {
    asks.clear();
    for (std::size_t r = 0; r < n; ++r)
      if (active[r] && hi[r] / lo[r] > 1 + spec.rel_tol)
        asks.push_back({r, std::exp(0.5 * (std::log(lo[r]) + std::log(hi[r])))});
    if (asks.empty()) break;
    if (++round > kMaxRounds) throw std::logic_error("search_capacity: no convergence");
    const auto idx = run(asks, &out.probes);
    for (std::size_t i = 0; i < asks.size(); ++i) {
      const std::size_t r = asks[i].replicate;
      if (out.probes[idx[i]].met) {
        lo[r] = asks[i].rate;
        out.replicates[r].probe = idx[i];
      } else {
        hi[r] = asks[i].rate;
      }
    }
  }
  std::vector<double> served, offered;
  bool any_top = false;
  for (std::size_t r = 0; r < n; ++r) {
    ReplicateCapacity& rc = out.replicates[r];
    if (rc.status == ReplicateCapacity::Status::NeverMet) continue;
    if (rc.status == ReplicateCapacity::Status::Found) {
      rc.rate_met = lo[r];
      rc.rate_not_met = hi[r];
    }
    any_top = any_top || rc.status == ReplicateCapacity::Status::MetAtTop;
    rc.capacity_rps = out.probes[rc.probe].metric("served_rps");
    served.push_back(rc.capacity_rps);
    offered.push_back(rc.rate_met);
  }
  out.capacity = stats::mean_interval(served, spec.confidence);
  out.capacity_offered = stats::mean_interval(offered, spec.confidence);
  out.status = served.empty() ? "never_met" : any_top ? "met_at_top" : "found";
  if (served.empty() || !(out.capacity.mean > 0)) return out;
  // The TTFT at fraction x capacity, every replicate.
  ++round;
  out.at_rate = spec.fraction * out.capacity.mean;
  asks.clear();
  for (std::size_t r = 0; r < n; ++r) asks.push_back({r, out.at_rate});
  run(asks, &out.at_probes);
  return out;
}

CapacityResult measure_capacity(const ConfigNode& base, const std::string& base_dir,
                                CapacitySpec spec, const std::string& work_dir,
                                const std::vector<std::string>& preset_dirs,
                                const std::uint64_t* seed0_in, CapacitySpec* resolved) {
  if (base.find("capacity"))
    throw std::logic_error("measure_capacity: remove the capacity: section first");
  std::uint64_t seed0 = 1;
  double rate = 10;  // WorkloadSpec's default rate
  if (const ConfigNode* w = base.find("workload"); w && w->is_map()) {
    if (const ConfigNode* s = w->find("seed");
        s && s->is_scalar() && !s->scalar.empty() &&
        s->scalar.find_first_not_of("0123456789") == std::string::npos && s->scalar.size() < 20)
      seed0 = std::stoull(s->scalar);
    if (const ConfigNode* r = w->find("rate"); r && r->is_scalar()) {
      try {
        rate = parse_quantity_as(r->scalar, dim::none);
      } catch (const UnitError& e) {
        throw InputError(r->loc, std::string("workload.rate: ") + e.what());
      }
    }
  }
  if (seed0_in) seed0 = *seed0_in;
  if (spec.rate_lo == 0) spec.rate_lo = rate / 64;
  if (spec.rate_hi == 0) spec.rate_hi = rate * 4;
  if (!(spec.rate_lo > 0 && spec.rate_lo < spec.rate_hi))
    throw InputError("rate range [" + format_number(spec.rate_lo) + ", " +
                     format_number(spec.rate_hi) +
                     "] requests/s: expected 0 < LO < HI (--rate-range, capacity.rate_lo/hi)");
  if (resolved) *resolved = spec;
  ConfigEvaluator ev(base, base_dir, "capacity-probe", work_dir, spec.jobs, preset_dirs);
  const std::string warm = format_number(spec.warmup), pct = format_number(spec.percentile);
  CapacityOracle oracle = [&](const std::vector<CapacityProbeAsk>& asks) {
    std::vector<Overrides> pts;
    for (const auto& a : asks)
      pts.push_back({{"workload.rate", value_literal(a.rate, dim::none, false)},
                     {sweep::kSeedKey, std::to_string(seed0 + a.replicate)},
                     {"window.warmup", warm},
                     {"window.percentile", pct}});
    const std::vector<EvalResult> res = ev.evaluate(pts);
    std::vector<CapacityProbeAnswer> out(res.size());
    for (std::size_t i = 0; i < res.size(); ++i) {
      out[i].ok = res[i].ok;
      out[i].error = res[i].error;
      out[i].metrics = res[i].metrics;
      out[i].warnings = res[i].warnings;
    }
    return out;
  };
  // The probes run at the literal's value (9 significant digits): search on those values.
  CapacityOracle rounded = [&](const std::vector<CapacityProbeAsk>& asks) {
    std::vector<CapacityProbeAsk> r = asks;
    for (auto& a : r) a.rate = std::stod(value_literal(a.rate, dim::none, false));
    return oracle(r);
  };
  return search_capacity(rounded, spec);
}

namespace {

double mean_of(const std::vector<CapacityProbe>& ps, const std::string& m) {
  std::vector<double> v;
  for (const auto& p : ps) v.push_back(p.metric(m));
  return stats::mean_interval(v).mean;
}

std::size_t warned_probes(const CapacityResult& r) {
  std::size_t n = 0;
  for (const auto& p : r.probes) n += p.warnings.empty() ? 0 : 1;
  for (const auto& p : r.at_probes) n += p.warnings.empty() ? 0 : 1;
  return n;
}

Table replicate_table(const CapacityResult& r, std::uint64_t seed0) {
  Table t({"replicate", "seed", "status", "rate_met_rps", "rate_not_met_rps", "capacity_rps",
           "arrival_rps", "ttft_q_s", "tier_hit_rate", "at_fraction_ttft_q_s"});
  for (std::size_t i = 0; i < r.replicates.size(); ++i) {
    const ReplicateCapacity& rc = r.replicates[i];
    const bool met = rc.status != ReplicateCapacity::Status::NeverMet;
    const CapacityProbe* p = met ? &r.probes[rc.probe] : nullptr;
    const CapacityProbe* at = i < r.at_probes.size() ? &r.at_probes[i] : nullptr;
    auto num = [](double v) { return std::isfinite(v) ? Cell(v) : Cell(); };
    t.add_row({static_cast<std::int64_t>(i), std::to_string(seed0 + i),
               std::string(capacity_status_name(rc.status)), num(rc.rate_met), num(rc.rate_not_met),
               num(rc.capacity_rps), p ? num(p->metric("arrival_rps")) : Cell(),
               p ? num(p->metric("ttft_q_s")) : Cell(),
               p ? num(p->metric("tier_hit_rate")) : Cell(),
               at ? num(at->metric("ttft_q_s")) : Cell()});
  }
  return t;
}

std::string num_or_null(double v) { return std::isfinite(v) ? format_number(v) : "null"; }

std::string interval_json(const stats::Interval& iv) {
  return "{\"n\": " + std::to_string(iv.n) + ", \"mean\": " + num_or_null(iv.mean) +
         ", \"sd\": " + num_or_null(iv.sd) + ", \"lo\": " + num_or_null(iv.lo) +
         ", \"hi\": " + num_or_null(iv.hi) + "}";
}

// At capacity: means over the replicates' met-end probes.
std::vector<CapacityProbe> at_capacity(const CapacityResult& r) {
  std::vector<CapacityProbe> ps;
  for (const auto& rc : r.replicates)
    if (rc.status != ReplicateCapacity::Status::NeverMet) ps.push_back(r.probes[rc.probe]);
  return ps;
}

}  // namespace

std::string capacity_text(const CapacityResult& r, const CapacitySpec& s, std::uint64_t seed0) {
  char conf[16];
  std::snprintf(conf, sizeof conf, "%g%%", s.confidence * 100);
  std::string out = "capacity at TTFT " + pct_name(s.percentile) +
                    " <= " + format_quantity(s.slo_ttft_s, dim::time) +
                    " (steady-state window: " + "arrivals after the first " +
                    format_number(s.warmup * 100) +
                    "% of the requests up to the last; offered load searched in [" +
                    format_number(s.rate_lo) + ", " + format_number(s.rate_hi) +
                    "] requests/s to " + format_number(s.rel_tol * 100) + "%)\n";
  const std::size_t n_never = [&] {
    std::size_t k = 0;
    for (const auto& rc : r.replicates) k += rc.status == ReplicateCapacity::Status::NeverMet;
    return k;
  }();
  if (r.status == "never_met") {
    std::vector<CapacityProbe> at_lo;
    for (const auto& p : r.probes)
      if (p.round == 0 && p.rate == s.rate_lo) at_lo.push_back(p);
    out += "status: never_met: the SLO is not met even at the lowest offered load " +
           format_number(s.rate_lo) + " requests/s in any of " +
           std::to_string(r.replicates.size()) + " replicates (TTFT " + pct_name(s.percentile) +
           " there: " + g4(mean_of(at_lo, "ttft_q_s")) +
           " s, mean over replicates); lower the range's LO, or relax the SLO\n";
  } else {
    out += "status: " + r.status +
           (r.status == "met_at_top"
                ? " (some replicate met the SLO at the range's top: its capacity is a lower "
                  "bound; raise the range's HI)"
                : "") +
           (n_never ? "; " + std::to_string(n_never) + " replicate(s) never met it (not averaged)"
                    : std::string()) +
           "\n";
    out += "capacity (served, steady state): " + stats::format_interval(r.capacity, 3) +
           " requests/s" +
           (r.capacity.n >= 2 ? std::string(", ") + conf + " t interval [" + g4(r.capacity.lo) +
                                    ", " + g4(r.capacity.hi) + "]"
                              : std::string()) +
           "\n";
    const auto cap = at_capacity(r);
    out += "regime at capacity (means over replicates): offered " +
           stats::format_interval(r.capacity_offered, 3) + " requests/s, window arrivals " +
           g4(mean_of(cap, "arrival_rps")) + "/s, served " + g4(mean_of(cap, "served_rps")) +
           "/s, TTFT " + pct_name(s.percentile) + " " + g4(mean_of(cap, "ttft_q_s")) +
           " s, tier hit rate " + g4(mean_of(cap, "tier_hit_rate")) + "\n";
    if (!r.at_probes.empty()) {
      out += "at " + format_number(s.fraction) + " x capacity (offered " + g4(r.at_rate) +
             " requests/s; means over replicates): TTFT p50 " +
             g4(mean_of(r.at_probes, "ttft_p50_s")) + " s, p90 " +
             g4(mean_of(r.at_probes, "ttft_p90_s")) + " s, p99 " +
             g4(mean_of(r.at_probes, "ttft_p99_s")) + " s";
      if (s.percentile != 0.5 && s.percentile != 0.9 && s.percentile != 0.99)
        out += ", " + pct_name(s.percentile) + " " + g4(mean_of(r.at_probes, "ttft_q_s")) + " s";
      out += "; served " + g4(mean_of(r.at_probes, "served_rps")) + "/s\n";
    }
  }
  out += "\n" + replicate_table(r, seed0).text(5);
  const std::size_t warned = warned_probes(r);
  out += "\n" + std::to_string(r.probes.size() + r.at_probes.size()) +
         " capacity-probe simulations (one process each)" +
         (warned ? "; " + std::to_string(warned) + " warned: " +
                       [&] {
                         for (const auto& p : r.probes)
                           if (!p.warnings.empty()) return p.warnings.front();
                         return r.at_probes.front().warnings.front();
                       }()
                 : std::string()) +
         "\n";
  return out;
}

std::string capacity_json(const CapacityResult& r, const CapacitySpec& s, std::uint64_t seed0) {
  const auto cap = at_capacity(r);
  std::string j =
      "{\n  \"status\": \"" + r.status +
      "\",\n  \"slo\": {\"ttft_s\": " + format_number(s.slo_ttft_s) +
      ", \"percentile\": " + format_number(s.percentile) +
      ", \"tpot\": null},\n  \"window\": {\"warmup\": " + format_number(s.warmup) +
      "},\n  \"rate_range\": [" + format_number(s.rate_lo) + ", " + format_number(s.rate_hi) +
      "],\n  \"tol\": " + format_number(s.rel_tol) +
      ",\n  \"confidence\": " + format_number(s.confidence) +
      ",\n  \"capacity_rps\": " + interval_json(r.capacity) +
      ",\n  \"capacity_offered_rps\": " + interval_json(r.capacity_offered) +
      ",\n  \"at_capacity\": {\"arrival_rps\": " + num_or_null(mean_of(cap, "arrival_rps")) +
      ", \"served_rps\": " + num_or_null(mean_of(cap, "served_rps")) +
      ", \"ttft_q_s\": " + num_or_null(mean_of(cap, "ttft_q_s")) +
      ", \"tier_hit_rate\": " + num_or_null(mean_of(cap, "tier_hit_rate")) + "}" +
      ",\n  \"at_fraction\": {\"fraction\": " + format_number(s.fraction) +
      ", \"offered_rps\": " + (r.at_probes.empty() ? "null" : format_number(r.at_rate));
  for (const char* m : {"served_rps", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "ttft_q_s"})
    j += std::string(", \"") + m + "\": " + num_or_null(mean_of(r.at_probes, m));
  j += "},\n  \"probes\": " + std::to_string(r.probes.size() + r.at_probes.size()) +
       ",\n  \"warned_probes\": " + std::to_string(warned_probes(r)) +
       ",\n  \"replicates\": " + replicate_table(r, seed0).json() + "}\n";
  return j;
}

std::string capacity_replicates_csv(const CapacityResult& r, std::uint64_t seed0) {
  return replicate_table(r, seed0).csv();
}

std::string capacity_probes_csv(const CapacityResult& r, std::uint64_t seed0) {
  Table t({"round", "replicate", "seed", "offered_rps", "met", "ttft_q_s", "served_rps",
           "arrival_rps", "ttft_p50_s", "ttft_p99_s", "tier_hit_rate", "window_requests",
           "warnings"});
  auto add = [&](const CapacityProbe& p, const std::string& round) {
    t.add_row({round, static_cast<std::int64_t>(p.replicate), std::to_string(seed0 + p.replicate),
               p.rate, p.met, p.metric("ttft_q_s"), p.metric("served_rps"), p.metric("arrival_rps"),
               p.metric("ttft_p50_s"), p.metric("ttft_p99_s"), p.metric("tier_hit_rate"),
               p.metric("window_requests"), static_cast<std::int64_t>(p.warnings.size())});
  };
  for (const auto& p : r.probes) add(p, std::to_string(p.round));
  for (const auto& p : r.at_probes) add(p, "at_fraction");
  return t.csv();
}

std::vector<std::pair<std::string, double>> capacity_metrics(const CapacityResult& r) {
  const auto cap = at_capacity(r);
  std::size_t found = 0, never = 0;
  for (const auto& rc : r.replicates) {
    found += rc.status != ReplicateCapacity::Status::NeverMet;
    never += rc.status == ReplicateCapacity::Status::NeverMet;
  }
  return {{"capacity_rps", r.capacity.mean},
          {"capacity_rps_sd", r.capacity.sd},
          {"capacity_rps_lo", r.capacity.lo},
          {"capacity_rps_hi", r.capacity.hi},
          {"capacity_offered_rps", r.capacity_offered.mean},
          {"capacity_lower_bound", r.status == "met_at_top" ? 1.0 : 0.0},
          {"replicates_met", static_cast<double>(found)},
          {"replicates_never_met", static_cast<double>(never)},
          {"at_capacity_arrival_rps", mean_of(cap, "arrival_rps")},
          {"at_capacity_ttft_q_s", mean_of(cap, "ttft_q_s")},
          {"at_capacity_tier_hit_rate", mean_of(cap, "tier_hit_rate")},
          {"at_fraction_offered_rps", r.at_probes.empty() ? kNaN : r.at_rate},
          {"at_fraction_served_rps", mean_of(r.at_probes, "served_rps")},
          {"at_fraction_ttft_p50_s", mean_of(r.at_probes, "ttft_p50_s")},
          {"at_fraction_ttft_p90_s", mean_of(r.at_probes, "ttft_p90_s")},
          {"at_fraction_ttft_p99_s", mean_of(r.at_probes, "ttft_p99_s")},
          {"at_fraction_ttft_q_s", mean_of(r.at_probes, "ttft_q_s")},
          {"probes", static_cast<double>(r.probes.size() + r.at_probes.size())}};
}

}  // namespace kappasim::analysis
