#include "serving/scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/error.hpp"

namespace kappasim {

Sequence make_sequence(const Request& r, std::int64_t cached_tokens) {
  Sequence s;
  s.req = r;
  const std::int64_t prompt = r.prompt_tokens();
  if (prompt < 1)
    throw std::logic_error("make_sequence: request " + std::to_string(r.id) +
                           " has an empty prompt");
  s.cached_tokens = std::clamp<std::int64_t>(cached_tokens, 0, prompt - 1);
  s.compute_tokens = prompt - s.cached_tokens;
  return s;
}

const std::vector<std::pair<const char*, Policy>>& policy_names() {
  static const std::vector<std::pair<const char*, Policy>> names = {
      {"fifo", Policy::Fifo}, {"utilization", Policy::UtilizationAware}, {"fair", Policy::Fair}};
  return names;
}

const char* policy_name(Policy p) {
  for (const auto& [name, value] : policy_names())
    if (value == p) return name;
  return "?";
}

Scheduler::Scheduler(SchedulerConfig cfg) : m_cfg(cfg) {
  if (m_cfg.max_num_batched_tokens < 1)
    throw std::invalid_argument("Scheduler: max_num_batched_tokens must be >= 1");
  if (m_cfg.max_num_seqs < 1) throw std::invalid_argument("Scheduler: max_num_seqs must be >= 1");
  if (!(m_cfg.fairness_max_wait_s >= 0))
    throw std::invalid_argument("Scheduler: fairness_max_wait_s must be >= 0");
}

void Scheduler::enqueue(Sequence* s, double now) {
  if (!s) throw std::logic_error("Scheduler::enqueue: null sequence");
  if (s->compute_tokens < 1 || s->cached_tokens < 0 || s->computed != 0 || s->kv_allocated)
    throw std::logic_error("Scheduler::enqueue: request " + std::to_string(s->req.id) +
                           " must have compute_tokens >= 1, cached_tokens >= 0 and nothing "
                           "computed or allocated yet");
  if (!m_cfg.chunked_prefill && s->compute_tokens > m_cfg.max_num_batched_tokens)
    throw InputError("request " + std::to_string(s->req.id) + " needs " +
                     std::to_string(s->compute_tokens) +
                     " prefill tokens in one step but max_num_batched_tokens is " +
                     std::to_string(m_cfg.max_num_batched_tokens) +
                     " and chunked prefill is off: enable chunked_prefill or raise the budget");
  s->enqueue_s = now;
  m_waiting.push_back(s);
}

std::int64_t Scheduler::tokens_for(const Sequence& s, std::int64_t budget) const {
  const std::int64_t rem = s.remaining();
  if (m_cfg.chunked_prefill) return std::min(rem, budget);
  return rem <= budget ? rem : 0;
}

void Scheduler::admit(Sequence* s, std::int64_t tokens, double now, PagedKv& kv,
                      StepPlan& plan) {
  kv.allocate(s->req.id, s->prompt_tokens());
  s->kv_allocated = true;
  s->first_scheduled_s = now;
  m_running.push_back(s);
  plan.items.push_back({s, tokens, true, tokens == s->remaining()});
  plan.tokens += tokens;
  plan.load_tokens += s->cached_tokens;
}

void Scheduler::reject(Sequence* s, double now) {
  s->rejected = true;
  s->finish_s = now;
  m_finished.push_back(s);
}

StepPlan Scheduler::plan(double now, PagedKv& kv) {
  if (m_in_flight)
    throw std::logic_error("Scheduler::plan: the previous step has not been completed");
  StepPlan plan;
  std::int64_t budget = m_cfg.max_num_batched_tokens;

  // 1. Running sequences, in admission order.
  for (Sequence* s : m_running) {
    if (budget == 0) break;
    const std::int64_t t = std::min(s->remaining(), budget);
    plan.items.push_back({s, t, false, t == s->remaining()});
    plan.tokens += t;
    budget -= t;
  }

  // 2. Admission.
  const auto seats = [&] { return static_cast<std::size_t>(m_cfg.max_num_seqs); };
  const auto never_fits = [&](const Sequence& s) {
    return kv.blocks_for(s.prompt_tokens()) > kv.total_blocks();
  };
  std::vector<Sequence*> passed_over;  // skipped, with a later arrival admitted after them
  std::size_t passed_over_credited = 0;
  bool hold = false;  // Fair: an urgent sequence does not fit, admit nothing else

  if (m_cfg.policy == Policy::Fair) {
    for (auto it = m_waiting.begin(); it != m_waiting.end();) {
      Sequence* s = *it;
      if (now - s->enqueue_s < m_cfg.fairness_max_wait_s) {
        ++it;
        continue;
      }
      if (budget == 0 || m_running.size() >= seats()) {
        hold = true;
        break;
      }
      if (never_fits(*s)) {
        reject(s, now);
        it = m_waiting.erase(it);
        continue;
      }
      const std::int64_t t = tokens_for(*s, budget);
      if (t == 0 || !kv.can_allocate(s->prompt_tokens())) {
        hold = true;
        break;
      }
      admit(s, t, now, kv, plan);
      budget -= t;
      it = m_waiting.erase(it);
    }
  }

  if (!hold) {
    for (auto it = m_waiting.begin(); it != m_waiting.end();) {
      if (budget == 0 || m_running.size() >= seats()) break;
      Sequence* s = *it;
      if (never_fits(*s)) {
        reject(s, now);
        it = m_waiting.erase(it);
        continue;
      }
      const std::int64_t t = tokens_for(*s, budget);
      const bool fits = t > 0 && kv.can_allocate(s->prompt_tokens());
      if (!fits) {
        if (m_cfg.policy == Policy::Fifo) break;  // head-of-line blocking
        passed_over.push_back(s);
        ++it;
        continue;
      }
      admit(s, t, now, kv, plan);
      budget -= t;
      passed_over_credited = passed_over.size();
      it = m_waiting.erase(it);
    }
  }
  for (std::size_t i = 0; i < passed_over_credited; ++i) passed_over[i]->credit += 1;

  if (plan.tokens > m_cfg.max_num_batched_tokens)
    throw std::logic_error("Scheduler::plan: token budget exceeded");
  m_in_flight = !plan.items.empty();
  return plan;
}

void Scheduler::complete(const StepPlan& plan, double now, PagedKv& kv) {
  if (plan.items.empty()) return;
  if (!m_in_flight) throw std::logic_error("Scheduler::complete: no step is outstanding");
  m_in_flight = false;
  bool any_finished = false;
  for (const StepItem& item : plan.items) {
    Sequence* s = item.seq;
    if (!s || !s->kv_allocated || s->finish_s >= 0)
      throw std::logic_error("Scheduler::complete: the plan names a sequence that is not running");
    s->computed += item.tokens;
    if (s->computed > s->compute_tokens)
      throw std::logic_error("Scheduler::complete: request " + std::to_string(s->req.id) +
                             " computed more tokens than its prompt needs");
    if (s->computed == s->compute_tokens) {
      s->finish_s = now;
      kv.release(s->req.id);
      s->kv_allocated = false;
      m_finished.push_back(s);
      any_finished = true;
    }
  }
  if (any_finished)
    m_running.erase(std::remove_if(m_running.begin(), m_running.end(),
                                   [](const Sequence* s) { return s->finish_s >= 0; }),
                    m_running.end());
}

std::vector<Sequence*> Scheduler::take_finished() {
  std::vector<Sequence*> out;
  out.swap(m_finished);
  return out;
}

double jain_index(const std::vector<double>& x) {
  double sum = 0, sum_sq = 0;
  for (double v : x) {
    if (!(v >= 0) || !std::isfinite(v))
      throw std::invalid_argument("jain_index: values must be finite and >= 0");
    sum += v;
    sum_sq += v * v;
  }
  if (x.empty() || sum_sq == 0) return 1;
  return sum * sum / (static_cast<double>(x.size()) * sum_sq);
}

}  // namespace kappasim
