// spawn_pooled: sc_spawn for the short-lived dynamic threads of the serving hot path (a step's
// compute, a transfer's blocking call, a micro-batch), reusing threads whose work has ended
// instead of creating one per call (issue 24). SystemC 2.3.4 gives each new thread a coroutine
// stack of its own (mmap, page faults) and frees it (munmap: a TLB flush) when the ended thread
// is collected: 30% of a DP-8 + EP-8 run's time.
//
// The same schedule as sc_spawn: a new dynamic thread is pushed at the back of the runnable
// queue (sc_simcontext::create_thread_process → push_runnable_thread), and so is a thread woken
// by an immediate notification of the one event it waits for (sc_event::notify() → trigger →
// sc_thread_process::trigger_dynamic → push_runnable_thread). So an idle worker handed a job
// runs it at the same point of the same evaluation phase as a thread spawned for it would, and
// the other processes run in the same order. A worker ends its job as the spawned thread would
// (nothing waits for a dynamic thread's end here) and then waits for its next job, which no
// other process sees. Outside the evaluation phase (elaboration: an immediate notification is
// refused there) it calls sc_spawn. An exception a job throws ends its worker as it would end
// the spawned thread.
#pragma once

#include <functional>
#include <memory>
#include <systemc>
#include <utility>
#include <vector>

namespace kappasim {

namespace pooled_spawn_detail {

struct Worker {
  std::function<void()> job;
  sc_core::sc_event go;  // its next job is in `job`
};

struct Pool {
  sc_core::sc_simcontext* ctx = nullptr;
  std::vector<std::unique_ptr<Worker>> all;  // kept for the process's life (threads use them)
  std::vector<Worker*> idle;
};

inline Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: its events outlive no simulation context
  return *p;
}

inline void worker_loop(Worker* w) {
  for (;;) {
    {
      std::function<void()> job = std::move(w->job);
      w->job = nullptr;
      job();
    }
    pool().idle.push_back(w);
    sc_core::wait(w->go);
  }
}

}  // namespace pooled_spawn_detail

inline void spawn_pooled(std::function<void()> job) {
  namespace d = pooled_spawn_detail;
  sc_core::sc_simcontext* ctx = sc_core::sc_get_curr_simcontext();
  d::Pool& p = d::pool();
  if (p.ctx != ctx) {  // a new simulation context: the old one's workers are not ours to wake
    p.idle.clear();
    p.ctx = ctx;
  }
  if (!ctx->evaluation_phase()) {
    sc_core::sc_spawn(std::move(job));
    return;
  }
  if (!p.idle.empty()) {
    d::Worker* w = p.idle.back();
    p.idle.pop_back();
    w->job = std::move(job);
    w->go.notify();
    return;
  }
  p.all.push_back(std::make_unique<d::Worker>());
  d::Worker* w = p.all.back().get();
  w->job = std::move(job);
  sc_core::sc_spawn([w] { d::worker_loop(w); });
}

}  // namespace kappasim
