#include "boinc_describe.hpp"

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

namespace cobble::net::testing {

namespace {

/// Collects `path = value` lines; `prefix` is the path of the struct being described.
class lines {
public:
  std::string out;

  void put(std::string_view key, const std::string& v) {
    std::string q = "\"";
    for (char ch : v) {
      auto c = static_cast<unsigned char>(ch);
      if (ch == '"' || ch == '\\') {
        q += '\\';
        q += ch;
      } else if (ch == '\n') {
        q += "\\n";
      } else if (ch == '\t') {
        q += "\\t";
      } else if (c < 0x20 || c == 0x7f) {
        static constexpr char hex[] = "0123456789abcdef";
        q += "\\x";
        q += hex[c >> 4];
        q += hex[c & 15];
      } else {
        q += ch;
      }
    }
    line(key, q + '"');
  }

  void put(std::string_view key, bool v) { line(key, v ? "true" : "false"); }

  void put(std::string_view key, resource_type t) { line(key, to_string(t)); }

  template <class N, std::enable_if_t<std::is_arithmetic_v<N>, int> = 0>
  void put(std::string_view key, N v) {
    char buf[64];
    auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, v);
    (void)ec;
    line(key, std::string(buf, ptr));
  }

  template <class T>
  void put(std::string_view key, const std::optional<T>& v) {
    if (v)
      put(key, *v);
    else
      line(key, "(none)");
  }

  /// `key.size`, then each element under `key[i]` by `each(lines&, const T&)`.
  template <class T, class F>
  void list(std::string_view key, const std::vector<T>& v, F each) {
    put(std::string(key) + ".size", v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::string saved = prefix_;
      prefix_ += std::string(key) + "[" + std::to_string(i) + "].";
      each(*this, v[i]);
      prefix_ = std::move(saved);
    }
  }

