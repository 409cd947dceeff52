/// The scheduler reply: write_sched_reply() with the file URLs it gives (the server side)
/// and parse_sched_reply() (the client side, cobble-sim --server), both driven by the field
/// tables below.

#include "net/boinc_xml.hpp"
#include "net/xml_fields.hpp"
#include "net/xml_text.hpp"

#include <pugixml.hpp>

#include <string_view>
#include <utility>

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

// -- files -------------------------------------------------------------------------------

bool is_output(const file_description& f) {
  return f.is_output;
}

bool is_input(const file_description& f) {
  return !f.is_output;
}

/// An `<upload_url>` marks an output (the URL itself is not kept).
void read_upload_url(reader&, const field<file_description>&, const pugi::xml_node&,
                     file_description& f) {
  f.is_output = true;
}

void write_upload_url(sink& o, const field<file_description>& f, const file_description&) {
  o.x.text(f.tag, o.upload_url);
}

void write_download_url(sink& o, const field<file_description>& f, const file_description& d) {
  o.x.text(f.tag, download_url(*o.urls, d.name));
}

/// Outputs get upload_url, max_nbytes and the signature; inputs download_url, nbytes and the
/// checksum; app files also whether they are executable and their code signature.
constexpr field<file_description> file_fields[] = {
  value<&file_description::name>("name"),
  present<&file_description::executable>("executable"),
  custom("upload_url", read_upload_url, write_upload_url, is_output),
  value<&file_description::max_nbytes>("max_nbytes", when::always, is_output),
  block<&file_description::xml_signature>("xml_signature", when::nonempty, is_output),
  custom("download_url", nullptr, write_download_url, is_input),
  value<&file_description::nbytes>("nbytes", when::bound, is_input),
  value<&file_description::md5_cksum>("md5_cksum", when::nonempty, is_input),
  block<&file_description::file_signature>("file_signature", when::nonempty, is_input),
};

constexpr field<file_ref> file_ref_fields[] = {
  value<&file_ref::file_name>("file_name"),
  value<&file_ref::open_name>("open_name", when::nonempty),
  value<&file_ref::copy_file>("copy_file"),
  value<&file_ref::optional>("optional"),
  present<&file_ref::main_program>("main_program"),
};

// -- apps --------------------------------------------------------------------------------

constexpr field<app_description> app_fields[] = {
  value<&app_description::name>("name"),
  value<&app_description::user_friendly_name>("user_friendly_name", when::nonempty),
  value<&app_description::non_cpu_intensive>("non_cpu_intensive"),
};

/// The elements every host gets, then those worked out for this host (BOINC's order).
constexpr field<app_version_description> app_version_fields[] = {
  value<&app_version_description::app_name>("app_name"),
  value<&app_version_description::version_num>("version_num"),
  value<&app_version_description::api_version>("api_version", when::nonempty),
  items<&app_version_description::files, file_ref_fields>("file_ref"),
  present<&app_version_description::dont_throttle>("dont_throttle"),
  present<&app_version_description::needs_network>("needs_network"),
  present<&app_version_description::is_wrapper>("is_wrapper"),
  value<&app_version_description::platform>("platform", when::nonempty),
  value<&app_version_description::plan_class>("plan_class", when::nonempty),
  value<&app_version_description::avg_ncpus>("avg_ncpus"),
  value<&app_version_description::max_ncpus>("max_ncpus"),
  value<&app_version_description::flops>("flops", when::bound),
  value<&app_version_description::cmdline>("cmdline", when::nonempty),
  coproc_use<&app_version_description::coproc_type, &app_version_description::coproc_count>(
    "coproc"),
  value<&app_version_description::gpu_ram>("gpu_ram", when::bound),
};

// -- jobs --------------------------------------------------------------------------------

constexpr field<workunit_description> workunit_fields[] = {
  value<&workunit_description::name>("name"),
  value<&workunit_description::app_name>("app_name"),
  value<&workunit_description::command_line>("command_line", when::nonempty),
  value<&workunit_description::rsc_fpops_est>("rsc_fpops_est", when::bound),
  value<&workunit_description::rsc_fpops_bound>("rsc_fpops_bound", when::bound),
  value<&workunit_description::rsc_memory_bound>("rsc_memory_bound", when::bound),
  value<&workunit_description::rsc_disk_bound>("rsc_disk_bound", when::bound),
  items<&workunit_description::inputs, file_ref_fields>("file_ref"),
};

/// The platform and version are left out for "anonymous": the client then picks its own
/// highest version.
bool names_version(const result_description& r) {
  return !r.platform.empty() && r.platform != "anonymous";
}

