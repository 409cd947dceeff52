#include "actors/error.hpp"
#include "actors/project_logic_detail.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

namespace cobble {

using namespace detail;

namespace detail {

/// What two successful replicas must share to agree, under the bitwise validator: the
/// server's digests of every output the result was sent to produce (never the md5 the
/// client reported); nullopt while one has not arrived.
std::optional<std::string>
signature(const workunit_rec& wu, const app_rec* app, const result_rec& r) {
  return received_signature(*r.arrived, declared_outputs(wu, app));
}

verdict make_verdict(const result_rec& r, std::uint32_t index, bool valid) {
  return verdict{index, valid, r.host, r.version.app_version_id, r.report->elapsed, r.report->cpu};
}

std::optional<double> min_avg_pfc_of(const project_state& st, std::uint32_t app) {
  if (auto m = st.min_avg_pfc.find(app); m != st.min_avg_pfc.end())
    return m->second;
  return std::nullopt;
}

/// The claimed credit of one valid replica, from what dispatch, the report and the last
/// normalization recorded.
credit_rec claim_of(const project_state& st, const app_rec* app, const workunit_rec& wu,
                    const result_rec& r, time_us now) {
  replica_credit_input in;
  in.elapsed = r.report->elapsed;
  in.elapsed_plausible = (r.report->flags & flag_bad_elapsed) == 0;
  in.peak_flops = r.peak_flops;
  in.anonymous = is_anonymous_version(r.version.app_version_id);
  if (auto v = st.version_credit.find(r.version.app_version_id); v != st.version_credit.end()) {
    in.version_pfc = v->second.pfc;
    in.version_scale = v->second.scale;
  }
  in.host_pfc = r.scale->host_pfc;
  // Cherry-picking protection: not before host_scale_time, and not while on probation.
  in.probation = app != nullptr && app->host_scale_check
                 && (r.probation || now < r.scale->scale_time);
  return claim_credit(in, wu.params->rsc_fpops_est, wu.params->rsc_fpops_bound,
                      min_avg_pfc_of(st, wu.app), st.credit);
}

/// True when an app version (configured or anonymous) runs on a GPU.
bool gpu_version(const app_rec* app, std::uint32_t id) {
  if (is_anonymous_version(id))
    return (id & 0xfu) != 2; // anonymous_version_id: 2 + resource
  if (app != nullptr)
    for (const auto& v : app->versions)
      if (v.id == id)
        return v.resource != static_cast<std::uint8_t>(resource_type::cpu);
  return false;
}

/// What AutoFlops learns from valid results of a workunit: the canonical result's app units
/// against the prediction (when `canonical` is set) and each valid replica's
/// raw_flops_per_au = T × raw_flops_per_sec(J) / A (the client's figure when it sent one,
/// else peak_flops(J)). With a reference job only that workunit's replicas are samples.
std::optional<ev::autoflops_sampled>
autoflops_sample(const app_rec* app, const workunit_rec& wu,
                 const std::vector<std::uint32_t>& valid, std::optional<std::uint32_t> canonical) {
  if (app == nullptr)
    return std::nullopt;
  ev::autoflops_sampled x;
  x.app = app->id;
  x.wu = wu.id;
  if (canonical && *canonical < wu.results.size()) {
    x.predicted = wu.params->predicted_app_units;
    // A report without app units (BOINC clients) is no actual sample: 0.
    x.actual = std::max(wu.results[*canonical].report->app_units, 0.0);
  }
  bool reference_only = !app->autoflops.reference_job.empty();
  if (!reference_only || wu.name == app->autoflops.reference_job)
    for (auto i : valid) {
      if (i >= wu.results.size())
        continue;
      const auto& r = wu.results[i];
      if ((r.report->flags & flag_bad_elapsed) != 0)
        continue;
      double v = r.report->raw_flops_per_au;
      if (!(v > 0) || !std::isfinite(v))
        v = raw_flops_per_au(r.report->elapsed, r.peak_flops,
                             r.report->app_units > 0 ? r.report->app_units
                                                     : wu.params->predicted_app_units)
              .value_or(0);
      if (v > 0)
        x.samples.push_back({v, gpu_version(app, r.version.app_version_id)});
    }
  if (!(x.predicted > 0) && x.samples.empty())
    return std::nullopt;
  return x;
}

/// The app_units credit policy: every valid replica is granted app.mean_app_units ×
/// app.est_flops_per_au FLOPs in Cobblestones, once est_flops_per_au exists (the PFC grant
/// until then). The PFC figures stay in the record (samples for the averages).
void app_units_credit(const project_state& st, const app_rec* app, std::vector<credit_rec>& recs) {
  if (app == nullptr || app->autoflops.policy != credit_policy::app_units)
    return;
  auto i = st.autoflops.find(app->id);
  if (i == st.autoflops.end() || !(i->second.est_flops_per_au > 0) || i->second.actual.n == 0)
    return;
  double c = cobblestones(i->second.actual.mean * i->second.est_flops_per_au, st.credit);
  for (auto& r : recs) {
    r.claimed = r.granted = c;
    r.flags |= credit_app_units;
  }
}

} // namespace detail

std::vector<event> project_logic::transition(id_type wu_id, time_us now) {
  std::vector<event> out;
  auto wit = state.workunits.find(wu_id);
  if (wit == state.workunits.end())
    return out;
  const auto& wu = wit->second;
  if (ended_unfinished(wu.state))
    return out;
  auto app = state.app(wu.app);
  bool accept_all = app != nullptr && app->validator == 1;
  // A success whose outputs have not all arrived is invalid under every validator (there is
  // nothing to compare or assimilate), as BOINC marks a result whose file is missing.
  auto arrived = [&](const result_rec& r) { return signature(wu, app, r).has_value(); };
  auto agree = [&](const result_rec& a, const result_rec& b) {
    auto sa = signature(wu, app, a), sb = signature(wu, app, b);
    return sa && sb && (accept_all || *sa == *sb);
  };
  if (!wu.canonical && wu.state != wu_state::assimilated && !wu.sequence) {
    ev::workunit_validated missing{wu.id, std::nullopt, {}, {}};
    for (std::uint32_t i = 0; i < wu.results.size(); ++i) {
      const auto& r = wu.results[i];
      if (r.outcome == result_outcome::success && r.validation == validate_state::init
          && !arrived(r)) {
        missing.verdicts.push_back(make_verdict(r, i, false));
        missing.credit.emplace_back();
      }
    }
    if (!missing.verdicts.empty())
      emit(out, std::move(missing), now);
  }
  if (wu.canonical) {
    // Late successes are checked against the canonical result.
    const auto& canon = wu.results[*wu.canonical];
    ev::workunit_validated v{wu.id, std::nullopt, {}, {}};
    for (std::uint32_t i = 0; i < wu.results.size(); ++i) {
      const auto& r = wu.results[i];
      if (r.outcome == result_outcome::success && r.validation == validate_state::init) {
        bool valid = agree(r, canon);
        v.verdicts.push_back(make_verdict(r, i, valid));
        // A late valid result gets the credit the quorum was granted.
        credit_rec c;
        if (valid) {
          c = claim_of(state, app, wu, r, now);
          c.granted = canon.credit->granted;
        }
        v.credit.push_back(c);
      }
    }
    std::vector<std::uint32_t> late_valid;
    for (std::size_t k = 0; k < v.verdicts.size(); ++k)
      if (v.verdicts[k].valid)
        late_valid.push_back(v.verdicts[k].index);
    auto sample = autoflops_sample(app, wu, late_valid, std::nullopt);
    if (!v.verdicts.empty())
      emit(out, std::move(v), now);
    if (sample)
      emit(out, std::move(*sample), now);
    if (wu.state == wu_state::validated)
      emit(out, ev::workunit_assimilated{wu.id, *wu.canonical}, now);
    return out;
  }
  if (wu.state == wu_state::assimilated)
    return out;
  if (wu.sequence) {
    // A sequence element has one result. Alone it is valid when it succeeds; replicated,
    // when the corresponding element of the other chain agrees. Errors and timeouts make no
    // replacement here: the sequence relocates.
    const auto& link = *wu.sequence;
    if (link.dead || wu.results.empty())
      return out;
    const auto& r = wu.results[0];
    if (r.outcome != result_outcome::success || r.validation != validate_state::init)
      return out;
    if (!arrived(r)) {
      emit(out,
           ev::workunit_validated{wu.id, std::nullopt, {make_verdict(r, 0, false)}, {credit_rec{}}},
           now);
      return out;
    }
    if (!link.replicated || link.check == seq_check::agree) {
      // Credit as for a workunit validated alone: the element's own claim, granted through
      // the same path (host_result_validated follows from the verdict).
      std::vector<credit_rec> claims{claim_of(state, app, wu, r, now)};
      grant_credit(claims, wu.params->rsc_fpops_est, min_avg_pfc_of(state, wu.app), state.credit);
      app_units_credit(state, app, claims);
      auto sample = autoflops_sample(app, wu, {0}, 0u);
      emit(out, ev::workunit_validated{wu.id, 0u, {make_verdict(r, 0, true)}, claims}, now);
      if (sample)
        emit(out, std::move(*sample), now);
      emit(out, ev::workunit_assimilated{wu.id, 0}, now);
    } else if (link.check == seq_check::disagree) {
      emit(out,
           ev::workunit_validated{wu.id, std::nullopt, {make_verdict(r, 0, false)}, {credit_rec{}}},
           now);
    }
    return out;
  }
  const wu_params& p = *wu.params;
  int errors = 0, active = 0;
  std::vector<std::uint32_t> successes;
  for (std::uint32_t i = 0; i < wu.results.size(); ++i) {
    const auto& r = wu.results[i];
    if (r.state != result_state::over)
      ++active;
    else if (r.outcome == result_outcome::client_error || r.outcome == result_outcome::no_reply)
      ++errors;
    else if (r.outcome == result_outcome::success && r.validation != validate_state::invalid)
      successes.push_back(i);
  }
  if (errors > p.max_error_results) {
    emit(out, ev::workunit_failed{wu.id, "too many errors (" + std::to_string(errors) + ")"}, now);
    return out;
  }
  // Largest group of agreeing successes.
  std::vector<std::uint32_t> best;
  for (auto i : successes) {
    std::vector<std::uint32_t> group;
    for (auto j : successes)
      if (agree(wu.results[i], wu.results[j]))
        group.push_back(j);
    if (group.size() > best.size())
      best = std::move(group);
  }
  if (static_cast<int>(best.size()) >= p.min_quorum && app != nullptr
      && app->autoflops.policy == credit_policy::app_units && p.min_quorum == 1) {
    // Cherry-picking countermeasure: a job validated alone is sometimes checked by a second
    // host: at random, and always when its host is under suspicion.
    const auto& r = wu.results[best.front()];
    bool suspect = (r.report->flags & flag_suspect) != 0;
    if (suspect || unit_draw(wu.id, 0x636865636bULL) < app->autoflops.resend_probability) {
      emit(out,
           ev::results_created{wu.id, 1,
                               suspect ? "cherry-picking check (host under suspicion)"
                                       : "cherry-picking check (random)",
                               true},
           now);
      return out;
    }
  }
  if (static_cast<int>(best.size()) >= p.min_quorum) {
    ev::workunit_validated v{wu.id, best.front(), {}, {}};
    std::vector<credit_rec> claims;
    claims.reserve(best.size());
    for (auto i : best)
      claims.push_back(claim_of(state, app, wu, wu.results[i], now));
    grant_credit(claims, wu.params->rsc_fpops_est, min_avg_pfc_of(state, wu.app), state.credit);
    app_units_credit(state, app, claims);
    for (auto i : successes) {
      auto pos = std::find(best.begin(), best.end(), i);
      bool valid = pos != best.end();
      v.verdicts.push_back(make_verdict(wu.results[i], i, valid));
      v.credit.push_back(valid ? claims[static_cast<std::size_t>(pos - best.begin())]
                               : credit_rec{});
    }
    auto canonical = best.front();
    auto sample = autoflops_sample(app, wu, best, canonical);
    emit(out, std::move(v), now);
    if (sample)
      emit(out, std::move(*sample), now);
    emit(out, ev::workunit_assimilated{wu.id, canonical}, now);
    return out;
  }
  if (static_cast<int>(successes.size()) > p.max_success_results) {
    emit(out,
         ev::workunit_failed{wu.id, "no consensus among " + std::to_string(successes.size())
                                      + " successful results"},
         now);
    return out;
  }
  int needed = p.min_quorum - static_cast<int>(best.size()) - active;
  if (static_cast<int>(successes.size()) >= p.min_quorum)
    needed = std::max(needed, 1 - active); // inconclusive: one more opinion at a time
  if (needed <= 0)
    return out;
  if (static_cast<int>(wu.results.size()) + needed > p.max_total_results) {
    emit(out, ev::workunit_failed{wu.id, "too many total results"}, now);
    return out;
  }
  emit(out,
       ev::results_created{wu.id, static_cast<std::uint32_t>(needed),
                           successes.size() >= static_cast<std::size_t>(p.min_quorum)
                             ? "inconclusive"
                             : "replacing errors or timeouts"},
       now);
  return out;
}

std::map<id_type, std::vector<validation_notice>>
project_logic::notices(const event& validated) const {
  std::map<id_type, std::vector<validation_notice>> out;
  auto x = std::get_if<ev::workunit_validated>(&validated.data);
  if (x == nullptr)
    return out;
  auto wu = state.workunit(x->wu);
  if (wu == nullptr)
    return out;
  double est = wu->params->rsc_fpops_est;
  for (std::size_t k = 0; k < x->verdicts.size(); ++k) {
    const auto& v = x->verdicts[k];
    if (v.index >= wu->results.size())
      continue;
    const auto& r = wu->results[v.index];
    ev::host_result_validated n;
    n.host = v.host;
    n.result = {x->wu, v.index};
    n.app_version_id = v.app_version_id;
    n.valid = v.valid;
    if (k < x->credit.size()) {
      const auto& c = x->credit[k];
      n.pfc_sample = c.pfc_sample;
      n.cheat = (c.flags & credit_one_time_cheat) != 0;
      n.granted = c.granted;
    }
    if (v.valid && est > 0 && (r.report->flags & flag_bad_elapsed) == 0 && r.report->elapsed > 0)
      n.et_sample = r.report->elapsed / est;
    out[v.host].push_back(validation_notice{state.result_name(n.result), n});
  }
  return out;
}

} // namespace cobble
