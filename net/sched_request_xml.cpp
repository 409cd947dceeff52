/// The scheduler request: parse_sched_request() (the server side) and write_sched_request()
/// (the client side, cobble-sim --server).

#include "net/boinc_xml.hpp"
#include "net/xml_text.hpp"

#include <pugixml.hpp>

namespace cobble::net {

using namespace xml;

namespace {

const char* coproc_element(resource_type t) {
  switch (t) {
    case resource_type::nvidia:
      return "coproc_cuda";
    case resource_type::ati:
      return "coproc_ati";
    case resource_type::intel_gpu:
      return "coproc_intel_gpu";
    default:
      return nullptr;
  }
}

void read_time_stats(reader& r, const pugi::xml_node& node, host_description& h) {
  for (auto n = node.first_child(); n && !r.failed(); n = n.next_sibling()) {
    std::string_view name = n.name();
    if (name == "on_frac")
      r.num(n, h.on_frac);
    else if (name == "active_frac")
      r.num(n, h.active_frac);
    else if (name == "gpu_active_frac")
      r.num(n, h.gpu_active_frac);
  }
}

void read_host_info(reader& r, const pugi::xml_node& node, host_description& h) {
  for (auto n = node.first_child(); n && !r.failed(); n = n.next_sibling()) {
    std::string_view name = n.name();
    if (name == "host_cpid")
      r.str(n, h.host_cpid);
    else if (name == "domain_name")
      r.str(n, h.domain_name);
    else if (name == "p_ncpus")
      r.integer(n, h.p_ncpus);
    else if (name == "p_vendor")
      r.str(n, h.p_vendor);
    else if (name == "p_model")
      r.str(n, h.p_model);
    else if (name == "p_fpops")
      r.num(n, h.p_fpops);
    else if (name == "p_iops")
      r.num(n, h.p_iops);
    else if (name == "p_membw")
      r.num(n, h.p_membw);
    else if (name == "m_nbytes")
      r.num(n, h.m_nbytes);
    else if (name == "m_swap")
      r.num(n, h.m_swap);
    else if (name == "d_total")
      r.num(n, h.d_total);
    else if (name == "d_free")
      r.num(n, h.d_free);
    else if (name == "os_name")
      r.str(n, h.os_name);
    else if (name == "os_version")
      r.str(n, h.os_version);
  }
}

/// One coprocessor block; `type` is known from the element name, or read from `<type>` for
/// a generic `<coproc>`. Returns false for an unknown or CPU type.
bool read_coproc(reader& r, const pugi::xml_node& node, std::optional<resource_type> type,
                 coproc_description& c) {
  for (auto n = node.first_child(); n && !r.failed(); n = n.next_sibling()) {
    std::string_view name = n.name();
    if (name == "count")
      r.integer(n, c.count);
    else if (name == "peak_flops")
      r.num(n, c.peak_flops);
    else if (name == "req_secs")
      r.num(n, c.request.req_secs);
    else if (name == "req_instances")
      r.num(n, c.request.req_instances);
    else if (name == "estimated_delay")
      r.num(n, c.request.estimated_delay);
    else if (name == "type" && !type)
      type = parse_resource_type(trim(reader::content(n)));
  }
  if (!type || *type == resource_type::cpu)
    return false;
  c.type = *type;
  return true;
}

void read_coprocs(reader& r, const pugi::xml_node& node, std::vector<coproc_description>& out) {
  for (auto n = node.first_child(); n && !r.failed(); n = n.next_sibling()) {
    std::string_view name = n.name();
    std::optional<resource_type> type;
    if (name == "coproc_cuda")
      type = resource_type::nvidia;
    else if (name == "coproc_ati")
      type = resource_type::ati;
    else if (name == "coproc_intel_gpu")
      type = resource_type::intel_gpu;
    else if (name != "coproc")
      continue;
    coproc_description c;
    if (read_coproc(r, n, type, c) && !r.failed())
      out.push_back(c);
  }
}

void read_result(reader& r, const pugi::xml_node& node, reported_result& res) {
  for (auto n = node.first_child(); n && !r.failed(); n = n.next_sibling()) {
    std::string_view name = n.name();
    if (name == "name")
      r.str(n, res.name);
    else if (name == "state")
      r.integer(n, res.state);
    else if (name == "exit_status")
      r.integer(n, res.exit_status);
    else if (name == "final_cpu_time")
      r.num(n, res.final_cpu_time);
    else if (name == "final_elapsed_time")
      r.num(n, res.final_elapsed_time);
    else if (name == "platform")
      r.str(n, res.platform);
    else if (name == "version_num")
      r.integer(n, res.version_num);
    else if (name == "plan_class")
      r.str(n, res.plan_class);
    else if (name == "app_version_num")
      r.integer(n, res.app_version_num);
    else if (name == "stderr_out")
      res.stderr_out = markup_text(n, max_stderr_bytes);
    else if (name == "app_units")
      r.num(n, res.app_units);
    else if (name == "raw_flops_per_au")
      r.num(n, res.raw_flops_per_au);
    else if (name == "file_info") {
      reported_file f;
      for (auto m = n.first_child(); m && !r.failed(); m = m.next_sibling()) {
        std::string_view fname = m.name();
        if (fname == "name")
          r.str(m, f.name);
        else if (fname == "nbytes")
          r.num(m, f.nbytes);
        else if (fname == "md5_cksum")
          r.str(m, f.md5_cksum);
      }
      res.files.push_back(std::move(f));
    }
  }
}

void read_app_version(reader& r, const pugi::xml_node& node, client_app_version& av) {
  for (auto n = node.first_child(); n && !r.failed(); n = n.next_sibling()) {
    std::string_view name = n.name();
    if (name == "app_name")
      r.str(n, av.app_name);
    else if (name == "version_num")
      r.integer(n, av.version_num);
    else if (name == "platform")
      r.str(n, av.platform);
    else if (name == "plan_class")
      r.str(n, av.plan_class);
    else if (name == "avg_ncpus")
      r.num(n, av.avg_ncpus);
    else if (name == "flops")
      r.num(n, av.flops);
    else if (name == "coproc") {
      std::optional<resource_type> type;
      double count = 0;
      for (auto m = n.first_child(); m && !r.failed(); m = m.next_sibling()) {
        std::string_view cname = m.name();
        if (cname == "type")
          type = parse_resource_type(trim(reader::content(m)));
        else if (cname == "count")
          r.num(m, count);
      }
      // An unknown coprocessor type leaves the version marked as CPU-only: Cobble schedules
      // only the four known resource types.
      if (type && *type != resource_type::cpu) {
        av.coproc_type = *type;
        av.coproc_count = count;
      }
    }
  }
}

void read_app_unit_version(reader& r, const pugi::xml_node& node, app_unit_version& v) {
  for (auto n = node.first_child(); n && !r.failed(); n = n.next_sibling()) {
    std::string_view name = n.name();
    if (name == "app_name")
      r.str(n, v.app_name);
    else if (name == "version_num")
      r.integer(n, v.version_num);
    else if (name == "plan_class")
      r.str(n, v.plan_class);
    else if (name == "seconds_per_app_unit")
      r.num(n, v.seconds_per_app_unit);
    else if (name == "raw_flops_per_sec")
      r.num(n, v.raw_flops_per_sec);
  }
}

void read_other_result(reader& r, const pugi::xml_node& node, other_result& o) {
  for (auto n = node.first_child(); n && !r.failed(); n = n.next_sibling()) {
    std::string_view name = n.name();
    if (name == "name")
      r.str(n, o.name);
    else if (name == "app_version")
      r.integer(n, o.app_version_index);
    else if (name == "plan_class")
      r.str(n, o.plan_class);
  }
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
  std::vector<coproc_description> host_info_coprocs; // fallback if sent inside host_info
  bool have_coprocs = false;
  for (auto n = root.first_child(); n && !r.failed(); n = n.next_sibling()) {
    if (n.type() != pugi::node_element)
      continue;
    std::string_view name = n.name();
    if (name == "authenticator")
      r.str(n, req.authenticator);
    else if (name == "hostid")
      r.integer(n, req.hostid);
    else if (name == "rpc_seqno")
      r.integer(n, req.rpc_seqno);
    else if (name == "core_client_major_version")
      r.integer(n, req.core_client_major_version);
    else if (name == "core_client_minor_version")
      r.integer(n, req.core_client_minor_version);
    else if (name == "core_client_release")
      r.integer(n, req.core_client_release);
    else if (name == "resource_share_fraction")
      r.num(n, req.resource_share_fraction);
    else if (name == "duration_correction_factor")
      r.num(n, req.duration_correction_factor);
    else if (name == "dont_send_work")
      r.boolean(n, req.dont_send_work);
    else if (name == "work_req_seconds")
      r.num(n, req.work_req_seconds);
    else if (name == "cpu_req_secs")
      r.num(n, req.cpu.req_secs);
    else if (name == "cpu_req_instances")
      r.num(n, req.cpu.req_instances);
    else if (name == "estimated_delay")
      r.num(n, req.cpu.estimated_delay);
    else if (name == "platform_name")
      r.str(n, req.platform_name);
    else if (name == "time_stats")
      read_time_stats(r, n, req.host);
    else if (name == "host_info") {
      read_host_info(r, n, req.host);
      if (auto c = n.child("coprocs"))
        read_coprocs(r, c, host_info_coprocs);
    } else if (name == "coprocs") {
      have_coprocs = true;
      read_coprocs(r, n, req.coprocs);
    } else if (name == "result") {
      req.results.emplace_back();
      read_result(r, n, req.results.back());
    } else if (name == "app_versions") {
      for (auto a = n.child("app_version"); a && !r.failed(); a = a.next_sibling("app_version")) {
        req.app_versions.emplace_back();
        read_app_version(r, a, req.app_versions.back());
      }
    } else if (name == "other_results") {
      for (auto o = n.child("other_result"); o && !r.failed(); o = o.next_sibling("other_result")) {
        req.other_results.emplace_back();
        read_other_result(r, o, req.other_results.back());
      }
    } else if (name == "work_sequences") {
      for (auto w = n.child("name"); w && !r.failed(); w = w.next_sibling("name")) {
        req.sequences_held.emplace_back();
        r.str(w, req.sequences_held.back());
      }
    } else if (name == "app_unit_versions") {
      for (auto a = n.child("app_unit_version"); a && !r.failed();
           a = a.next_sibling("app_unit_version")) {
        req.app_unit_versions.emplace_back();
        read_app_unit_version(r, a, req.app_unit_versions.back());
      }
    }
  }
  if (r.failed())
    return result::failure(std::move(r.error));
  if (!have_coprocs)
    req.coprocs = std::move(host_info_coprocs);
  if (req.authenticator.empty())
    return result::failure("scheduler request has no authenticator");
  return result::success(std::move(req));
}

std::string write_sched_request(const sched_request& req) {
  writer x;
  x.s.reserve(2048 + req.results.size() * 512);
  x.open("scheduler_request");
  x.text("authenticator", req.authenticator);
  x.number("hostid", req.hostid);
  x.number("rpc_seqno", req.rpc_seqno);
  x.number("core_client_major_version", req.core_client_major_version);
  x.number("core_client_minor_version", req.core_client_minor_version);
  x.number("core_client_release", req.core_client_release);
  x.number("resource_share_fraction", req.resource_share_fraction);
  x.number("duration_correction_factor", req.duration_correction_factor);
  if (!req.platform_name.empty())
    x.text("platform_name", req.platform_name);
  x.flag("dont_send_work", req.dont_send_work);
  x.number("work_req_seconds", req.work_req_seconds);
  x.number("cpu_req_secs", req.cpu.req_secs);
  x.number("cpu_req_instances", req.cpu.req_instances);
  x.number("estimated_delay", req.cpu.estimated_delay);
  const auto& h = req.host;
  x.open("time_stats");
  x.number("on_frac", h.on_frac);
  x.number("active_frac", h.active_frac);
  x.number("gpu_active_frac", h.gpu_active_frac);
  x.close("time_stats");
  x.open("host_info");
  x.text("host_cpid", h.host_cpid);
  x.text("domain_name", h.domain_name);
  x.number("p_ncpus", h.p_ncpus);
  x.text("p_vendor", h.p_vendor);
  x.text("p_model", h.p_model);
  x.number("p_fpops", h.p_fpops);
  x.number("p_iops", h.p_iops);
  x.number("p_membw", h.p_membw);
  x.number("m_nbytes", h.m_nbytes);
  x.number("m_swap", h.m_swap);
  x.number("d_total", h.d_total);
  x.number("d_free", h.d_free);
  x.text("os_name", h.os_name);
  x.text("os_version", h.os_version);
  x.close("host_info");
  if (!req.coprocs.empty()) {
    x.open("coprocs");
    for (const auto& c : req.coprocs) {
      const char* tag = coproc_element(c.type);
      if (tag == nullptr)
        continue;
      x.open(tag);
      x.number("count", c.count);
      x.number("peak_flops", c.peak_flops);
      x.number("req_secs", c.request.req_secs);
      x.number("req_instances", c.request.req_instances);
      x.number("estimated_delay", c.request.estimated_delay);
      x.close(tag);
    }
    x.close("coprocs");
  }
  for (const auto& r : req.results) {
    x.open("result");
    x.text("name", r.name);
    x.number("final_cpu_time", r.final_cpu_time);
    x.number("final_elapsed_time", r.final_elapsed_time);
    x.number("exit_status", r.exit_status);
    x.number("state", r.state);
    if (!r.platform.empty())
      x.text("platform", r.platform);
    x.number("version_num", r.version_num);
    if (!r.plan_class.empty())
      x.text("plan_class", r.plan_class);
    x.number("app_version_num", r.app_version_num);
    for (const auto& f : r.files) {
      x.open("file_info");
      x.text("name", f.name);
      x.number("nbytes", f.nbytes);
      x.text("md5_cksum", f.md5_cksum);
      x.close("file_info");
    }
    if (!r.stderr_out.empty())
      x.text("stderr_out", r.stderr_out);
    if (r.app_units > 0)
      x.number("app_units", r.app_units);
    if (r.raw_flops_per_au > 0)
      x.number("raw_flops_per_au", r.raw_flops_per_au);
    x.close("result");
  }
  if (!req.app_versions.empty()) {
    x.open("app_versions");
    for (const auto& a : req.app_versions) {
      x.open("app_version");
      x.text("app_name", a.app_name);
      x.number("version_num", a.version_num);
      x.text("platform", a.platform);
      if (!a.plan_class.empty())
        x.text("plan_class", a.plan_class);
      x.number("avg_ncpus", a.avg_ncpus);
      x.number("flops", a.flops);
      if (a.coproc_type != resource_type::cpu) {
        x.open("coproc");
        x.text("type", to_string(a.coproc_type));
        x.number("count", a.coproc_count);
        x.close("coproc");
      }
      x.close("app_version");
    }
    x.close("app_versions");
  }
  if (!req.other_results.empty()) {
    x.open("other_results");
    for (const auto& o : req.other_results) {
      x.open("other_result");
      x.text("name", o.name);
      if (o.app_version_index >= 0)
        x.number("app_version", o.app_version_index);
      if (!o.plan_class.empty())
        x.text("plan_class", o.plan_class);
      x.close("other_result");
    }
    x.close("other_results");
  }
  if (!req.sequences_held.empty()) {
    x.open("work_sequences");
    for (const auto& name : req.sequences_held)
      x.text("name", name);
    x.close("work_sequences");
  }
  if (!req.app_unit_versions.empty()) {
    x.open("app_unit_versions");
    for (const auto& v : req.app_unit_versions) {
      x.open("app_unit_version");
      x.text("app_name", v.app_name);
      x.number("version_num", v.version_num);
      if (!v.plan_class.empty())
        x.text("plan_class", v.plan_class);
      x.number("seconds_per_app_unit", v.seconds_per_app_unit);
      x.number("raw_flops_per_sec", v.raw_flops_per_sec);
      x.close("app_unit_version");
    }
    x.close("app_unit_versions");
  }
  x.close("scheduler_request");
  return std::move(x.s);
}

} // namespace cobble::net
