#include "actors/aggregator.hpp"

#include "actors/messages.hpp"
#include "actors/project_logic.hpp"

#include <caf/all.hpp>

#include <spdlog/spdlog.h>

namespace cobble {

namespace {

struct aggregator_state {
  std::vector<project_actor> projects;
  clock_ptr clk;
  double interval = 600;
  static inline const char* name = "credit_aggregator";
};

using aggregator_ptr = aggregator_actor::stateful_pointer<aggregator_state>;

void schedule(aggregator_ptr self) {
  auto addr = self->address();
  self->state.clk->schedule(seconds_to_us(std::max(self->state.interval, 1.0)), [addr] {
    if (auto h = caf::actor_cast<caf::actor>(addr))
      caf::anon_send(h, atom::tick_v);
  });
}

/// Asks every project for its export; when all have answered (or failed), computes the table,
/// sends it to every project and calls `done` with it.
template <class Done>
void collect(aggregator_ptr self, Done done) {
  auto& st = self->state;
  auto pending = std::make_shared<std::size_t>(st.projects.size());
  auto exports = std::make_shared<std::vector<credit_export>>(st.projects.size());
  auto finish = [self, exports, done]() mutable {
    auto table = std::make_shared<plan_class_scales>(aggregate_scales(*exports));
    for (const auto& p : self->state.projects)
      self->send(p, atom::credit_v, plan_class_scales_ptr{table});
    done(plan_class_scales_ptr{table});
  };
  if (st.projects.empty()) {
    finish();
    return;
  }
  for (std::size_t i = 0; i < st.projects.size(); ++i)
    self->request(st.projects[i], std::chrono::seconds(30), atom::credit_v)
      .then(
        [pending, exports, finish, i](const credit_export_ptr& x) mutable {
          (*exports)[i] = *x;
          if (--*pending == 0)
            finish();
        },
        [pending, finish](caf::error& err) mutable {
          spdlog::warn("credit aggregator: a project did not export: {}", caf::to_string(err));
          if (--*pending == 0)
            finish();
        });
}

} // namespace

aggregator_actor spawn_aggregator(caf::actor_system& sys, std::vector<project_actor> projects,
                                  clock_ptr clk, double interval) {
  auto fn = [](aggregator_ptr self, std::vector<project_actor> ps, clock_ptr c,
               double every) -> aggregator_actor::behavior_type {
    self->state.projects = std::move(ps);
    self->state.clk = std::move(c);
    self->state.interval = every;
    schedule(self);
    return {
      [self](atom::credit) -> caf::result<plan_class_scales_ptr> {
        auto rp = self->make_response_promise<plan_class_scales_ptr>();
        collect(self, [rp](plan_class_scales_ptr t) mutable { rp.deliver(std::move(t)); });
        return rp;
      },
      [self](atom::tick) {
        collect(self, [](const plan_class_scales_ptr&) {});
        schedule(self);
      },
    };
  };
  return sys.spawn(fn, std::move(projects), std::move(clk), interval);
}

} // namespace cobble
