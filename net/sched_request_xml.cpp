/// The scheduler request: parse_sched_request() (the server side) and write_sched_request()
/// (the client side, cobble-sim --server), both driven by the field tables below.

#include "net/boinc_xml.hpp"
#include "net/xml_fields.hpp"
#include "net/xml_text.hpp"

#include <pugixml.hpp>

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace cobble::net {

using namespace xml;

namespace {

// -- coprocessors ------------------------------------------------------------------------

constexpr field<coproc_description> coproc_fields[] = {
  value<&coproc_description::count>("count"),
  value<&coproc_description::peak_flops>("peak_flops"),
  value<&coproc_description::request, &resource_request::req_secs>("req_secs"),
  value<&coproc_description::request, &resource_request::req_instances>("req_instances"),
  value<&coproc_description::request, &resource_request::estimated_delay>("estimated_delay"),
};

/// The element of each coprocessor type; a generic `<coproc>` names its type in `<type>`.
constexpr std::pair<resource_type, std::string_view> coproc_elements[] = {
  {resource_type::nvidia, "coproc_cuda"},
  {resource_type::ati, "coproc_ati"},
  {resource_type::intel_gpu, "coproc_intel_gpu"},
};

/// The children of a `<coprocs>`; blocks of an unknown or CPU type are left out.
void read_coprocs(reader& r, const pugi::xml_node& node, std::vector<coproc_description>& out) {
  for (auto n = node.first_child(); n && !r.failed(); n = n.next_sibling()) {
    std::string_view name = n.name();
    std::optional<resource_type> type;
    for (const auto& [t, tag] : coproc_elements)
      if (name == tag)
        type = t;
    if (!type && name != "coproc")
      continue;
    coproc_description c;
    read_fields(r, n, c, coproc_fields, [&](const pugi::xml_node& m) {
      if (!type && std::string_view(m.name()) == "type")
        type = parse_resource_type(trim(reader::content(m)));
    });
    if (type && *type != resource_type::cpu && !r.failed()) {
      c.type = *type;
      out.push_back(c);
    }
  }
}

void read_request_coprocs(reader& r, const field<sched_request>&, const pugi::xml_node& n,
                          sched_request& q) {
  read_coprocs(r, n, q.coprocs);
}

void write_request_coprocs(sink& o, const field<sched_request>& f, const sched_request& q) {
  if (q.coprocs.empty())
    return;
  o.x.open(f.tag);
  for (const auto& c : q.coprocs)
    for (const auto& [t, tag] : coproc_elements)
      if (c.type == t) {
        o.x.open(tag);
        write_fields(o, c, coproc_fields);
        o.x.close(tag);
      }
  o.x.close(f.tag);
}

// -- the request's parts -----------------------------------------------------------------

constexpr field<host_description> time_stats_fields[] = {
  value<&host_description::on_frac>("on_frac"),
  value<&host_description::active_frac>("active_frac"),
  value<&host_description::gpu_active_frac>("gpu_active_frac"),
};

constexpr field<host_description> host_info_fields[] = {
  value<&host_description::host_cpid>("host_cpid"),
  value<&host_description::domain_name>("domain_name"),
  value<&host_description::p_ncpus>("p_ncpus"),
  value<&host_description::p_vendor>("p_vendor"),
  value<&host_description::p_model>("p_model"),
  value<&host_description::p_fpops>("p_fpops"),
  value<&host_description::p_iops>("p_iops"),
  value<&host_description::p_membw>("p_membw"),
  value<&host_description::m_nbytes>("m_nbytes"),
  value<&host_description::m_swap>("m_swap"),
  value<&host_description::d_total>("d_total"),
  value<&host_description::d_free>("d_free"),
  value<&host_description::os_name>("os_name"),
  value<&host_description::os_version>("os_version"),
};

constexpr field<reported_file> reported_file_fields[] = {
  value<&reported_file::name>("name"),
  value<&reported_file::nbytes>("nbytes"),
  value<&reported_file::md5_cksum>("md5_cksum"),
};

constexpr field<reported_result> reported_result_fields[] = {
  value<&reported_result::name>("name"),
  value<&reported_result::final_cpu_time>("final_cpu_time"),
  value<&reported_result::final_elapsed_time>("final_elapsed_time"),
  value<&reported_result::exit_status>("exit_status"),
  value<&reported_result::state>("state"),
  value<&reported_result::platform>("platform", when::nonempty),
  value<&reported_result::version_num>("version_num"),
  value<&reported_result::plan_class>("plan_class", when::nonempty),
  value<&reported_result::app_version_num>("app_version_num"),
  items<&reported_result::files, reported_file_fields>("file_info"),
  markup<&reported_result::stderr_out, max_stderr_bytes>("stderr_out", when::nonempty),
  value<&reported_result::app_units>("app_units", when::positive),
  value<&reported_result::raw_flops_per_au>("raw_flops_per_au", when::positive),
};

/// `<coproc><type>T</type><count>N</count></coproc>` of an app version. An unknown type
/// leaves the version CPU-only: Cobble schedules only the four known resource types.
void read_version_coproc(reader& r, const field<client_app_version>&, const pugi::xml_node& n,
                         client_app_version& av) {
  std::optional<resource_type> type;
  double count = 0;
  for (auto m = n.first_child(); m && !r.failed(); m = m.next_sibling()) {
    std::string_view name = m.name();
    if (name == "type")
      type = parse_resource_type(trim(reader::content(m)));
    else if (name == "count")
      r.num(m, count);
  }
  if (type && *type != resource_type::cpu) {
    av.coproc_type = *type;
    av.coproc_count = count;
  }
}

void write_version_coproc(sink& o, const field<client_app_version>& f,
                          const client_app_version& av) {
  o.x.open(f.tag);
  o.x.text("type", to_string(av.coproc_type));
  o.x.number("count", av.coproc_count);
  o.x.close(f.tag);
}

bool uses_coproc(const client_app_version& av) {
  return av.coproc_type != resource_type::cpu;
}

constexpr field<client_app_version> app_version_fields[] = {
  value<&client_app_version::app_name>("app_name"),
  value<&client_app_version::version_num>("version_num"),
  value<&client_app_version::platform>("platform"),
  value<&client_app_version::plan_class>("plan_class", when::nonempty),
  value<&client_app_version::avg_ncpus>("avg_ncpus"),
  value<&client_app_version::flops>("flops"),
  custom("coproc", read_version_coproc, write_version_coproc, uses_coproc),
};

constexpr field<other_result> other_result_fields[] = {
  value<&other_result::name>("name"),
  value<&other_result::app_version_index>("app_version", when::nonneg),
  value<&other_result::plan_class>("plan_class", when::nonempty),
};

constexpr field<app_unit_version> app_unit_version_fields[] = {
  value<&app_unit_version::app_name>("app_name"),
  value<&app_unit_version::version_num>("version_num"),
  value<&app_unit_version::plan_class>("plan_class", when::nonempty),
  value<&app_unit_version::seconds_per_app_unit>("seconds_per_app_unit"),
  value<&app_unit_version::raw_flops_per_sec>("raw_flops_per_sec"),
};

constexpr field<sched_request> request_fields[] = {
  value<&sched_request::authenticator>("authenticator"),
  value<&sched_request::hostid>("hostid"),
  value<&sched_request::rpc_seqno>("rpc_seqno"),
  value<&sched_request::core_client_major_version>("core_client_major_version"),
  value<&sched_request::core_client_minor_version>("core_client_minor_version"),
  value<&sched_request::core_client_release>("core_client_release"),
  value<&sched_request::resource_share_fraction>("resource_share_fraction"),
  value<&sched_request::duration_correction_factor>("duration_correction_factor"),
  value<&sched_request::platform_name>("platform_name", when::nonempty),
  value<&sched_request::dont_send_work>("dont_send_work"),
  value<&sched_request::work_req_seconds>("work_req_seconds"),
  value<&sched_request::cpu, &resource_request::req_secs>("cpu_req_secs"),
  value<&sched_request::cpu, &resource_request::req_instances>("cpu_req_instances"),
  value<&sched_request::cpu, &resource_request::estimated_delay>("estimated_delay"),
  group<&sched_request::host, time_stats_fields>("time_stats"),
  group<&sched_request::host, host_info_fields>("host_info"),
  custom("coprocs", read_request_coprocs, write_request_coprocs),
  items<&sched_request::results, reported_result_fields>("result"),
  items<&sched_request::app_versions, app_version_fields>("app_versions", "app_version"),
  items<&sched_request::other_results, other_result_fields>("other_results", "other_result"),
  texts<&sched_request::sequences_held>("work_sequences", "name"),
  items<&sched_request::app_unit_versions, app_unit_version_fields>("app_unit_versions",
                                                                    "app_unit_version"),
};

// -- ranges ------------------------------------------------------------------------------

/// "VALUE in PATH is out of range: it must be WHAT", or empty.
std::string out_of_range(std::string_view path, double v, bool fraction) {
  if (fraction ? (v >= -1 && v <= 1) : v >= 0)
    return {};
  std::string text;
  append_number(text, v);
  return std::string(path) + " is " + text + ", out of range: it must be "
         + (fraction ? "between -1 (unknown) and 1" : "0 or more");
}

/// The first value of `q` out of its range, or empty (see parse_sched_request()).
std::string check_ranges(const sched_request& q) {
  const auto& h = q.host;
  const std::pair<std::string_view, double> sizes[] = {
    {"host_info/p_ncpus", static_cast<double>(h.p_ncpus)},
    {"host_info/p_fpops", h.p_fpops},
    {"host_info/p_iops", h.p_iops},
    {"host_info/p_membw", h.p_membw},
    {"host_info/m_nbytes", h.m_nbytes},
    {"host_info/m_swap", h.m_swap},
    {"host_info/d_total", h.d_total},
    {"host_info/d_free", h.d_free},
  };
  for (const auto& [path, v] : sizes)
    if (auto e = out_of_range(path, v, false); !e.empty())
      return e;
  const std::pair<std::string_view, double> fractions[] = {
    {"time_stats/on_frac", h.on_frac},
    {"time_stats/active_frac", h.active_frac},
    {"time_stats/gpu_active_frac", h.gpu_active_frac},
  };
  for (const auto& [path, v] : fractions)
    if (auto e = out_of_range(path, v, true); !e.empty())
      return e;
  for (const auto& c : q.coprocs) {
    if (auto e = out_of_range("coprocs/count", c.count, false); !e.empty())
      return e;
    if (auto e = out_of_range("coprocs/peak_flops", c.peak_flops, false); !e.empty())
      return e;
  }
  for (const auto& r : q.results) {
    if (auto e = out_of_range("result/app_units", r.app_units, false); !e.empty())
      return e + " (result " + r.name + ")";
    if (auto e = out_of_range("result/raw_flops_per_au", r.raw_flops_per_au, false); !e.empty())
      return e + " (result " + r.name + ")";
  }
  return {};
}

} // namespace

parse_result<sched_request> parse_sched_request(std::string_view body) {
  using result = parse_result<sched_request>;
  if (trim(body).empty())
    return result::failure("empty scheduler request");

  pugi::xml_document doc;
  auto pr = doc.load_buffer(body.data(), body.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!pr)
    return result::failure(std::string("malformed scheduler request XML: ") + pr.description()
                           + " at offset " + std::to_string(pr.offset));
  auto root = doc.document_element();
  if (!root)
    return result::failure("scheduler request contains no XML element");
  if (std::string_view(root.name()) != "scheduler_request")
    return result::failure(std::string("root element is <") + root.name()
                           + ">, expected <scheduler_request>");

  sched_request req;
  reader r;
  r.max_text = max_request_text_bytes;
  clear_flags(req, request_fields);
  // Older clients send <coprocs> inside <host_info>: used when there is no top-level one.
  std::vector<coproc_description> host_info_coprocs;
  read_fields(r, root, req, request_fields, [&](const pugi::xml_node& n) {
    if (std::string_view(n.name()) == "host_info")
      if (auto c = n.child("coprocs"))
        read_coprocs(r, c, host_info_coprocs);
  });
  if (r.failed())
    return result::failure(std::move(r.error));
  if (!root.child("coprocs"))
    req.coprocs = std::move(host_info_coprocs);
  if (req.authenticator.empty())
    return result::failure("scheduler request has no authenticator");
  if (auto e = check_ranges(req); !e.empty())
    return result::failure("bad value in /scheduler_request/" + e);
  return result::success(std::move(req));
}

std::string write_sched_request(const sched_request& req) {
  sink o;
  o.x.s.reserve(2048 + req.results.size() * 512);
  o.x.open("scheduler_request");
  write_fields(o, req, request_fields);
  o.x.close("scheduler_request");
  return std::move(o.x.s);
}

} // namespace cobble::net