constexpr field<result_description> result_fields[] = {
  value<&result_description::name>("name"),
  value<&result_description::wu_name>("wu_name"),
  value<&result_description::report_deadline>("report_deadline"),
  value<&result_description::platform>("platform", when::always, names_version),
  value<&result_description::version_num>("version_num", when::always, names_version),
  value<&result_description::plan_class>("plan_class", when::nonempty),
  items<&result_description::outputs, file_ref_fields>("file_ref"),
  present<&result_description::report_immediately>("report_immediately"),
  value<&result_description::peak_flops_per_sec>("peak_flops_per_sec", when::bound),
  value<&result_description::predicted_app_units>("predicted_app_units", when::bound),
  value<&result_description::est_seconds>("est_seconds", when::bound),
  value<&result_description::bound_seconds>("bound_seconds", when::bound),
};

constexpr field<app_units_info> app_units_fields[] = {
  value<&app_units_info::app_name>("app_name"),
  value<&app_units_info::est_flops_per_au>("est_flops_per_au", when::bound),
  present<&app_units_info::has_cpu_and_gpu>("has_cpu_and_gpu"),
};

// -- the reply ---------------------------------------------------------------------------

void write_scheduler_version(sink& o, const field<sched_reply>& f, const sched_reply&) {
  o.x.number(f.tag, 720);
}

void read_message(reader&, const field<sched_reply>&, const pugi::xml_node& n, sched_reply& rep) {
  reply_message m;
  m.text.assign(trim(reader::content(n)));
  m.notice = std::string_view(n.attribute("priority").value()) == "notice";
  rep.messages.push_back(std::move(m));
}

void write_messages(sink& o, const field<sched_reply>& f, const sched_reply& rep) {
  for (const auto& m : rep.messages) {
    o.x.start(m.notice ? "message priority=\"notice\"" : "message priority=\"low\"");
    append_escaped(o.x.s, m.text);
    o.x.end(f.tag);
  }
}

constexpr field<sched_reply> reply_fields[] = {
  custom("scheduler_version", nullptr, write_scheduler_version),
  value<&sched_reply::project_name>("project_name", when::nonempty),
  value<&sched_reply::hostid>("hostid"),
  value<&sched_reply::request_delay>("request_delay"),
  value<&sched_reply::next_rpc_delay>("next_rpc_delay"),
  custom("message", read_message, write_messages),
  present<&sched_reply::project_is_down>("project_is_down"),
  present<&sched_reply::dont_use_dcf>("dont_use_dcf"),
  value<&sched_reply::user_name>("user_name", when::nonempty),
  value<&sched_reply::userid>("userid", when::nonzero),
  value<&sched_reply::team_name>("team_name", when::nonempty),
  value<&sched_reply::user_total_credit>("user_total_credit"),
  value<&sched_reply::user_expavg_credit>("user_expavg_credit"),
  value<&sched_reply::host_total_credit>("host_total_credit"),
  value<&sched_reply::host_expavg_credit>("host_expavg_credit"),
  items<&sched_reply::files, file_fields>("file_info"),
  items<&sched_reply::apps, app_fields>("app"),
  items<&sched_reply::app_versions, app_version_fields>("app_version"),
  items<&sched_reply::workunits, workunit_fields>("workunit"),
  items<&sched_reply::results, result_fields>("result"),
  items<&sched_reply::app_units, app_units_fields>("app_units_info"),
  block<&sched_reply::code_sign_key>("code_sign_key", when::nonempty),
  block<&sched_reply::code_sign_key_signature>("code_sign_key_signature", when::nonempty),
  texts_in<&sched_reply::result_acks>("result_ack", "name"),
  texts_in<&sched_reply::result_aborts>("result_abort", "name"),
  texts<&sched_reply::sequences_revoked>("work_sequence_revoked"),
};

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
  sink o;
  o.urls = &urls;
  o.upload_url = upload_url(urls);
  std::size_t estimate = 1024 + reply.files.size() * 256 + reply.workunits.size() * 512
                         + reply.app_versions.size() * 512 + reply.code_sign_key.size()
                         + reply.results.size() * 384
                         + (reply.result_acks.size() + reply.result_aborts.size()
                            + reply.sequences_revoked.size())
                             * 96;
  for (const auto& m : reply.messages)
    estimate += m.text.size() + 48;
  o.x.s.reserve(estimate);

  o.x.open("scheduler_reply");
  write_fields(o, reply, reply_fields);
  o.x.close("scheduler_reply");
  return std::move(o.x.s);
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
  reader r;
  clear_flags(rep, reply_fields); // dont_use_dcf, true by default, is false unless sent
  read_fields(r, root, rep, reply_fields);
  if (r.failed())
    return result::failure(std::move(r.error));
  return result::success(std::move(rep));
}

} // namespace cobble::net
