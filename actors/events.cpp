#include "actors/events.hpp"

#include <limits>
#include <utility>

namespace cobble {

namespace {

template <std::size_t I = 0>
const char* name_of_kind(std::uint16_t kind) {
  static constexpr const char* names[] = {"project_configured",
                                          "user_created",
                                          "host_registered",
                                          "host_described",
                                          "workunit_created",
                                          "results_created",
                                          "result_dispatched",
                                          "result_reported",
                                          "result_timed_out",
                                          "workunit_validated",
                                          "workunit_assimilated",
                                          "workunit_failed",
                                          "workunit_files_deleted",
                                          "sequence_created",
                                          "sequence_extended",
                                          "sequence_ended",
                                          "sequence_assigned",
                                          "sequence_deassigned",
                                          "sequence_element_checked",
                                          "sequence_restart_saved",
                                          "host_result_validated",
                                          "credit_normalized",
                                          "credit_imported",
                                          "autoflops_sampled",
                                          "output_received",
                                          "app_added",
                                          "app_version_added",
                                          "app_version_deprecated",
                                          "code_sign_key_added",
                                          "host_reattached",
                                          "result_written_off",
                                          "result_resent",
                                          "user_changed",
                                          "team_created",
                                          "workunit_cancelled"};
  static_assert(std::size(names) == std::variant_size_v<payload>);
  if (kind >= 1 && kind <= std::size(names))
    return names[kind - 1];
  return "unknown";
}

// Kinds are the variant's order + 1; this keeps them from drifting apart.
template <std::size_t... Is>
constexpr bool kinds_match(std::index_sequence<Is...>) {
  return ((std::variant_alternative_t<Is, payload>::kind == Is + 1) && ...);
}
static_assert(kinds_match(std::make_index_sequence<std::variant_size_v<payload>>{}),
              "event kinds must equal their position in the payload variant + 1");

} // namespace

time_us seconds_to_us(double s) {
  if (!(s == s))
    return 0;
  double us = s * 1e6;
  if (us >= static_cast<double>(std::numeric_limits<time_us>::max()))
    return std::numeric_limits<time_us>::max();
  if (us <= static_cast<double>(std::numeric_limits<time_us>::min()))
    return std::numeric_limits<time_us>::min();
  return static_cast<time_us>(us);
}

std::uint16_t kind_of(const payload& p) {
  return std::visit([](const auto& x) { return std::decay_t<decltype(x)>::kind; }, p);
}

namespace {

template <std::size_t I = 0>
std::uint8_t version_of_kind(std::uint16_t kind) {
  if constexpr (I < std::variant_size_v<payload>) {
    using T = std::variant_alternative_t<I, payload>;
    if (T::kind == kind)
      return payload_version_of<T>();
    return version_of_kind<I + 1>(kind);
  } else {
    return 0;
  }
}

} // namespace

std::uint8_t payload_version(std::uint16_t kind) {
  return version_of_kind(kind);
}

const char* kind_name(std::uint16_t kind) {
  return name_of_kind(kind);
}

} // namespace cobble
