#include "net/stats_export.hpp"

#include "actors/error.hpp"
#include "net/password.hpp"
#include "net/web_rpc_xml.hpp"
#include "net/xml_text.hpp"
#include "storage/posix_file.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <stdexcept>
#include <system_error>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <zlib.h>

namespace cobble::net {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view xml_head = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";

std::int64_t whole_seconds(time_us t) {
  return t / 1'000'000;
}

/// `<tag>value</tag>` on a line, the value escaped.
void text(std::string& out, std::string_view tag, std::string_view value) {
  fmt::format_to(std::back_inserter(out), " <{}>", tag);
  xml::append_escaped(out, value);
  fmt::format_to(std::back_inserter(out), "</{}>\n", tag);
}

/// A double as BOINC's %f.
void real(std::string& out, std::string_view tag, double v) {
  fmt::format_to(std::back_inserter(out), " <{0}>{1:.6f}</{0}>\n", tag, v);
}

template <class I>
void integer(std::string& out, std::string_view tag, I v) {
  fmt::format_to(std::back_inserter(out), " <{0}>{1}</{0}>\n", tag, v);
}

void credit(std::string& out, const credit_totals& c) {
  real(out, "total_credit", c.total);
  real(out, "expavg_credit", c.expavg);
  real(out, "expavg_time", static_cast<double>(c.expavg_time) / 1e6);
}

std::string users_xml(const project_state& ps, stats_counts& n) {
  std::string out{xml_head};
  out += "<users>\n";
  for (const auto& [id, u] : ps.users) {
    if (u.credit.total <= 0)
      continue;
    ++n.users;
    n.total_credit += u.credit.total;
    out += "<user>\n";
    integer(out, "id", id);
    text(out, "name", u.name);
    integer(out, "create_time", whole_seconds(u.created));
    credit(out, u.credit);
    text(out, "cpid", public_cpid(u));
    if (auto team = u.team.empty() ? 0 : ps.team_named(u.team); team != 0)
      integer(out, "teamid", team);
    out += "</user>\n";
  }
  out += "</users>\n";
  return out;
}

std::string teams_xml(const project_state& ps, stats_counts& n) {
  std::string out{xml_head};
  out += "<teams>\n";
  for (const auto& [id, t] : ps.team_dir) {
    auto c = ps.teams.find(t.name);
    if (c == ps.teams.end() || c->second.total <= 0)
      continue;
    ++n.teams;
    out += "<team>\n";
    integer(out, "id", id);
    integer(out, "type", 0);
    text(out, "name", t.name);
    integer(out, "userid", t.founder);
    credit(out, c->second);
    if (auto f = ps.users.find(t.founder); f != ps.users.end())
      text(out, "founder_name", f->second.name);
    integer(out, "create_time", whole_seconds(t.created));
    if (!t.url.empty())
      text(out, "url", t.url);
    if (!t.description.empty())
      text(out, "description", t.description);
    text(out, "country", t.country);
    out += "</team>\n";
  }
  out += "</teams>\n";
  return out;
}

std::string hosts_xml(const project_world& pw, stats_counts& n) {
  const auto& ps = pw.project;
  std::string out{xml_head};
  out += "<hosts>\n";
  for (const auto& [id, h] : ps.hosts) {
    auto owner = ps.users.find(h.user);
    if (h.credit.total <= 0 || owner == ps.users.end())
      continue;
    ++n.hosts;
    auto st = pw.hosts.find(id);
    static const host_state none{};
    const auto& s = st == pw.hosts.end() ? none : st->second;
    out += "<host>\n";
    integer(out, "id", id);
    integer(out, "userid", h.user);
    credit(out, h.credit);
    text(out, "p_vendor", s.info.p_vendor);
    text(out, "p_model", s.info.p_model);
    text(out, "os_name", s.info.os_name);
    text(out, "os_version", s.info.os_version);
    integer(out, "create_time", whole_seconds(h.created));
    integer(out, "rpc_time", whole_seconds(s.last_rpc));
    integer(out, "ncpus", s.info.p_ncpus);
    real(out, "p_fpops", s.info.p_fpops);
    real(out, "p_iops", s.info.p_iops);
    real(out, "m_nbytes", s.info.m_nbytes);
    real(out, "d_free", s.info.d_free);
    text(out, "host_cpid", public_host_cpid(s.info.host_cpid, owner->second.email));
    out += "</host>\n";
  }
  out += "</hosts>\n";
  return out;
}

std::string tables_xml(const project_state& ps, const stats_counts& n, time_us now) {
  std::string out{xml_head};
  out += "<tables>\n";
  integer(out, "update_time", whole_seconds(now));
  if (n.users > 0)
    integer(out, "nusers_total", n.users);
  if (n.teams > 0)
    integer(out, "nteams_total", n.teams);
  if (n.hosts > 0)
    integer(out, "nhosts_total", n.hosts);
  if (n.total_credit > 0)
    real(out, "total_credit", n.total_credit);
  out += " <applications>\n";
  for (const auto& a : ps.apps) {
    out += "  <application>\n ";
    text(out, "name", a.user_friendly_name.empty() ? a.name : a.user_friendly_name);
    out += "  </application>\n";
  }
  out += " </applications>\n";
  out += "</tables>\n";
  return out;
}

/// `bytes` gzipped (zlib's deflate with a gzip wrapper, best compression), in memory.
std::string gzipped(const std::string& bytes) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("cannot start gzip compression");
  std::string out(deflateBound(&z, static_cast<uLong>(bytes.size())), '\0');
  // zlib's interface is not const-correct; deflate only reads its input.
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END)
    throw std::runtime_error("gzip compression failed");
  return out;
}

