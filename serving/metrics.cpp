#include "serving/metrics.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/table.hpp"
#include "core/units.hpp"

namespace kappasim {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// a / b, NaN when b is zero (or either is NaN).
double ratio(double a, double b) { return b != 0 ? a / b : kNaN; }

// requests.csv's cells appended in place (issue 24: no string per cell). Byte for byte what
// format_number / std::to_string / csv_field give: a whole number below 1e16 in full ("%.0f",
// "-0" for negative zero), any other finite number as its shortest round trip, not finite empty.
template <class Int>
void append_int(std::string& s, Int v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  s.append(buf, r.ptr);
}
void append_number(std::string& s, double v) {
  if (!std::isfinite(v)) return;
  if (v == std::floor(v) && std::fabs(v) < 1e16) {
    if (v == 0 && std::signbit(v)) {
      s += "-0";
      return;
    }
    append_int(s, static_cast<std::int64_t>(v));
    return;
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  s.append(buf, r.ptr);
}
void append_field(std::string& s, const std::string& f) {
  const bool edge_space = !f.empty() && (f.front() == ' ' || f.back() == ' ');
  if (!edge_space && f.find_first_of(",\"\r\n") == std::string::npos)
    s += f;
  else
    s += csv_field(f);
}
void append_row(std::string& s, const RequestRecord& r) {
  append_int(s, r.id);
  s += ',';
  append_field(s, r.workload);
  for (double v : {r.arrival_s, r.queue_s, r.load_s, r.compute_s, r.ttft_s}) {
    s += ',';
    append_number(s, v);
  }
  s += ',';
  append_int(s, r.cached_tokens);
  s += ',';
  append_int(s, r.computed_tokens);
  for (double v : {r.kappa_ratio, r.bytes_loaded, r.bytes_stored}) {
    s += ',';
    append_number(s, v);
  }
  s += ',';
  append_field(s, r.load_path);
  s += ',';
  append_int(s, r.steps);
  for (const auto& c : TimeBreakdown::categories())
    if (c.field != &TimeBreakdown::idle_s) {
      s += ',';
      append_number(s, r.time.*c.field);
    }
  s += ',';
  append_field(s, r.load_bound);
}

}  // namespace

// ---- requests.csv ---------------------------------------------------------------------------

const char* RequestsCsvWriter::header() {
  static const std::string h = [] {
    std::string s =
        "id,workload,arrival_s,queue_s,load_s,compute_s,ttft_s,cached_tokens,computed_tokens,"
        "kappa_ratio,bytes_loaded,bytes_stored,load_path,steps";
    // The time breakdown (idle is a run category) and the load's active bound.
    for (const auto& c : TimeBreakdown::categories())
      if (c.field != &TimeBreakdown::idle_s) s += std::string(",t_") + c.name + "_s";
    return s + ",load_bound";
  }();
  return h.c_str();
}

std::string RequestsCsvWriter::row(const RequestRecord& r) {
  std::string s;
  s.reserve(256);
  append_row(s, r);
  return s;
}

RequestsCsvWriter::RequestsCsvWriter(const std::string& path)
    : m_path(path),
      m_out(std::make_unique<std::ofstream>(path, std::ios::binary | std::ios::trunc)) {
  if (!*m_out) throw file_error("cannot write requests file '" + path + "'", errno);
  *m_out << header() << '\n';
}

RequestsCsvWriter::~RequestsCsvWriter() {
  if (m_out && m_out->is_open()) m_out->close();
}

void RequestsCsvWriter::write(const RequestRecord& r) {
  if (!m_out || !m_out->is_open())
    throw std::logic_error("RequestsCsvWriter::write after close ('" + m_path + "')");
  thread_local std::string line;  // reused: no allocation per row
  line.clear();
  append_row(line, r);
  line += '\n';
  m_out->write(line.data(), static_cast<std::streamsize>(line.size()));
  ++m_rows;
}

void RequestsCsvWriter::close() {
  if (!m_out || !m_out->is_open()) return;
  m_out->flush();
  bool ok = static_cast<bool>(*m_out);
  m_out->close();
  if (!ok || !*m_out) throw file_error("cannot write requests file '" + m_path + "'", errno);
}

// ---- summary --------------------------------------------------------------------------------

SummaryBuilder::SummaryBuilder(double relative_accuracy)
    : m_ttft(relative_accuracy),
      m_queue(relative_accuracy),
      m_kappa(relative_accuracy),
      m_kappa_link(relative_accuracy) {}

void SummaryBuilder::add_request(const RequestRecord& r) {
  ++m_requests;
  m_ttft.add(r.ttft_s);
  m_queue.add(r.queue_s);
  m_kappa.add(r.kappa_ratio);
  m_kappa_link.add(r.kappa_link_ratio);
  m_max_wait_s = std::max(m_max_wait_s, r.queue_s);
  m_load_sum += r.load_s;
  m_compute_sum += r.compute_s;
  if (r.compute_s > 0) {
    m_poh_sum += r.load_s / r.compute_s;
    ++m_poh_n;
  }
  double service = r.load_s + r.compute_s;
  if (service > 0) {
    double x = r.ttft_s / service;
    m_slow_sum += x;
    m_slow_sq += x * x;
    ++m_slow_n;
  }
  m_cached_tokens += static_cast<double>(r.cached_tokens);
  m_computed_tokens += static_cast<double>(r.computed_tokens);
  m_bytes_loaded += r.bytes_loaded;
  m_bytes_stored += r.bytes_stored;
  m_bytes_buffer += r.bytes_from_buffer;
  m_recomputed_tokens += static_cast<double>(r.recomputed_tokens);
  m_last_finish_s = std::max(m_last_finish_s, r.arrival_s + r.ttft_s);
  m_time_sum += r.time;
}

void SummaryBuilder::add_step(const StepRecord& s) {
  ++m_steps;
  m_step_tokens += static_cast<double>(s.tokens);
  if (s.budget > 0) {
    m_budget_frac_sum += static_cast<double>(s.tokens) / static_cast<double>(s.budget);
    ++m_budget_n;
  }
  m_vram_sum += s.vram_used_fraction;
  m_seqs_sum += s.seqs;
  m_step_time_sum += s.end_s - s.start_s;
}

std::vector<std::pair<std::string, double>> SummaryBuilder::figures(const Totals& t) const {
  const double n = static_cast<double>(m_requests);
  const double steps = static_cast<double>(m_steps);
  const double sim = t.simulated_time_s;
  const double gpus = t.gpus;
  const double gpu_power = ratio(ratio(t.gpu_energy_j, gpus), sim);
  std::vector<std::pair<std::string, double>> f = {
      {"requests_completed", n},
      {"requests_rejected", static_cast<double>(t.requests_rejected)},
      {"simulated_time_s", sim},
      {"wall_time_s", t.wall_time_s},
      {"throughput_rps", ratio(n, sim)},
      {"ttft_mean_s", m_ttft.mean()},
      {"ttft_p50_s", m_ttft.quantile(0.50)},
      {"ttft_p90_s", m_ttft.quantile(0.90)},
      {"ttft_p99_s", m_ttft.quantile(0.99)},
      {"ttft_max_s", m_ttft.max()},
      {"queue_mean_s", m_queue.mean()},
      {"queue_p50_s", m_queue.quantile(0.50)},
      {"queue_p99_s", m_queue.quantile(0.99)},
      {"max_wait_s", m_requests ? m_max_wait_s : kNaN},
      {"slowdown_mean", ratio(m_slow_sum, static_cast<double>(m_slow_n))},
      {"jain_index", ratio(m_slow_sum * m_slow_sum, static_cast<double>(m_slow_n) * m_slow_sq)},
      {"load_mean_s", ratio(m_load_sum, n)},
      {"compute_mean_s", ratio(m_compute_sum, n)},
      {"p_oh_mean", ratio(m_poh_sum, static_cast<double>(m_poh_n))},
      // Issue 20 part 4: Σ load / Σ compute, not dominated by tiny-compute requests as the mean
      // of per-request ratios is.
      {"p_oh_ratio_of_sums", ratio(m_load_sum, m_compute_sum)},
      {"transfer_time_fraction", ratio(m_load_sum, m_load_sum + m_compute_sum)},
      // Σ load / Σ TTFT: the share of the time requests waited (queue included) spent loading.
      {"load_ttft_fraction", ratio(ratio(m_load_sum, n), m_ttft.mean())},
      {"kappa_ratio_mean", m_kappa.mean()},
      {"kappa_ratio_p50", m_kappa.quantile(0.50)},
      {"cached_tokens_total", m_cached_tokens},
      {"computed_tokens_total", m_computed_tokens},
      {"bytes_loaded_total", m_bytes_loaded},
      {"bytes_stored_total", m_bytes_stored},
      {"last_finish_s", m_requests ? m_last_finish_s : kNaN},
      {"steps", steps},
      {"step_time_mean_s", ratio(m_step_time_sum, steps)},
      {"scheduled_tokens_per_iter", ratio(m_step_tokens, steps)},
      {"budget_utilization", ratio(m_budget_frac_sum, static_cast<double>(m_budget_n))},
      {"seqs_per_iter", ratio(m_seqs_sum, steps)},
      {"vram_utilization", ratio(m_vram_sum, steps)},
      {"gpus", gpus},
      {"gpu_utilization", ratio(t.gpu_busy_s, sim)},
      {"h2d_bytes_per_gpu", t.h2d_bytes_per_gpu},
      {"h2d_effective_bytes_per_s", ratio(t.h2d_bytes_per_gpu, t.link_busy_s)},
      {"h2d_effective_node_bytes_per_s", ratio(t.h2d_bytes_per_gpu * t.gpus, t.link_busy_s)},
      {"h2d_effective_model_bytes_per_s", ratio(t.h2d_model_bytes, t.link_busy_s)},
      {"link_capacity_Bps", t.link_capacity_Bps},
      {"link_utilization", ratio(t.h2d_bytes_per_gpu, t.link_capacity_Bps * sim)},
      {"link_busy_fraction", ratio(t.link_busy_s, sim)},
      {"gpu_energy_j", t.gpu_energy_j},
      {"gpu_power_w", gpu_power},
      {"gpu_power_tdp_fraction", ratio(gpu_power, t.tdp_w)},
      {"energy_per_request_j", ratio(t.gpu_energy_j, n)},
      {"tier_hit_chunks", t.tier_hit_chunks},
      {"tier_miss_chunks", t.tier_miss_chunks},
      {"tier_hit_rate", ratio(t.tier_hit_chunks, t.tier_hit_chunks + t.tier_miss_chunks)},
      {"bytes_from_buffer_total", m_bytes_buffer},
      {"buffer_hit_rate", ratio(m_bytes_buffer, m_bytes_buffer + m_bytes_loaded)},
      {"kappa_link_ratio_mean", m_kappa_link.mean()},
      {"kappa_link_ratio_p50", m_kappa_link.quantile(0.50)},
      {"recomputed_tokens_total", m_recomputed_tokens},
      // ---- the serving stack's software time by where it sits, and the tier honestly
      {"stack_scheduler_s", t.stack_scheduler_s},
      {"stack_step_cpu_s", t.stack_step_cpu_s},
      {"stack_gpu_gap_s", t.stack_gpu_gap_s},
      {"stack_cpu_bound_s", t.stack_cpu_bound_s},
      {"stack_store_s", t.stack_store_s},
      {"tier_lookups", t.tier_lookups},
      {"tier_stored_chunks", t.tier_stored_chunks},
      {"tier_evicted_chunks", t.tier_evicted_chunks},
      {"tier_restored_chunks", t.tier_restored_chunks},
      {"tier_restore_fraction", ratio(t.tier_restored_chunks, t.tier_stored_chunks)},
      {"tier_dropped_chunks", t.tier_dropped_chunks},
      {"tier_warm_chunks", t.tier_warm_chunks},
      {"tier_capacity_bytes", t.tier_capacity_bytes},
      {"tier_working_set_bytes", t.tier_working_set_bytes},
      {"tier_working_set_fits", t.tier_working_set_bytes <= t.tier_capacity_bytes ? 1.0 : 0.0},
      {"kernel_events", static_cast<double>(t.kernel_events)},
      {"kernel_events_per_request", ratio(static_cast<double>(t.kernel_events), n)},
      {"quantile_relative_accuracy", m_ttft.relative_accuracy()},
  };
  // Where the time went (serving/time_breakdown.hpp, docs/metrics.md): the mean request's TTFT
  // by category (sums to ttft_mean_s), the GPUs' time by category as fractions of the simulated
  // time (sums to 1), and the loads' time by active bound as shares (sums to 1).
  for (const auto& c : TimeBreakdown::categories())
    if (c.field != &TimeBreakdown::idle_s)
      f.emplace_back(std::string("ttft_mean_") + c.name + "_s", ratio(m_time_sum.*c.field, n));
  for (const auto& c : TimeBreakdown::categories())
    if (c.field != &TimeBreakdown::queue_s)
      f.emplace_back(std::string("time_fraction_") + c.name, ratio(t.time.*c.field, sim));
  const double load_total = t.load_bounds.total();
  for (int b = 0; b < kLoadBounds; ++b)
    f.emplace_back(std::string("load_bound_share_") + load_bound_name(static_cast<LoadBound>(b)),
                   ratio(t.load_bounds[static_cast<LoadBound>(b)], load_total));
  // Engine-specific figures (issue 14: the replica engine's DP/EP/PP figures), last.
  f.insert(f.end(), t.extra.begin(), t.extra.end());
  for (const auto& kv : t.tier_levels) f.push_back(kv);  // issue 14: per tier level
  return f;
}

std::string SummaryBuilder::to_json(const Totals& t) const {
  const auto f = figures(t);
  std::string out = "{\n";
  for (std::size_t i = 0; i < f.size(); ++i) {
    out += "  " + json_escape(f[i].first) + ": ";
    out += std::isfinite(f[i].second) ? format_number(f[i].second) : std::string("null");
    out += i + 1 < f.size() ? ",\n" : "\n";
  }
  return out + "}\n";
}

}  // namespace kappasim
