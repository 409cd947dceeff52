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

bool is_nvidia(const coproc_description& c) {
  return c.type == resource_type::nvidia;
}

bool is_ati(const coproc_description& c) {
  return c.type == resource_type::ati;
}

/// AMD's `<CALVersion>a.b.c</CALVersion>` as a × 1000000 + b × 10000 + c (BOINC's plan
/// classes compare driver versions so); text that is no version leaves it 0 (unknown).
void read_cal_version(reader&, const field<coproc_description>&, const pugi::xml_node& n,
                      coproc_description& c) {
  auto text = trim(reader::content(n));
  long parts[3] = {0, 0, 0};
  int i = 0;
  bool digit = false;
  for (char ch : text) {
    if (ch >= '0' && ch <= '9' && parts[i] < 100000) {
      parts[i] = parts[i] * 10 + (ch - '0');
      digit = true;
    } else if (ch == '.' && digit && i < 2) {
      ++i;
      digit = false;
    } else {
      return;
    }
  }
  if (i == 2 && digit && parts[1] < 100 && parts[2] < 10000)
    c.driver_version = static_cast<int>(parts[0] * 1000000 + parts[1] * 10000 + parts[2]);
}

void write_cal_version(sink& o, const field<coproc_description>& f, const coproc_description& c) {
  if (c.driver_version <= 0)
    return;
  auto v = c.driver_version;
  o.x.text(f.tag, std::to_string(v / 1000000) + "." + std::to_string(v / 10000 % 100) + "."
                    + std::to_string(v % 10000));
}

/// AMD's `<localRAM>` is in MB.
void read_local_ram(reader& r, const field<coproc_description>&, const pugi::xml_node& n,
                    coproc_description& c) {
  double mb = 0;
  r.num(n, mb);
  c.total_ram = mb * 1024 * 1024;
}

void write_local_ram(sink& o, const field<coproc_description>& f, const coproc_description& c) {
  if (c.total_ram > 0)
    o.x.number(f.tag, c.total_ram / (1024 * 1024));
}

/// Every type's elements; each is read whatever the block, and written for the types whose
/// client writes it (NVIDIA: CUDA, driver and memory; AMD: CAL version and local RAM).
constexpr field<coproc_description> coproc_fields[] = {
  value<&coproc_description::count>("count"),
  value<&coproc_description::available_ram>("available_ram", when::positive),
  value<&coproc_description::have_cuda>("have_cuda", when::always, is_nvidia),
  value<&coproc_description::have_cal>("have_cal", when::always, is_ati),
  value<&coproc_description::have_opencl>("have_opencl"),
  value<&coproc_description::peak_flops>("peak_flops"),
  value<&coproc_description::request, &resource_request::req_secs>("req_secs"),
  value<&coproc_description::request, &resource_request::req_instances>("req_instances"),
  value<&coproc_description::request, &resource_request::estimated_delay>("estimated_delay"),
  value<&coproc_description::cuda_version>("cudaVersion", when::positive, is_nvidia),
  value<&coproc_description::driver_version>("drvVersion", when::positive, is_nvidia),
  value<&coproc_description::total_ram>("totalGlobalMem", when::positive, is_nvidia),
  custom("CALVersion", read_cal_version, write_cal_version, is_ati),
  custom("localRAM", read_local_ram, write_local_ram, is_ati),
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
  value<&host_description::ip_addr>("ip_addr", when::nonempty),
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

constexpr field<client_app_version> app_version_fields[] = {
  value<&client_app_version::app_name>("app_name"),
  value<&client_app_version::version_num>("version_num"),
  value<&client_app_version::platform>("platform"),
  value<&client_app_version::plan_class>("plan_class", when::nonempty),
  value<&client_app_version::avg_ncpus>("avg_ncpus"),
  value<&client_app_version::flops>("flops"),
  coproc_use<&client_app_version::coproc_type, &client_app_version::coproc_count>("coproc"),
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

void read_other_results(reader& r, const field<sched_request>& f, const pugi::xml_node& n,
                        sched_request& q) {
  q.other_results_listed = true;
  detail::read_items<sched_request, &sched_request::other_results, other_result_fields>(r, f, n, q);
}

/// Written when listed, even empty: "I hold nothing else" is not "I did not say".
void write_other_results(sink& o, const field<sched_request>& f, const sched_request& q) {
  if (q.other_results.empty()) {
    if (q.other_results_listed) {
      o.x.open(f.tag);
      o.x.close(f.tag);
    }
    return;
  }
  detail::write_items<sched_request, &sched_request::other_results, other_result_fields>(o, f, q);
}

constexpr field<sched_request> other_results_entry() {
  auto f = items<&sched_request::other_results, other_result_fields>("other_results",
                                                                     "other_result");
  f.read = read_other_results;
  f.write = write_other_results;
  return f;
}

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
  texts_in<&sched_request::alt_platforms>("alt_platform", "name"),
  value<&sched_request::allow_multiple_clients>("allow_multiple_clients"),
  long_block<&sched_request::code_sign_key, max_code_sign_key_bytes>("code_sign_key",
                                                                     when::nonempty),
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
  other_results_entry(),
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