/// Throws the storage error as a std::runtime_error.
void check(const caf::error& err) {
  if (err)
    throw std::runtime_error(describe(err));
}

} // namespace

std::string public_host_cpid(const std::string& host_cpid, const std::string& owner_email) {
  if (host_cpid.empty())
    return {};
  return md5_hex(host_cpid + owner_email);
}

std::vector<stats_file> stats_files(const project_world& pw, time_us now, stats_counts* counts) {
  stats_counts n;
  auto users = users_xml(pw.project, n);
  auto teams = teams_xml(pw.project, n);
  auto hosts = hosts_xml(pw, n);
  auto tables = tables_xml(pw.project, n, now);
  if (counts != nullptr)
    *counts = n;
  // The records are in id order already: the id-sorted files have the same content.
  return {{"user.gz", users, true},     {"user_id.gz", users, true}, {"team.gz", teams, true},
          {"team_id.gz", teams, true},  {"host.gz", hosts, true},    {"host_id.gz", hosts, true},
          {"tables.xml", tables, false}};
}

void write_stats(const fs::path& dir, const std::vector<stats_file>& files, bool wait) {
  auto parent = dir.parent_path().empty() ? fs::path{"."} : dir.parent_path();
  auto staging = parent / ("." + dir.filename().string() + ".new");
  auto previous = parent / ("." + dir.filename().string() + ".old");
  std::error_code ec;
  fs::create_directories(parent, ec);
  // One writer at a time (cobbled's periodic export and `cobble stats export` share the
  // directory and its staging names); the lock goes with the descriptor.
  auto lock_path = parent / ".lock";
  int lock = ::open(lock_path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0) {
    auto err = errno;
    if (lock >= 0)
      ::close(lock);
    if (err == EWOULDBLOCK)
      throw std::runtime_error("another export is being written into " + parent.string()
                               + " (cobble stats export?); this one is skipped");
    throw std::runtime_error("cannot lock " + lock_path.string() + ": "
                             + std::error_code{err, std::generic_category()}.message());
  }
  struct unlock {
    int fd;
    ~unlock() { ::close(fd); }
  } unlock_at_end{lock};
  fs::remove_all(staging, ec);
  fs::remove_all(previous, ec);
  if (!fs::create_directory(staging, ec))
    throw std::runtime_error("cannot create " + staging.string() + ": " + ec.message());
  for (const auto& f : files) {
    if (f.name.empty() || f.name.find('/') != std::string::npos || f.name[0] == '.')
      throw std::runtime_error("bad statistics file name '" + f.name + "'");
    check(storage::write_file_durably(staging / (f.name + ".tmp"), staging / f.name,
                                      f.gzip ? gzipped(f.xml) : f.xml));
  }
  if (fs::exists(dir, ec)) {
    fs::rename(dir, previous, ec);
    if (ec)
      throw std::runtime_error("cannot move " + dir.string() + " aside: " + ec.message());
  }
  fs::rename(staging, dir, ec);
  if (ec)
    throw std::runtime_error("cannot move " + staging.string() + " to " + dir.string() + ": "
                             + ec.message());
  check(storage::sync_dir(parent));
  fs::remove_all(previous, ec);
}

std::vector<project_export>
export_world(const world& w, const fs::path& out, time_us now, const std::string& only, bool wait) {
  std::vector<project_export> written;
  for (const auto& pw : w.projects) {
    const auto& name = pw.project.name;
    if (name.empty() || (!only.empty() && name != only))
      continue;
    project_export e{name, out / name, {}};
    write_stats(e.dir, stats_files(pw, now, &e.counts), wait);
    written.push_back(std::move(e));
  }
  return written;
}

std::optional<fs::file_time_type>
oldest_export(const fs::path& out, const std::vector<std::string>& projects) {
  std::optional<fs::file_time_type> oldest;
  for (const auto& name : projects) {
    std::error_code ec;
    auto t = fs::last_write_time(out / name / "tables.xml", ec);
    if (ec)
      return std::nullopt;
    if (!oldest || t < *oldest)
      oldest = t;
  }
  return oldest;
}

periodic_reader periodic_export(const fs::path& out, const std::vector<std::string>& projects,
                                std::chrono::seconds every) {
  periodic_reader r;
  if (every.count() <= 0)
    return r;
  r.every = every;
  r.due = std::chrono::steady_clock::now();
  if (auto last = oldest_export(out, projects)) {
    auto age = fs::file_time_type::clock::now() - *last;
    if (age < every)
      r.due += std::chrono::duration_cast<std::chrono::steady_clock::duration>(every - age);
  }
  r.read = [out, projects](const world& w) {
    auto started = std::chrono::steady_clock::now();
    auto now = std::chrono::duration_cast<std::chrono::microseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
    // The configured projects only: one dropped from the configuration is not served.
    std::vector<project_export> written;
    for (const auto& name : projects)
      for (auto& e : export_world(w, out, now, name, false))
        written.push_back(std::move(e));
    for (const auto& e : written)
      spdlog::info(
        "statistics of {} exported at seq {}: {} users, {} teams, {} hosts ({:.2f} s)", e.project,
        w.seq, e.counts.users, e.counts.teams, e.counts.hosts,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  };
  return r;
}

} // namespace cobble::net