  /// Strings, one per element.
  void list(std::string_view key, const std::vector<std::string>& v) {
    put(std::string(key) + ".size", v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      put(std::string(key) + "[" + std::to_string(i) + "]", v[i]);
  }

private:
  std::string prefix_;

  void line(std::string_view key, const std::string& value) {
    out += prefix_;
    out += key;
    out += " = ";
    out += value;
    out += '\n';
  }
};

void request(lines& o, const resource_request& r, const std::string& p) {
  o.put(p + "req_secs", r.req_secs);
  o.put(p + "req_instances", r.req_instances);
  o.put(p + "estimated_delay", r.estimated_delay);
}

void host(lines& o, const host_description& h) {
  o.put("host.host_cpid", h.host_cpid);
  o.put("host.domain_name", h.domain_name);
  o.put("host.p_ncpus", h.p_ncpus);
  o.put("host.p_vendor", h.p_vendor);
  o.put("host.p_model", h.p_model);
  o.put("host.p_fpops", h.p_fpops);
  o.put("host.p_iops", h.p_iops);
  o.put("host.p_membw", h.p_membw);
  o.put("host.m_nbytes", h.m_nbytes);
  o.put("host.m_swap", h.m_swap);
  o.put("host.d_total", h.d_total);
  o.put("host.d_free", h.d_free);
  o.put("host.os_name", h.os_name);
  o.put("host.os_version", h.os_version);
  o.put("host.ip_addr", h.ip_addr);
  o.put("host.on_frac", h.on_frac);
  o.put("host.active_frac", h.active_frac);
  o.put("host.gpu_active_frac", h.gpu_active_frac);
}

void coproc(lines& o, const coproc_description& c) {
  o.put("type", c.type);
  o.put("count", c.count);
  o.put("peak_flops", c.peak_flops);
  request(o, c.request, "request.");
  o.put("available_ram", c.available_ram);
  o.put("total_ram", c.total_ram);
  o.put("driver_version", c.driver_version);
  o.put("cuda_version", c.cuda_version);
  o.put("have_cuda", c.have_cuda);
  o.put("have_cal", c.have_cal);
  o.put("have_opencl", c.have_opencl);
}

void reported(lines& o, const reported_result& r) {
  o.put("name", r.name);
  o.put("state", r.state);
  o.put("exit_status", r.exit_status);
  o.put("final_cpu_time", r.final_cpu_time);
  o.put("final_elapsed_time", r.final_elapsed_time);
  o.put("platform", r.platform);
  o.put("version_num", r.version_num);
  o.put("plan_class", r.plan_class);
  o.put("app_version_num", r.app_version_num);
  o.put("stderr_out", r.stderr_out);
  o.list("files", r.files, [](lines& f, const reported_file& x) {
    f.put("name", x.name);
    f.put("nbytes", x.nbytes);
    f.put("md5_cksum", x.md5_cksum);
  });
  o.put("app_units", r.app_units);
  o.put("raw_flops_per_au", r.raw_flops_per_au);
}

void app_version(lines& o, const client_app_version& a) {
  o.put("app_name", a.app_name);
  o.put("version_num", a.version_num);
  o.put("platform", a.platform);
  o.put("plan_class", a.plan_class);
  o.put("avg_ncpus", a.avg_ncpus);
  o.put("flops", a.flops);
  o.put("coproc_type", a.coproc_type);
  o.put("coproc_count", a.coproc_count);
}

void file_refs(lines& o, std::string_view key, const std::vector<file_ref>& refs) {
  o.list(key, refs, [](lines& f, const file_ref& x) {
    f.put("file_name", x.file_name);
    f.put("open_name", x.open_name);
    f.put("copy_file", x.copy_file);
    f.put("optional", x.optional);
    f.put("main_program", x.main_program);
  });
}

void file(lines& o, const file_description& f) {
  o.put("name", f.name);
  o.put("is_output", f.is_output);
  o.put("nbytes", f.nbytes);
  o.put("md5_cksum", f.md5_cksum);
  o.put("max_nbytes", f.max_nbytes);
  o.put("xml_signature", f.xml_signature);
  o.put("executable", f.executable);
  o.put("file_signature", f.file_signature);
}

void app(lines& o, const app_description& a) {
  o.put("name", a.name);
  o.put("user_friendly_name", a.user_friendly_name);
  o.put("non_cpu_intensive", a.non_cpu_intensive);
}

void sent_version(lines& o, const app_version_description& v) {
  o.put("app_name", v.app_name);
  o.put("version_num", v.version_num);
  o.put("api_version", v.api_version);
  o.put("platform", v.platform);
  o.put("plan_class", v.plan_class);
  o.put("avg_ncpus", v.avg_ncpus);
  o.put("max_ncpus", v.max_ncpus);
  o.put("flops", v.flops);
  o.put("cmdline", v.cmdline);
  o.put("coproc_type", v.coproc_type);
  o.put("coproc_count", v.coproc_count);
  o.put("gpu_ram", v.gpu_ram);
  file_refs(o, "files", v.files);
  o.put("dont_throttle", v.dont_throttle);
  o.put("needs_network", v.needs_network);
  o.put("is_wrapper", v.is_wrapper);
}

void workunit(lines& o, const workunit_description& w) {
  o.put("name", w.name);
  o.put("app_name", w.app_name);
  o.put("command_line", w.command_line);
  o.put("rsc_fpops_est", w.rsc_fpops_est);
  o.put("rsc_fpops_bound", w.rsc_fpops_bound);
  o.put("rsc_memory_bound", w.rsc_memory_bound);
  o.put("rsc_disk_bound", w.rsc_disk_bound);
  file_refs(o, "inputs", w.inputs);
}

void result(lines& o, const result_description& r) {
  o.put("name", r.name);
  o.put("wu_name", r.wu_name);
  o.put("report_deadline", r.report_deadline);
  o.put("platform", r.platform);
  o.put("version_num", r.version_num);
  o.put("plan_class", r.plan_class);
  file_refs(o, "outputs", r.outputs);
  o.put("report_immediately", r.report_immediately);
  o.put("peak_flops_per_sec", r.peak_flops_per_sec);
  o.put("predicted_app_units", r.predicted_app_units);
  o.put("est_seconds", r.est_seconds);
  o.put("bound_seconds", r.bound_seconds);
}

} // namespace

std::string describe(const sched_request& q) {
  lines o;
  o.put("authenticator", q.authenticator);
  o.put("hostid", q.hostid);
  o.put("rpc_seqno", q.rpc_seqno);
  o.put("core_client_major_version", q.core_client_major_version);
  o.put("core_client_minor_version", q.core_client_minor_version);
  o.put("core_client_release", q.core_client_release);
  o.put("platform_name", q.platform_name);
  o.list("alt_platforms", q.alt_platforms);
  o.put("code_sign_key", q.code_sign_key);
  o.put("allow_multiple_clients", q.allow_multiple_clients);
  o.put("dont_send_work", q.dont_send_work);
  o.put("resource_share_fraction", q.resource_share_fraction);
  o.put("duration_correction_factor", q.duration_correction_factor);
  o.put("work_req_seconds", q.work_req_seconds);
  request(o, q.cpu, "cpu.");
  o.list("coprocs", q.coprocs, coproc);
  host(o, q.host);
  o.list("results", q.results, reported);
  o.list("app_versions", q.app_versions, app_version);
  o.list("other_results", q.other_results, [](lines& l, const other_result& x) {
    l.put("name", x.name);
    l.put("app_version_index", x.app_version_index);
    l.put("plan_class", x.plan_class);
  });
  o.put("other_results_listed", q.other_results_listed);
  o.list("sequences_held", q.sequences_held);
  o.list("app_unit_versions", q.app_unit_versions, [](lines& l, const app_unit_version& x) {
    l.put("app_name", x.app_name);
    l.put("version_num", x.version_num);
    l.put("plan_class", x.plan_class);
    l.put("seconds_per_app_unit", x.seconds_per_app_unit);
    l.put("raw_flops_per_sec", x.raw_flops_per_sec);
  });
  return std::move(o.out);
}

std::string describe(const sched_reply& r) {
  lines o;
  o.put("project_name", r.project_name);
  o.put("host", r.host);
  o.put("hostid", r.hostid);
  o.put("request_delay", r.request_delay);
  o.put("next_rpc_delay", r.next_rpc_delay);
  o.list("messages", r.messages, [](lines& l, const reply_message& m) {
    l.put("text", m.text);
    l.put("notice", m.notice);
  });
  o.put("project_is_down", r.project_is_down);
  o.put("dont_use_dcf", r.dont_use_dcf);
  o.put("user_name", r.user_name);
  o.put("userid", r.userid);
  o.put("team_name", r.team_name);
  o.put("user_total_credit", r.user_total_credit);
  o.put("user_expavg_credit", r.user_expavg_credit);
  o.put("host_total_credit", r.host_total_credit);
  o.put("host_expavg_credit", r.host_expavg_credit);
  o.list("files", r.files, file);
  o.list("apps", r.apps, app);
  o.list("app_versions", r.app_versions, sent_version);
  o.list("workunits", r.workunits, workunit);
  o.list("results", r.results, result);
  o.list("result_acks", r.result_acks);
  o.list("result_aborts", r.result_aborts);
  o.list("sequences_revoked", r.sequences_revoked);
  o.list("app_units", r.app_units, [](lines& l, const app_units_info& a) {
    l.put("app_name", a.app_name);
    l.put("est_flops_per_au", a.est_flops_per_au);
    l.put("has_cpu_and_gpu", a.has_cpu_and_gpu);
  });
  o.put("code_sign_key", r.code_sign_key);
  o.put("code_sign_key_signature", r.code_sign_key_signature);
  return std::move(o.out);
}

std::string describe(const upload_header& h) {
  lines o;
  o.put("kind", std::string(h.kind == upload_header::kind_t::get_file_size ? "get_file_size"
                                                                           : "file_upload"));
  o.put("name", h.name);
  o.put("max_nbytes", h.max_nbytes);
  o.put("nbytes", h.nbytes);
  o.put("md5_cksum", h.md5_cksum);
  o.put("offset", h.offset);
  o.put("data_offset", h.data_offset);
  o.put("xml_signature", h.xml_signature);
  return std::move(o.out);
}

} // namespace cobble::net::testing
