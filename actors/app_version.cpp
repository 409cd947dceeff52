#include "actors/app_version.hpp"

#include <caf/all.hpp>

namespace cobble {

namespace {

struct app_version_actor_state {
  app_version_state stats;
  std::uint16_t project = 0;
  static inline const char* name = "app_version";
};

} // namespace

app_version_actor spawn_app_version(caf::actor_system& sys, app_version_state initial,
                                    std::uint16_t project, log_actor log) {
  auto fn = [](app_version_actor::stateful_pointer<app_version_actor_state> self,
               app_version_state init, std::uint16_t proj,
               log_actor lg) -> app_version_actor::behavior_type {
    self->state.stats = std::move(init);
    self->state.project = proj;
    self->send(lg, atom::subscribe_v, std::vector<std::uint16_t>{ev::workunit_validated::kind},
               subscriber_actor{self});
    return {
      [self](atom::deliver, const event_batch_ptr& batch) {
        for (const auto& e : *batch)
          if (e.project == self->state.project)
            apply(self->state.stats, e);
      },
      [self](atom::state) {
        const auto& s = self->state.stats;
        double mean = s.n_valid > 0 ? s.elapsed_sum / static_cast<double>(s.n_valid) : 0;
        return caf::make_result(s.n_valid, s.n_invalid, mean);
      },
    };
  };
  return sys.spawn(fn, std::move(initial), project, std::move(log));
}

} // namespace cobble
