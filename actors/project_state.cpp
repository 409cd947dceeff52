#include "actors/state.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <stdexcept>
#include <tuple>

namespace cobble {

std::uint64_t cpid_key(std::string_view cpid) {
  if (cpid.empty())
    return 0;
  std::uint64_t h = 14695981039346656037ULL; // FNV-1a, 64 bits
  for (unsigned char c : cpid) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h == 0 ? 1 : h;
}

std::uint64_t traits_key(const host_info_rec& info) {
  if (info.domain_name.empty() || info.os_name.empty() || info.p_model.empty())
    return 0;
  std::uint64_t h = 14695981039346656037ULL; // FNV-1a, 64 bits, over the fields and separators
  auto add = [&](std::string_view text) {
    for (unsigned char c : text) {
      h ^= c;
      h *= 1099511628211ULL;
    }
    h ^= 0xff; // no field ends inside another
    h *= 1099511628211ULL;
  };
  add(info.domain_name);
  add(info.os_name);
  add(info.p_model);
  add(std::to_string(std::llround(info.m_nbytes)));
  return h == 0 ? 1 : h;
}

std::string fold_case(std::string_view text) {
  std::string out{text};
  for (auto& c : out)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  return out;
}

namespace {

/// Adds a team to the directory and its name index.
void add_team(project_state& s, team_rec t) {
  s.team_by_name.emplace(fold_case(t.name), t.id);
  s.next_team = std::max(s.next_team, t.id + 1);
  s.team_dir[t.id] = std::move(t);
}

/// The key of host_by_cpid: a user's hosts apart from every other user's.
std::uint64_t user_cpid_key(id_type user, std::uint64_t cpid) {
  std::uint64_t h = cpid ^ (user * 0x9e3779b97f4a7c15ULL);
  h ^= h >> 31;
  return h * 0xbf58476d1ce4e5b9ULL;
}

/// The app with this id (index + 1), for apply; null if none.
app_rec* mutable_app(project_state& s, std::uint32_t id) {
  return id >= 1 && id <= s.apps.size() ? &s.apps[id - 1] : nullptr;
}

result_rec* find_result(project_state& s, result_ref r) {
  auto i = s.workunits.find(r.wu);
  if (i == s.workunits.end() || r.index >= i->second.results.size())
    return nullptr;
  return &i->second.results[r.index];
}

/// True when `name` is the name create_work generates for workunit `id` of app `app`
/// ("<app>_wu<id>"); such names are not indexed.
bool is_generated_name(const project_state& s, std::uint32_t app, id_type id,
                       std::string_view name) {
  auto a = s.app(app);
  if (a == nullptr || name.size() <= a->name.size() + 3 || name.substr(0, a->name.size()) != a->name
      || name.substr(a->name.size(), 3) != "_wu")
    return false;
  auto digits = name.substr(a->name.size() + 3);
  if (digits.front() == '0')
    return false;
  id_type n = 0;
  auto [ptr, err] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  return err == std::errc{} && ptr == digits.data() + digits.size() && n == id;
}

void mark_unneeded(workunit_rec& wu) {
  for (auto& r : wu.results)
    if (r.state == result_state::unsent) {
      r.state = result_state::over;
      r.outcome = result_outcome::didnt_need;
    }
}

/// Creates the workunit of a sequence element (one result; never in the job cache: the
/// sequence's actor decides where it goes).
void add_sequence_wu(project_state& s, const event& e, const seq_entry& seq,
                     const seq_element_rec& x, const wu_params* params = nullptr) {
  if (s.workunits.count(x.wu))
    return;
  auto& wu = s.workunits[x.wu];
  wu.id = x.wu;
  wu.name = x.name;
  wu.app = seq.app;
  wu.params = params ? *params : seq.params;
  wu.created = e.time;
  wu.sequence = seq_link{
    seq.id, x.replica, x.position, x.kind, seq.hosts.size() > 1, seq_check::pending, false, {}, 0};
  wu.results.emplace_back();
  s.wu_by_name[x.name] = x.wu;
  ++s.counters.workunits_created;
  ++s.counters.results_created;
  ++s.active_workunits;
  for (const auto& in : wu.params->inputs)
    ++s.input_refs[in.name];
}

/// The inputs of the first element after a restart point: the state files replace the
/// sequence's inputs of the same open name and are added when no input has it.
wu_params restart_params(const wu_params& base, const ev::sequence_deassigned& x) {
  auto p = base;
  for (std::size_t i = 0; i < x.restart_inputs.size() && i < x.restart_open_names.size(); ++i) {
    const auto& open = x.restart_open_names[i];
    auto it = std::find(p.input_open_names.begin(), p.input_open_names.end(), open);
    if (it != p.input_open_names.end() && p.inputs.size() == p.input_open_names.size()) {
      p.inputs[static_cast<std::size_t>(it - p.input_open_names.begin())] = x.restart_inputs[i];
    } else {
      p.inputs.push_back(x.restart_inputs[i]);
      p.input_open_names.push_back(open);
    }
  }
  return p;
}

/// Releases the state files a sequence element keeps: they stop counting as used and are
/// deleted a grace period later.
void release_state(project_state& s, workunit_rec& wu, time_us now) {
  if (!wu.sequence || wu.sequence->staged.empty() || wu.sequence->released != 0)
    return;
  wu.sequence->released = std::max<time_us>(now, 1);
  for (const auto& name : wu.sequence->staged)
    if (auto r = s.input_refs.find(name); r != s.input_refs.end() && --r->second == 0)
      s.input_refs.erase(r);
}

/// Every workunit a sequence created (their ids follow each other from sequence_wu_id(seq, 0)).
template <class F>
void for_each_sequence_wu(project_state& s, id_type seq, F&& f) {
  for (std::uint32_t n = 0; n < max_sequence_wus; ++n) {
    auto i = s.workunits.find(sequence_wu_id(seq, n));
    if (i == s.workunits.end())
      return;
    f(i->second);
  }
}

/// A sequence element that is no longer wanted: its result is not needed any more and an
/// unfinished workunit fails with the reason.
void retire_sequence_wu(project_state& s, const event& e, id_type id, const std::string& why) {
  auto i = s.workunits.find(id);
  if (i == s.workunits.end())
    return;
  auto& wu = i->second;
  if (wu.sequence)
    wu.sequence->dead = true;
  if (wu.state != wu_state::active)
    return;
  for (auto& r : wu.results)
    if (r.state != result_state::over) {
      r.state = result_state::over;
      r.outcome = result_outcome::didnt_need;
    }
  wu.state = wu_state::failed;
  wu.failure = why;
  wu.finished = e.time;
  ++s.counters.workunits_failed;
  if (s.active_workunits > 0)
    --s.active_workunits;
}

void add_results(project_state& s, workunit_rec& wu, std::uint32_t count) {
  for (std::uint32_t i = 0; i < count; ++i) {
    auto index = static_cast<std::uint32_t>(wu.results.size());
    wu.results.emplace_back();
    s.unsent[wu.app].push_back({wu.id, index});
  }
  s.counters.results_created += count;
}

/// Holds the idempotency key of a batch whose first workunit `x` is, then lets go of the keys
/// past their retention and, beyond max_batch_keys, of the oldest (replay prunes the same).
void hold_batch_key(project_state& s, const ev::workunit_created& x, time_us now) {
  s.batch_keys.insert_or_assign(x.batch_key,
                                batch_key_rec{x.batch_digest, x.id, x.batch_size, now});
  std::erase_if(s.batch_keys,
                [&](const auto& kv) { return kv.second.created < now - batch_key_retention; });
  while (s.batch_keys.size() > max_batch_keys) {
    auto oldest = s.batch_keys.begin();
    for (auto i = s.batch_keys.begin(); i != s.batch_keys.end(); ++i)
      if (i->second.created < oldest->second.created)
        oldest = i;
    s.batch_keys.erase(oldest);
  }
}

/// Puts `host` at the head of `user`'s chain of hosts (hosts are registered in id order).
void link_user_host(project_state& s, id_type user, id_type host) {
  if (s.newest_host_of_user.size() <= user)
    s.newest_host_of_user.resize(user + 1, 0);
  if (s.older_host_of_user.size() <= host)
    s.older_host_of_user.resize(host + 1, 0);
  s.older_host_of_user[host] = s.newest_host_of_user[user];
  s.newest_host_of_user[user] = host;
}

} // namespace

// -- names --------------------------------------------------------------------

const char* to_string(result_state x) {
  switch (x) {
    case result_state::unsent:
      return "unsent";
    case result_state::in_progress:
      return "in_progress";
    case result_state::over:
      return "over";
  }
  return "?";
}

const char* to_string(result_outcome x) {
  switch (x) {
    case result_outcome::none:
      return "none";
    case result_outcome::success:
      return "success";
    case result_outcome::client_error:
      return "client_error";
    case result_outcome::no_reply:
      return "timed_out";
    case result_outcome::didnt_need:
      return "didnt_need";
    case result_outcome::client_detached:
      return "client_detached";
  }
  return "?";
}

const char* to_string(validate_state x) {
  switch (x) {
    case validate_state::init:
      return "unchecked";
    case validate_state::valid:
      return "valid";
    case validate_state::invalid:
      return "invalid";
  }
  return "?";
}

const char* result_words(const result_rec& r) {
  switch (r.state) {
    case result_state::unsent:
      return "unsent";
    case result_state::in_progress:
      return "in progress";
    case result_state::over:
      break;
  }
  switch (r.outcome) {
    case result_outcome::success:
      return r.validation == validate_state::valid     ? "valid"
             : r.validation == validate_state::invalid ? "invalid"
                                                       : "waiting for validation";
    case result_outcome::client_error:
      return r.report->client_state == client_state_aborted ? "aborted" : "client error";
    case result_outcome::no_reply:
      return "timed out";
    case result_outcome::didnt_need:
      return "not needed";
    case result_outcome::client_detached:
      return "written off";
    case result_outcome::none:
      break;
  }
  return "over";
}

std::optional<wu_state> parse_wu_state(std::string_view name) {
  for (auto s : {wu_state::active, wu_state::validated, wu_state::assimilated, wu_state::failed,
                 wu_state::cancelled})
    if (name == to_string(s))
      return s;
  return std::nullopt;
}

const char* to_string(wu_state x) {
  switch (x) {
    case wu_state::active:
      return "active";
    case wu_state::validated:
      return "validated";
    case wu_state::assimilated:
      return "assimilated";
    case wu_state::failed:
      return "failed";
    case wu_state::cancelled:
      return "cancelled";
  }
  return "?";
}

// -- wu_table -----------------------------------------------------------------

workunit_rec& wu_table::at(id_type id) {
  auto i = find(id);
  if (i == end())
    throw std::out_of_range("no workunit " + std::to_string(id));
  return i->second;
}

const workunit_rec& wu_table::at(id_type id) const {
  auto i = find(id);
  if (i == end())
    throw std::out_of_range("no workunit " + std::to_string(id));
  return i->second;
}

workunit_rec& wu_table::operator[](id_type id) {
  if (auto i = find(id); i != end())
    return i->second;
  // Appending the next dense id keeps every sparse id above the dense ones (an id already in
  // the map is found above), so iteration stays in id order.
  if (id == dense_.size() + 1) {
    dense_.emplace_back(std::piecewise_construct, std::forward_as_tuple(id),
                        std::forward_as_tuple());
    return dense_.back().second;
  }
  return sparse_[id];
}

bool operator==(const wu_table& a, const wu_table& b) {
  if (a.size() != b.size())
    return false;
  for (const auto& [id, wu] : a) {
    auto i = b.find(id);
    if (i == b.end() || !(i->second == wu))
      return false;
  }
  return true;
}

// -- project_state ------------------------------------------------------------

const app_rec* project_state::app(std::uint32_t id) const {
  if (id == 0 || id > apps.size())
    return nullptr;
  return &apps[id - 1];
}

const app_rec* project_state::app(std::string_view app_name) const {
  for (const auto& a : apps)
    if (a.name == app_name)
      return &a;
  return nullptr;
}

const workunit_rec* project_state::workunit(id_type id) const {
  auto i = workunits.find(id);
  return i == workunits.end() ? nullptr : &i->second;
}

const result_rec* project_state::result(result_ref r) const {
  auto wu = workunit(r.wu);
  if (wu == nullptr || r.index >= wu->results.size())
    return nullptr;
  return &wu->results[r.index];
}

std::optional<result_ref> project_state::parse_result_name(std::string_view text) const {
  auto split = split_indexed_name(text);
  if (!split)
    return std::nullopt;
  auto [base, replica] = *split;
  auto wu = find_workunit(base);
  if (wu == nullptr)
    return std::nullopt;
  result_ref r{wu->id, replica};
  if (result(r) == nullptr)
    return std::nullopt;
  return r;
}

const workunit_rec* project_state::find_workunit(std::string_view wu_name) const {
  if (auto i = wu_by_name.find(std::string{wu_name}); i != wu_by_name.end())
    return workunit(i->second);
  // A generated name: "<app>_wu<id>" (only the last "_wu" can be followed by the digits).
  auto pos = wu_name.rfind("_wu");
  if (pos == std::string_view::npos || pos == 0)
    return nullptr;
  id_type id = 0;
  auto digits = wu_name.substr(pos + 3);
  auto [ptr, err] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
  if (err != std::errc{} || ptr != digits.data() + digits.size())
    return nullptr;
  auto wu = workunit(id);
  return wu != nullptr && wu->name == wu_name ? wu : nullptr;
}

bool project_state::state_file_in_use(const workunit_rec& wu, const std::string& file) const {
  auto r = input_refs.find(file);
  if (r == input_refs.end())
    return false;
  std::uint32_t own = 0;
  if (!wu.files_deleted)
    own += static_cast<std::uint32_t>(
      std::count_if(wu.params->inputs.begin(), wu.params->inputs.end(),
                    [&](const file_rec& f) { return f.name == file; }));
  if (wu.sequence && wu.sequence->released == 0)
    own += static_cast<std::uint32_t>(
      std::count(wu.sequence->staged.begin(), wu.sequence->staged.end(), file));
  return r->second > own;
}

id_type project_state::host_with_cpid(id_type user, std::string_view cpid) const {
  auto key = cpid_key(cpid);
  if (key == 0)
    return 0;
  auto i = host_by_cpid.find(user_cpid_key(user, key));
  if (i == host_by_cpid.end())
    return 0;
  // The entry may be stale: the host reported another CPID since.
  auto h = hosts.find(i->second);
  return h != hosts.end() && h->second.user == user && h->second.cpid == key ? i->second : 0;
}

std::vector<id_type> project_state::hosts_of(id_type user, std::size_t max) const {
  std::vector<id_type> out;
  if (user >= newest_host_of_user.size())
    return out;
  for (auto h = newest_host_of_user[user]; h != 0 && out.size() < max;
       h = h < older_host_of_user.size() ? older_host_of_user[h] : 0)
    out.push_back(h);
  return out;
}

id_type project_state::user_with_email(std::string_view email) const {
  auto i = user_by_email.find(fold_case(email));
  return i == user_by_email.end() ? 0 : i->second;
}

id_type project_state::team_named(std::string_view team) const {
  auto i = team_by_name.find(fold_case(team));
  return i == team_by_name.end() ? 0 : i->second;
}

id_type project_state::host_with_traits(id_type user, const host_info_rec& info) const {
  auto key = traits_key(info);
  if (key == 0)
    return 0;
  auto i = host_by_traits.find(user_cpid_key(user, key));
  if (i == host_by_traits.end())
    return 0;
  auto h = hosts.find(i->second);
  return h != hosts.end() && h->second.user == user && h->second.traits == key ? i->second : 0;
}

const seq_entry* project_state::sequence(std::string_view key) const {
  if (auto i = seq_by_name.find(std::string{key}); i != seq_by_name.end())
    return &sequences.at(i->second);
  id_type id = 0;
  auto [ptr, err] = std::from_chars(key.data(), key.data() + key.size(), id);
  if (key.empty() || err != std::errc{} || ptr != key.data() + key.size())
    return nullptr;
  auto i = sequences.find(id);
  return i == sequences.end() ? nullptr : &i->second;
}

std::string project_state::result_name(result_ref r) const {
  auto wu = workunit(r.wu);
  std::string base = wu != nullptr ? wu->name : "wu" + std::to_string(r.wu);
  return base + "_" + std::to_string(r.index);
}

bool operator==(const project_state& a, const project_state& b) {
  return a.index == b.index && a.name == b.name && a.long_name == b.long_name && a.apps == b.apps
         && a.credit == b.credit && a.version_credit == b.version_credit
         && a.min_avg_pfc == b.min_avg_pfc && a.credit_imports == b.credit_imports
         && a.teams == b.teams && a.users == b.users && a.hosts == b.hosts
         && a.workunits == b.workunits && a.next_user == b.next_user && a.next_host == b.next_host
         && a.next_wu == b.next_wu && a.counters == b.counters && a.sequences == b.sequences
         && a.next_seq == b.next_seq && a.autoflops == b.autoflops && a.batch_keys == b.batch_keys
         && a.code_sign_keys == b.code_sign_keys && a.team_dir == b.team_dir
         && a.next_team == b.next_team;
}

void rebuild_indices(project_state& s) {
  s.user_by_auth.clear();
  s.user_by_email.clear();
  for (const auto& [id, u] : s.users) {
    s.user_by_auth.emplace(u.authenticator, id);
    if (!u.email.empty())
      s.user_by_email.emplace(fold_case(u.email), id); // in id order: the older one stays
  }
  s.team_by_name.clear();
  for (const auto& [id, t] : s.team_dir)
    s.team_by_name.emplace(fold_case(t.name), id);
  s.host_by_cpid.clear();
  s.host_by_traits.clear();
  s.newest_host_of_user.clear();
  s.older_host_of_user.clear();
  for (const auto& [id, h] : s.hosts) { // in id order: the newest host of a key stays
    link_user_host(s, h.user, id);
    if (h.cpid != 0)
      s.host_by_cpid[user_cpid_key(h.user, h.cpid)] = id;
    if (h.traits != 0)
      s.host_by_traits[user_cpid_key(h.user, h.traits)] = id;
  }
  s.wu_by_name.clear();
  s.seq_by_name.clear();
  for (const auto& [id, seq] : s.sequences)
    s.seq_by_name.emplace(seq.name, id);
  s.unsent.clear();
  s.deadlines = {};
  s.active_workunits = 0;
  s.input_refs.clear();
  // Unsent results are served in creation order: workunit id, then index (the table iterates
  // in id order).
  for (const auto& [id, wu] : s.workunits) {
    if (wu.sequence || !is_generated_name(s, wu.app, id, wu.name))
      s.wu_by_name.emplace(wu.name, id);
    if (!wu.files_deleted)
      for (const auto& in : wu.params->inputs)
        ++s.input_refs[in.name];
    if (wu.sequence && wu.sequence->released == 0)
      for (const auto& name : wu.sequence->staged)
        ++s.input_refs[name];
    if (wu.state == wu_state::active || wu.state == wu_state::validated)
      ++s.active_workunits;
    for (std::uint32_t i = 0; i < wu.results.size(); ++i) {
      const auto& r = wu.results[i];
      if (r.state == result_state::unsent && !wu.sequence)
        s.unsent[wu.app].push_back({id, i});
      else if (r.state == result_state::in_progress)
        s.deadlines.push({r.deadline, {id, i}});
    }
  }
}

void apply(project_state& s, const event& e) {
  std::visit(
    overload{
      [&](const ev::project_configured& x) {
        s.name = x.name;
        s.long_name = x.long_name;
        s.apps = x.apps;
        s.credit = x.credit;
      },
      [&](const ev::user_created& x) {
        s.users[x.id]
          = user_rec{x.id,   x.name,   x.email,   x.authenticator, e.time, {},
                     x.team, x.passwd, x.country, x.postal_code,   {},     x.cross_project_id};
        s.user_by_auth[x.authenticator] = x.id;
        if (!x.email.empty())
          s.user_by_email.emplace(fold_case(x.email), x.id);
        s.next_user = std::max(s.next_user, x.id + 1);
        // A team named by the configuration joins the directory with its first member.
        if (!x.team.empty() && s.team_named(x.team) == 0)
          add_team(s, team_rec{s.next_team, x.team, 0, e.time, {}, {}, {}});
      },
      [&](const ev::user_changed& x) {
        auto u = s.users.find(x.id);
        if (u == s.users.end())
          return;
        auto& r = u->second;
        if (fold_case(r.email) != fold_case(x.email)) {
          if (auto i = s.user_by_email.find(fold_case(r.email));
              i != s.user_by_email.end() && i->second == x.id)
            s.user_by_email.erase(i);
          if (!x.email.empty())
            s.user_by_email.emplace(fold_case(x.email), x.id);
        }
        r.name = x.name;
        r.email = x.email;
        r.passwd = x.passwd;
        r.country = x.country;
        r.postal_code = x.postal_code;
        r.url = x.url;
        r.team = x.team;
        if (!x.team.empty() && s.team_named(x.team) == 0)
          add_team(s, team_rec{s.next_team, x.team, 0, e.time, {}, {}, {}});
      },
      [&](const ev::team_created& x) {
        add_team(s, team_rec{x.id, x.name, x.founder, e.time, x.url, x.description, x.country});
        if (auto u = s.users.find(x.founder); u != s.users.end())
          u->second.team = x.name;
      },
      [&](const ev::host_registered& x) {
        auto cpid = cpid_key(x.info.host_cpid);
        auto traits = traits_key(x.info);
        if (!s.hosts.count(x.id))
          link_user_host(s, x.user, x.id);
        s.hosts[x.id] = host_reg{x.id, x.user, e.time, {}, cpid, traits};
        s.next_host = std::max(s.next_host, x.id + 1);
        if (cpid != 0)
          s.host_by_cpid[user_cpid_key(x.user, cpid)] = x.id;
        if (traits != 0)
          s.host_by_traits[user_cpid_key(x.user, traits)] = x.id;
      },
      [&](const ev::host_described& x) {
        auto h = s.hosts.find(x.id);
        if (h == s.hosts.end())
          return;
        auto cpid = cpid_key(x.info.host_cpid);
        if (cpid != 0 && cpid != h->second.cpid) {
          h->second.cpid = cpid;
          auto& newest = s.host_by_cpid[user_cpid_key(h->second.user, cpid)];
          newest = std::max(newest, x.id);
        }
        auto traits = traits_key(x.info);
        if (traits != h->second.traits) {
          h->second.traits = traits;
          if (traits != 0) {
            auto& newest = s.host_by_traits[user_cpid_key(h->second.user, traits)];
            newest = std::max(newest, x.id);
          }
        }
      },
      [&](const ev::workunit_created& x) {
        auto& wu = s.workunits[x.id];
        wu = workunit_rec{};
        wu.id = x.id;
        wu.name = x.name;
        wu.app = x.app;
        wu.params = x.params;
        // The workunits of a batch have equal parameters: one shared copy.
        if (auto prev = s.workunits.find(x.id - 1); prev != s.workunits.end())
          wu.params.share_if_equal(prev->second.params);
        wu.created = e.time;
        if (!is_generated_name(s, x.app, x.id, x.name))
          s.wu_by_name[x.name] = x.id;
        s.next_wu = std::max(s.next_wu, x.id + 1);
        ++s.counters.workunits_created;
        ++s.active_workunits;
        for (const auto& in : x.params.inputs)
          ++s.input_refs[in.name];
        wu.results.reserve(x.n_results);
        add_results(s, wu, x.n_results);
        if (!x.batch_key.empty())
          hold_batch_key(s, x, e.time);
      },
      [&](const ev::results_created& x) {
        auto i = s.workunits.find(x.wu);
        if (i == s.workunits.end())
          return;
        auto& wu = i->second;
        if (x.check) {
          // A cherry-picking check: the quorum needs the extra replicas too.
          // Parameters may be shared with the batch: this workunit gets its own copy.
          wu_params p = *wu.params;
          p.min_quorum += static_cast<int>(x.count);
          p.target_nresults += static_cast<int>(x.count);
          p.max_success_results = std::max(p.max_success_results, p.min_quorum);
          p.max_total_results = std::max(p.max_total_results,
                                         static_cast<int>(wu.results.size() + x.count));
          wu.params = std::move(p);
        }
        add_results(s, wu, x.count);
      },
      [&](const ev::result_dispatched& x) {
        if (auto r = find_result(s, x.result); r && r->state == result_state::unsent) {
          r->state = result_state::in_progress;
          r->host = x.host;
          r->sent = e.time;
          r->deadline = x.deadline;
          r->version = x.version;
          r->peak_flops = x.peak_flops;
          s.deadlines.push({x.deadline, x.result});
          ++s.counters.results_dispatched;
        }
      },
      [&](const ev::result_reported& x) {
        auto r = find_result(s, x.result);
        if (r == nullptr || r->host != x.host)
          return;
        // A late report replaces the outcome the result was given when it was over.
        bool late = x.late && r->state == result_state::over
                    && (r->outcome == result_outcome::no_reply
                        || r->outcome == result_outcome::client_detached);
        if (r->state == result_state::in_progress || late) {
          r->state = result_state::over;
          r->outcome = x.report.success ? result_outcome::success : result_outcome::client_error;
          r->received = e.time;
          r->report = x.report;
          r->probation = x.probation;
          r->scale = reported_scale{x.host_pfc, x.scale_time};
          ++s.counters.results_reported;
          if (late)
            ++s.counters.results_late;
        }
      },
      [&](const ev::output_received& x) {
        if (auto r = find_result(s, x.result); r && r->host == x.host) {
          auto arrived = *r->arrived;
          set_received(arrived, x.index, x.file);
          r->arrived = std::move(arrived);
        }
      },
      [&](const ev::result_timed_out& x) {
        if (auto r = find_result(s, x.result); r && r->state == result_state::in_progress) {
          r->state = result_state::over;
          r->outcome = result_outcome::no_reply;
          ++s.counters.results_timed_out;
        }
      },
      [&](const ev::workunit_validated& x) {
        auto i = s.workunits.find(x.wu);
        if (i == s.workunits.end())
          return;
        auto& wu = i->second;
        for (std::size_t k = 0; k < x.verdicts.size(); ++k) {
          const auto& v = x.verdicts[k];
          if (v.index >= wu.results.size())
            continue;
          auto& r = wu.results[v.index];
          r.validation = v.valid ? validate_state::valid : validate_state::invalid;
          if (k >= x.credit.size())
            continue;
          r.credit = x.credit[k];
          auto granted = x.credit[k].granted;
          if (!(granted > 0))
            continue;
          if (auto h = s.hosts.find(v.host); h != s.hosts.end()) {
            h->second.credit.add(granted, e.time, s.credit.credit_half_life);
            if (auto u = s.users.find(h->second.user); u != s.users.end()) {
              u->second.credit.add(granted, e.time, s.credit.credit_half_life);
              if (!u->second.credit_detail)
                u->second.credit_detail = user_credit{};
              record_grant(*u->second.credit_detail, wu.app, granted, e.time,
                           s.credit.credit_half_life);
              if (!u->second.team.empty())
                s.teams[u->second.team].add(granted, e.time, s.credit.credit_half_life);
            }
          }
        }
        if (x.canonical && !wu.canonical) {
          wu.canonical = x.canonical;
          wu.state = wu_state::validated;
          mark_unneeded(wu);
          ++s.counters.workunits_validated;
        }
      },
      [&](const ev::workunit_assimilated& x) {
        auto i = s.workunits.find(x.wu);
        if (i == s.workunits.end() || i->second.state == wu_state::assimilated)
          return;
        auto& wu = i->second;
        wu.state = wu_state::assimilated;
        wu.finished = e.time;
        ++s.counters.workunits_assimilated;
        if (s.active_workunits > 0)
          --s.active_workunits;
        // A full state upload of a sequence: its state files are staged as inputs and kept
        // for a relocation until the sequence releases them.
        auto app = s.app(wu.app);
        if (wu.sequence && wu.sequence->kind == seq_element_kind::state && app
            && x.canonical < wu.results.size() && wu.sequence->staged.empty()) {
          const auto& canonical = wu.results[x.canonical];
          auto files = state_files_of(canonical.report->outputs, *canonical.arrived,
                                      wu.name + "_" + std::to_string(x.canonical),
                                      app->output_names);
          for (const auto& f : files)
            if (std::find(wu.sequence->staged.begin(), wu.sequence->staged.end(), f.staged.name)
                == wu.sequence->staged.end()) {
              wu.sequence->staged.push_back(f.staged.name);
              ++s.input_refs[f.staged.name];
            }
          auto seq = s.sequences.find(wu.sequence->seq);
          if (wu.sequence->dead || seq == s.sequences.end() || seq->second.ended)
            release_state(s, wu, e.time);
        }
      },
      [&](const ev::workunit_cancelled& x) {
        auto i = s.workunits.find(x.wu);
        if (i == s.workunits.end() || i->second.state != wu_state::active)
          return;
        auto& wu = i->second;
        for (auto& r : wu.results)
          if (r.state != result_state::over) {
            r.state = result_state::over;
            r.outcome = result_outcome::didnt_need;
          }
        wu.state = wu_state::cancelled;
        wu.failure = "cancelled: " + x.reason;
        wu.finished = e.time;
        ++s.counters.workunits_cancelled;
        if (s.active_workunits > 0)
          --s.active_workunits;
      },
      [&](const ev::workunit_failed& x) {
        auto i = s.workunits.find(x.wu);
        if (i == s.workunits.end() || ended_unfinished(i->second.state))
          return;
        i->second.state = wu_state::failed;
        i->second.failure = x.reason;
        i->second.finished = e.time;
        mark_unneeded(i->second);
        ++s.counters.workunits_failed;
        if (s.active_workunits > 0)
          --s.active_workunits;
      },
      [&](const ev::workunit_files_deleted& x) {
        auto i = s.workunits.find(x.wu);
        if (i == s.workunits.end() || i->second.files_deleted)
          return;
        i->second.files_deleted = true;
        for (const auto& in : i->second.params->inputs)
          if (auto r = s.input_refs.find(in.name); r != s.input_refs.end() && --r->second == 0)
            s.input_refs.erase(r);
      },
      [&](const ev::sequence_created& x) {
        auto& seq = s.sequences[x.id];
        seq = seq_entry{x.id,     x.name,
                        x.app,    x.max_result_time,
                        x.params, std::vector<id_type>(std::max<std::uint8_t>(x.replicas, 1), 0),
                        false};
        s.seq_by_name[x.name] = x.id;
        s.next_seq = std::max(s.next_seq, x.id + 1);
        for (const auto& el : x.elements)
          add_sequence_wu(s, e, seq, el);
      },
      [&](const ev::sequence_extended& x) {
        auto i = s.sequences.find(x.seq);
        if (i == s.sequences.end())
          return;
        for (const auto& el : x.elements)
          add_sequence_wu(s, e, i->second, el);
      },
      [&](const ev::sequence_ended& x) {
        auto i = s.sequences.find(x.seq);
        if (i == s.sequences.end())
          return;
        i->second.ended = true;
        std::fill(i->second.hosts.begin(), i->second.hosts.end(), 0);
        for (auto wu : x.cancelled)
          retire_sequence_wu(s, e, wu, "cancelled: the sequence ended");
        for_each_sequence_wu(s, x.seq, [&](workunit_rec& wu) { release_state(s, wu, e.time); });
      },
      [&](const ev::sequence_assigned& x) {
        auto i = s.sequences.find(x.seq);
        if (i != s.sequences.end() && x.replica < i->second.hosts.size())
          i->second.hosts[x.replica] = x.host;
      },
      [&](const ev::sequence_deassigned& x) {
        auto i = s.sequences.find(x.seq);
        if (i == s.sequences.end())
          return;
        if (x.replica < i->second.hosts.size() && i->second.hosts[x.replica] == x.host)
          i->second.hosts[x.replica] = 0;
        for (auto wu : x.dead) {
          retire_sequence_wu(s, e, wu,
                             "dead branch: the sequence was taken from host "
                               + std::to_string(x.host));
          if (auto w = s.workunits.find(wu); w != s.workunits.end())
            release_state(s, w->second, e.time);
        }
        for (const auto& el : x.replacements) {
          if (el.position == x.restart + 1 && !x.restart_inputs.empty()) {
            auto params = restart_params(i->second.params, x);
            add_sequence_wu(s, e, i->second, el, &params);
          } else {
            add_sequence_wu(s, e, i->second, el);
          }
        }
      },
      [&](const ev::sequence_restart_saved& x) {
        // The chain's earlier state uploads are no restart point any more.
        for_each_sequence_wu(s, x.seq, [&](workunit_rec& wu) {
          if (wu.sequence->replica == x.replica && wu.sequence->position < x.position)
            release_state(s, wu, e.time);
        });
      },
      [&](const ev::sequence_element_checked& x) {
        for (auto wu : x.wus)
          if (auto i = s.workunits.find(wu); i != s.workunits.end() && i->second.sequence)
            i->second.sequence->check = x.agree ? seq_check::agree : seq_check::disagree;
      },
      [&](const ev::host_result_validated&) {},
      [&](const ev::credit_normalized& x) {
        if (x.min_avg_pfc > 0)
          s.min_avg_pfc[x.app] = x.min_avg_pfc;
        else
          s.min_avg_pfc.erase(x.app);
        for (const auto& v : x.versions)
          s.version_credit[v.id] = v;
      },
      [&](const ev::credit_imported& x) {
        if (x.records.empty())
          s.credit_imports.erase(x.source);
        else
          s.credit_imports[x.source] = x.records;
      },
      [&](const ev::autoflops_sampled& x) {
        auto app = s.app(x.app);
        if (app == nullptr)
          return;
        auto& st = s.autoflops[x.app];
        if (x.predicted > 0)
          add_app_units(st, x.actual, x.predicted);
        for (const auto& smp : x.samples)
          add_flops_sample(smp.gpu ? st.gpu : st.cpu, smp.value, app->autoflops);
        st.est_flops_per_au = combined_flops_per_au(st.cpu, st.gpu);
      },
      [&](const ev::app_added& x) {
        if (x.app.id == s.apps.size() + 1)
          s.apps.push_back(x.app);
      },
      [&](const ev::app_version_added& x) {
        if (auto* app = mutable_app(s, x.app))
          app->versions.push_back(x.version);
      },
      [&](const ev::app_version_deprecated& x) {
        if (auto* app = mutable_app(s, x.app))
          for (auto& v : app->versions)
            if (v.id == x.version)
              v.deprecated = x.deprecated;
      },
      [&](const ev::code_sign_key_added& x) {
        s.code_sign_keys.push_back(code_sign_key_rec{x.public_key, x.signature, e.time});
      },
      [&](const ev::host_reattached&) { ++s.counters.hosts_reattached; },
      [&](const ev::result_written_off& x) {
        if (auto r = find_result(s, x.result);
            r && r->state == result_state::in_progress && r->host == x.host) {
          r->state = result_state::over;
          r->outcome = result_outcome::client_detached;
          ++s.counters.results_written_off;
        }
      },
      [&](const ev::result_resent& x) {
        if (auto r = find_result(s, x.result);
            r && r->state == result_state::in_progress && r->host == x.host) {
          r->sent = e.time;
          r->deadline = x.deadline;
          s.deadlines.push({x.deadline, x.result});
          ++s.counters.results_resent;
        }
      },
    },
    e.data);
}

} // namespace cobble
