#include "actors/app_version.hpp"

#include <caf/all.hpp>

namespace cobble {

namespace {

struct app_version_actor_state {
  app_version_state stats;
  std::uint16_t project = 0;
  credit_settings credit;
  static inline const char* name = "app_version";
};

} // namespace

app_version_actor spawn_app_version(caf::actor_system& sys, app_version_state initial,
                                    std::uint16_t project, credit_settings credit) {
  auto fn = [](app_version_actor::stateful_pointer<app_version_actor_state> self,
               app_version_state init, std::uint16_t proj,
               credit_settings cs) -> app_version_actor::behavior_type {
    self->state.stats = std::move(init);
    self->state.project = proj;
    self->state.credit = cs;
    return {
      // The events that change this version's statistics, routed by its project.
      [self](atom::deliver, const event_batch_ptr& batch) {
        for (const auto& e : *batch) {
          if (e.project != self->state.project)
            continue;
          // The settings follow the project's configuration, as in replay.
          if (auto c = std::get_if<ev::project_configured>(&e.data))
            self->state.credit = c->credit;
          apply(self->state.stats, e, self->state.credit);
        }
      },
      [self](atom::state) -> app_version_state_ptr {
        return std::make_shared<app_version_state>(self->state.stats);
      },
    };
  };
  return sys.spawn(fn, std::move(initial), project, credit);
}

} // namespace cobble
