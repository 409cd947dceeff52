/// The scheduler reply: write_sched_reply() with the file URLs it gives (the server side)
/// and parse_sched_reply() (the client side, cobble-sim --server).

#include "net/boinc_xml.hpp"
#include "net/xml_text.hpp"

#include <pugixml.hpp>

#include <cmath>

namespace cobble::net {

using namespace xml;

namespace {

std::string_view strip_slashes(std::string_view s, bool leading) {
  while (!s.empty() && s.back() == '/')
    s.remove_suffix(1);
  while (leading && !s.empty() && s.front() == '/')
    s.remove_prefix(1);
  return s;
}

/// base_url + "/" + project (no trailing slash; the project part is left out when empty).
std::string project_prefix(const reply_urls& urls) {
  std::string out(strip_slashes(urls.base_url, false));
  auto project = strip_slashes(urls.project, true);
  if (!project.empty()) {
    out += '/';
    out += project;
  }
  return out;
}

void append_percent_encoded(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789ABCDEF";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
                 || c == '.' || c == '_' || c == '~' || c == '-';
    if (plain) {
      out += ch;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
}

void write_file_ref(writer& x, const file_ref& f) {
  x.open("file_ref");
  x.text("file_name", f.file_name);
  if (!f.open_name.empty())
    x.text("open_name", f.open_name);
  x.flag("copy_file", f.copy_file);
  x.flag("optional", f.optional);
  x.close("file_ref");
}

/// Writes a positive, finite resource bound; otherwise the client's default applies.
void write_bound(writer& x, std::string_view tag, double v) {
  if (std::isfinite(v) && v > 0)
    x.number(tag, v);
}

void read_file_ref(reader& r, const pugi::xml_node& node, file_ref& f) {
  f.copy_file = false;
  for (auto n = node.first_child(); n && !r.failed(); n = n.next_sibling()) {
    std::string_view name = n.name();
    if (name == "file_name")
      r.str(n, f.file_name);
    else if (name == "open_name")
      r.str(n, f.open_name);
    else if (name == "copy_file")
      r.boolean(n, f.copy_file);
    else if (name == "optional")
      r.boolean(n, f.optional);
  }
}

} // namespace

std::string download_url(const reply_urls& urls, std::string_view name) {
  std::string out = project_prefix(urls);
  out += "/download/";
  append_percent_encoded(out, name);
  return out;
}

std::string upload_url(const reply_urls& urls) {
  return project_prefix(urls) + "/upload";
}

std::string write_sched_reply(const sched_reply& reply, const reply_urls& urls) {
  writer x;
  std::size_t estimate = 1024 + reply.files.size() * 256 + reply.workunits.size() * 512
                         + reply.results.size() * 384
                         + (reply.result_acks.size() + reply.result_aborts.size()
                            + reply.sequences_revoked.size())
                             * 96;
  for (const auto& m : reply.messages)
    estimate += m.text.size() + 48;
  x.s.reserve(estimate);

  x.open("scheduler_reply");
  x.number("scheduler_version", 720);
  if (!reply.project_name.empty())
    x.text("project_name", reply.project_name);
  if (reply.hostid)
    x.number("hostid", *reply.hostid);
  x.number("request_delay", reply.request_delay);
  if (reply.next_rpc_delay)
    x.number("next_rpc_delay", *reply.next_rpc_delay);
  for (const auto& m : reply.messages) {
    x.start(m.notice ? "message priority=\"notice\"" : "message priority=\"low\"");
    append_escaped(x.s, m.text);
    x.end("message");
  }
  x.flag("project_is_down", reply.project_is_down);
  x.flag("dont_use_dcf", reply.dont_use_dcf);

  if (!reply.user_name.empty())
    x.text("user_name", reply.user_name);
  if (reply.userid != 0)
    x.number("userid", reply.userid);
  x.number("user_total_credit", reply.user_total_credit);
  x.number("user_expavg_credit", reply.user_expavg_credit);
  x.number("host_total_credit", reply.host_total_credit);
  x.number("host_expavg_credit", reply.host_expavg_credit);

  const std::string up_url = upload_url(urls);
  std::string url;
  for (const auto& f : reply.files) {
    x.open("file_info");
    x.text("name", f.name);
    if (f.is_output) {
      x.text("upload_url", up_url);
      x.number("max_nbytes", f.max_nbytes);
      if (!f.xml_signature.empty())
        x.block("xml_signature", f.xml_signature);
    } else {
      url = download_url(urls, f.name);
      x.text("download_url", url);
      if (std::isfinite(f.nbytes) && f.nbytes > 0)
        x.number("nbytes", f.nbytes);
      if (!f.md5_cksum.empty())
        x.text("md5_cksum", f.md5_cksum);
    }
    x.close("file_info");
  }

  for (const auto& wu : reply.workunits) {
    x.open("workunit");
    x.text("name", wu.name);
    x.text("app_name", wu.app_name);
    if (!wu.command_line.empty())
      x.text("command_line", wu.command_line);
    write_bound(x, "rsc_fpops_est", wu.rsc_fpops_est);
    write_bound(x, "rsc_fpops_bound", wu.rsc_fpops_bound);
    write_bound(x, "rsc_memory_bound", wu.rsc_memory_bound);
    write_bound(x, "rsc_disk_bound", wu.rsc_disk_bound);
    for (const auto& f : wu.inputs)
      write_file_ref(x, f);
    x.close("workunit");
  }

  for (const auto& r : reply.results) {
    x.open("result");
    x.text("name", r.name);
    x.text("wu_name", r.wu_name);
    x.number("report_deadline", r.report_deadline);
    if (!r.platform.empty() && r.platform != "anonymous") {
      x.text("platform", r.platform);
      x.number("version_num", r.version_num);
    }
    if (!r.plan_class.empty())
      x.text("plan_class", r.plan_class);
    for (const auto& f : r.outputs)
      write_file_ref(x, f);
    x.flag("report_immediately", r.report_immediately);
    write_bound(x, "peak_flops_per_sec", r.peak_flops_per_sec);
    write_bound(x, "predicted_app_units", r.predicted_app_units);
    write_bound(x, "est_seconds", r.est_seconds);
    write_bound(x, "bound_seconds", r.bound_seconds);
    x.close("result");
  }

  for (const auto& a : reply.app_units) {
    x.open("app_units_info");
    x.text("app_name", a.app_name);
    write_bound(x, "est_flops_per_au", a.est_flops_per_au);
    x.flag("has_cpu_and_gpu", a.has_cpu_and_gpu);
    x.close("app_units_info");
  }

  for (const auto& name : reply.result_acks) {
    x.open("result_ack");
    x.text("name", name);
    x.close("result_ack");
  }
  for (const auto& name : reply.result_aborts) {
    x.open("result_abort");
    x.text("name", name);
    x.close("result_abort");
  }
  for (const auto& name : reply.sequences_revoked)
    x.text("work_sequence_revoked", name);
  x.close("scheduler_reply");
  return std::move(x.s);
}

parse_result<sched_reply> parse_sched_reply(std::string_view body) {
  using result = parse_result<sched_reply>;
  if (trim(body).empty())
    return result::failure("empty scheduler reply");
  pugi::xml_document doc;
  auto pr = doc.load_buffer(body.data(), body.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!pr)
    return result::failure(std::string("malformed scheduler reply XML: ") + pr.description()
                           + " at offset " + std::to_string(pr.offset));
  auto root = doc.document_element();
  if (!root || std::string_view(root.name()) != "scheduler_reply")
    return result::failure(std::string("root element is <") + (root ? root.name() : "")
                           + ">, expected <scheduler_reply>");
  sched_reply rep;
  rep.dont_use_dcf = false;
  reader r;
  for (auto n = root.first_child(); n && !r.failed(); n = n.next_sibling()) {
    if (n.type() != pugi::node_element)
      continue;
    std::string_view name = n.name();
    if (name == "project_name")
      r.str(n, rep.project_name);
    else if (name == "hostid") {
      std::uint64_t id = 0;
      r.integer(n, id);
      rep.hostid = id;
    } else if (name == "request_delay")
      r.num(n, rep.request_delay);
    else if (name == "next_rpc_delay") {
      double d = 0;
      r.num(n, d);
      rep.next_rpc_delay = d;
    } else if (name == "message") {
      reply_message m;
      m.text.assign(trim(reader::content(n)));
      m.notice = std::string_view(n.attribute("priority").value()) == "notice";
      rep.messages.push_back(std::move(m));
    } else if (name == "project_is_down")
      rep.project_is_down = true;
    else if (name == "dont_use_dcf")
      rep.dont_use_dcf = true;
    else if (name == "user_name")
      r.str(n, rep.user_name);
    else if (name == "userid")
      r.integer(n, rep.userid);
    else if (name == "user_total_credit")
      r.num(n, rep.user_total_credit);
    else if (name == "user_expavg_credit")
      r.num(n, rep.user_expavg_credit);
    else if (name == "host_total_credit")
      r.num(n, rep.host_total_credit);
    else if (name == "host_expavg_credit")
      r.num(n, rep.host_expavg_credit);
    else if (name == "file_info") {
      file_description f;
      for (auto m = n.first_child(); m && !r.failed(); m = m.next_sibling()) {
        std::string_view fname = m.name();
        if (fname == "name")
          r.str(m, f.name);
        else if (fname == "upload_url")
          f.is_output = true;
        else if (fname == "nbytes")
          r.num(m, f.nbytes);
        else if (fname == "md5_cksum")
          r.str(m, f.md5_cksum);
        else if (fname == "max_nbytes")
          r.num(m, f.max_nbytes);
        else if (fname == "xml_signature")
          r.str(m, f.xml_signature);
      }
      rep.files.push_back(std::move(f));
    } else if (name == "workunit") {
      workunit_description w;
      for (auto m = n.first_child(); m && !r.failed(); m = m.next_sibling()) {
        std::string_view wname = m.name();
        if (wname == "name")
          r.str(m, w.name);
        else if (wname == "app_name")
          r.str(m, w.app_name);
        else if (wname == "command_line")
          r.str(m, w.command_line);
        else if (wname == "rsc_fpops_est")
          r.num(m, w.rsc_fpops_est);
        else if (wname == "rsc_fpops_bound")
          r.num(m, w.rsc_fpops_bound);
        else if (wname == "rsc_memory_bound")
          r.num(m, w.rsc_memory_bound);
        else if (wname == "rsc_disk_bound")
          r.num(m, w.rsc_disk_bound);
        else if (wname == "file_ref") {
          w.inputs.emplace_back();
          read_file_ref(r, m, w.inputs.back());
        }
      }
      rep.workunits.push_back(std::move(w));
    } else if (name == "result") {
      result_description d;
      for (auto m = n.first_child(); m && !r.failed(); m = m.next_sibling()) {
        std::string_view rname = m.name();
        if (rname == "name")
          r.str(m, d.name);
        else if (rname == "wu_name")
          r.str(m, d.wu_name);
        else if (rname == "report_deadline")
          r.num(m, d.report_deadline);
        else if (rname == "platform")
          r.str(m, d.platform);
        else if (rname == "version_num")
          r.integer(m, d.version_num);
        else if (rname == "plan_class")
          r.str(m, d.plan_class);
        else if (rname == "report_immediately")
          d.report_immediately = true;
        else if (rname == "peak_flops_per_sec")
          r.num(m, d.peak_flops_per_sec);
        else if (rname == "predicted_app_units")
          r.num(m, d.predicted_app_units);
        else if (rname == "est_seconds")
          r.num(m, d.est_seconds);
        else if (rname == "bound_seconds")
          r.num(m, d.bound_seconds);
        else if (rname == "file_ref") {
          d.outputs.emplace_back();
          read_file_ref(r, m, d.outputs.back());
        }
      }
      rep.results.push_back(std::move(d));
    } else if (name == "result_ack" || name == "result_abort") {
      std::string id;
      r.str(n.child("name"), id);
      (name == "result_ack" ? rep.result_acks : rep.result_aborts).push_back(std::move(id));
    } else if (name == "work_sequence_revoked") {
      rep.sequences_revoked.emplace_back();
      r.str(n, rep.sequences_revoked.back());
    } else if (name == "app_units_info") {
      app_units_info a;
      for (auto m = n.first_child(); m && !r.failed(); m = m.next_sibling()) {
        std::string_view aname = m.name();
        if (aname == "app_name")
          r.str(m, a.app_name);
        else if (aname == "est_flops_per_au")
          r.num(m, a.est_flops_per_au);
        else if (aname == "has_cpu_and_gpu")
          a.has_cpu_and_gpu = true;
      }
      rep.app_units.push_back(std::move(a));
    }
  }
  if (r.failed())
    return result::failure(std::move(r.error));
  return result::success(std::move(rep));
}

} // namespace cobble::net
