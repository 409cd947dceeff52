#include "net/boinc_xml.hpp"

#include "storage/file_store.hpp"

#include <pugixml.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <system_error>
#include <type_traits>

namespace cobble::net {

namespace {

// ---------------------------------------------------------------------------------------
// Text helpers shared by the parsers and writers.

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && is_space(s.back()))
    s.remove_suffix(1);
  return s;
}

/// strtod and strtol accept a leading '+', from_chars does not: drop one (but not "+-").
bool drop_plus(std::string_view& s) {
  if (s.front() != '+')
    return true;
  s.remove_prefix(1);
  return !s.empty() && s.front() != '-' && s.front() != '+';
}

/// Parses a floating-point number with strtod syntax, without depending on the locale.
/// Empty text is 0 (as BOINC's parser has it). NaN and infinities are accepted.
bool to_double(std::string_view s, double& out) {
  s = trim(s);
  if (s.empty()) {
    out = 0;
    return true;
  }
  if (!drop_plus(s))
    return false;
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ptr != s.data() + s.size())
    return false;
  if (ec == std::errc::result_out_of_range) {
    // Overflow or underflow: strtod gives ±HUGE_VAL or a tiny value; do the same.
    std::string copy(s);
    v = std::strtod(copy.c_str(), nullptr);
  } else if (ec != std::errc{}) {
    return false;
  }
  out = v;
  return true;
}

/// Parses a base-10 integer that must fit `I` exactly (no fraction, no trailing junk).
template <class I>
bool to_integer(std::string_view s, I& out) {
  s = trim(s);
  if (s.empty()) {
    out = 0;
    return true;
  }
  if (!drop_plus(s))
    return false;
  I v{};
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec != std::errc{} || ptr != s.data() + s.size())
    return false;
  out = v;
  return true;
}

/// Decodes the five predefined XML entities and numeric character references (used for the
/// line-oriented upload header, which never goes through pugixml).
std::string xml_unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    auto semi = s.find(';', i);
    if (semi == std::string_view::npos || semi - i > 10) {
      out += s[i];
      continue;
    }
    auto ent = s.substr(i + 1, semi - i - 1);
    char c = 0;
    if (ent == "amp")
      c = '&';
    else if (ent == "lt")
      c = '<';
    else if (ent == "gt")
      c = '>';
    else if (ent == "quot")
      c = '"';
    else if (ent == "apos")
      c = '\'';
    else if (ent.size() > 1 && ent[0] == '#') {
      unsigned code = 0;
      auto digits = ent.substr(1);
      int base = 10;
      if (!digits.empty() && (digits[0] == 'x' || digits[0] == 'X')) {
        base = 16;
        digits.remove_prefix(1);
      }
      auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), code, base);
      if (ec == std::errc{} && p == digits.data() + digits.size() && code > 0 && code < 128)
        c = static_cast<char>(code);
    }
    if (c == 0) {
      out += s[i];
      continue;
    }
    out += c;
    i = semi;
  }
  return out;
}

/// Appends `s` escaped for XML text or attribute values. Control characters other than tab,
/// newline and carriage return are dropped: they are not XML and the client reads C strings.
void append_escaped(std::string& out, std::string_view s) {
  // Runs of characters that need nothing are appended whole (most values are such a run).
  auto plain = [](char ch) {
    auto c = static_cast<unsigned char>(ch);
    return c >= 0x20 ? (ch != '&' && ch != '<' && ch != '>' && ch != '"' && ch != '\'')
                     : (ch == '\t' || ch == '\n' || ch == '\r');
  };
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t run = i;
    while (run < s.size() && plain(s[run]))
      ++run;
    out.append(s.data() + i, run - i);
    if (run == s.size())
      break;
    switch (s[run]) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default: // other control characters are left out
        break;
    }
    i = run + 1;
  }
}

/// Appends the shortest text that reads back as exactly `v`; non-finite values become 0.
void append_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += '0';
    return;
  }
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, v);
  if (ec != std::errc{}) { // cannot happen with 64 bytes; keep the output well-formed anyway
    out += '0';
    return;
  }
  out.append(buf, ptr);
}

template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
void append_number(std::string& out, I v) {
  char buf[32];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  out.append(buf, ptr);
}

/// Cuts `s` to at most `max` bytes without splitting a UTF-8 sequence.
void cap_utf8(std::string& s, std::size_t max) {
  if (s.size() <= max)
    return;
  std::size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80)
    --cut;
  s.resize(cut);
}

// ---------------------------------------------------------------------------------------
// Scheduler request.

/// Reads typed values out of pugixml nodes; remembers the first error.
class reader {
public:
  std::string error;

  bool failed() const { return !error.empty(); }

  static std::string_view text(const pugi::xml_node& n) { return n.child_value(); }

  void str(const pugi::xml_node& n, std::string& out) { out.assign(trim(text(n))); }

  void num(const pugi::xml_node& n, double& out) {
    if (!to_double(text(n), out))
      fail(n, "a number");
  }

  template <class I>
  void integer(const pugi::xml_node& n, I& out) {
    if (!to_integer(text(n), out))
      fail(n, std::is_signed_v<I> ? "an integer" : "a non-negative integer");
  }

  void boolean(const pugi::xml_node& n, bool& out) {
    double v = 0;
    if (!to_double(text(n), v)) {
      fail(n, "a boolean (empty, 0 or 1)");
      return;
    }
    // `<x/>` has empty text, which to_double reads as 0: presence alone means true.
    out = trim(text(n)).empty() || v != 0;
  }

private:
  void fail(const pugi::xml_node& n, const char* what) {
    if (failed())
      return;
    auto t = trim(text(n));
    std::string shown(t.substr(0, 40));
    if (t.size() > 40)
      shown += "...";
    error = "bad value in " + n.path() + ": '" + shown + "' is not " + what;
  }
};

/// pugixml writer that appends to a std::string.
struct string_writer : pugi::xml_writer {
  std::string& out;
  explicit string_writer(std::string& o) : out(o) {}
  void write(const void* data, std::size_t size) override {
    out.append(static_cast<const char*>(data), size);
  }
};

/// The content of `<stderr_out>` as text: elements verbatim, CDATA unwrapped.
std::string stderr_text(const pugi::xml_node& n) {
  std::string out;
  string_writer w(out);
  for (auto c = n.first_child(); c; c = c.next_sibling()) {
    switch (c.type()) {
      case pugi::node_pcdata:
      case pugi::node_cdata:
        out += c.value();
        break;
      case pugi::node_element:
        c.print(w, "", pugi::format_raw);
        break;
      default:
        break;
    }
    if (out.size() > max_stderr_bytes)
      break;
  }
  cap_utf8(out, max_stderr_bytes);
  return out;
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
      type = parse_resource_type(trim(reader::text(n)));
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
      res.stderr_out = stderr_text(n);
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
          type = parse_resource_type(trim(reader::text(m)));
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

// ---------------------------------------------------------------------------------------
// Scheduler reply.

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

/// A hand XML writer: one element per line, indented by nesting depth.
class xml_out {
public:
  std::string s;

  void open(std::string_view tag) {
    indent();
    s += '<';
    s += tag;
    s += ">\n";
    ++depth_;
  }
  void close(std::string_view tag) {
    --depth_;
    indent();
    s += "</";
    s += tag;
    s += ">\n";
  }
  void text(std::string_view tag, std::string_view value) {
    start(tag);
    append_escaped(s, value);
    end(tag);
  }
  template <class N>
  void number(std::string_view tag, N value) {
    start(tag);
    append_number(s, value);
    end(tag);
  }
  /// `<tag>`, the escaped value on a line of its own, `</tag>` (how BOINC writes signatures).
  void block(std::string_view tag, std::string_view value) {
    open(tag);
    append_escaped(s, value);
    s += '\n';
    close(tag);
  }
  void flag(std::string_view tag, bool on) {
    if (!on)
      return;
    indent();
    s += '<';
    s += tag;
    s += "/>\n";
  }
  void start(std::string_view tag) {
    indent();
    s += '<';
    s += tag;
    s += '>';
  }
  void end(std::string_view tag) {
    s += "</";
    s += tag;
    s += ">\n";
  }

private:
  int depth_ = 0;
  void indent() { s.append(static_cast<std::size_t>(depth_) * 4, ' '); }
};

void write_file_ref(xml_out& x, const file_ref& f) {
  x.open("file_ref");
  x.text("file_name", f.file_name);
  if (!f.open_name.empty())
    x.text("open_name", f.open_name);
  x.flag("copy_file", f.copy_file);
  x.flag("optional", f.optional);
  x.close("file_ref");
}

/// Writes a positive, finite resource bound; otherwise the client's default applies.
void write_bound(xml_out& x, std::string_view tag, double v) {
  if (std::isfinite(v) && v > 0)
    x.number(tag, v);
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
  xml_out x;
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

// ---------------------------------------------------------------------------------------
// Master page.

std::string master_page(std::string_view project_long_name, std::string_view scheduler_url) {
  constexpr std::size_t max_url = 200;
  if (scheduler_url.empty())
    throw std::invalid_argument("master_page: empty scheduler URL");
  if (scheduler_url.size() > max_url)
    throw std::invalid_argument("master_page: scheduler URL longer than 200 characters");
  for (char c : scheduler_url)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '"' || c == '<' || c == '>'
        || c == '&')
      throw std::invalid_argument("master_page: scheduler URL contains a character that "
                                  "cannot appear in the master file");

  // Escape the name and stop before the <h1>/<title> line could reach 255 characters.
  constexpr std::size_t max_name = 200;
  std::string name;
  for (std::size_t i = 0; i < project_long_name.size();) {
    auto c = static_cast<unsigned char>(project_long_name[i]);
    std::size_t len = c < 0x80           ? 1
                      : (c >> 5) == 0x6  ? 2
                      : (c >> 4) == 0xE  ? 3
                      : (c >> 3) == 0x1E ? 4
                                         : 1;
    len = std::min(len, project_long_name.size() - i);
    std::string piece;
    if (len == 1 && (c < 0x20 || c == 0x7f))
      piece = " ";
    else
      append_escaped(piece, project_long_name.substr(i, len));
    if (name.size() + piece.size() > max_name)
      break;
    name += piece;
    i += len;
  }
  if (name.empty())
    name = "BOINC project";

  std::string out;
  out.reserve(512 + 2 * name.size() + 2 * scheduler_url.size());
  out += "<!DOCTYPE html>\n<html>\n<head>\n<title>";
  out += name;
  out += "</title>\n<link rel=\"boinc_scheduler\" href=\"";
  out += scheduler_url;
  out += "\">\n</head>\n<body>\n<h1>";
  out += name;
  out += "</h1>\n<p>This is a BOINC project. Attach to it with a BOINC client.</p>\n"
         "<scheduler>";
  out += scheduler_url;
  out += "</scheduler>\n</body>\n</html>\n";
  return out;
}

// ---------------------------------------------------------------------------------------
// Upload protocol.

namespace {

/// A non-negative whole byte count, as BOINC writes it with %.0f (".0…" fractions allowed).
bool to_byte_count(std::string_view s, long long& out) {
  s = trim(s);
  if (s.empty())
    return false;
  double v = 0;
  if (!to_double(s, v) || !std::isfinite(v) || v < 0 || v != std::floor(v) || v > 9.0e15)
    return false;
  out = static_cast<long long>(v);
  return true;
}

} // namespace

parse_result<upload_header> parse_upload_header(std::string_view body) {
  using result = parse_result<upload_header>;
  if (trim(body).empty())
    return result::failure("empty upload request");

  constexpr std::size_t max_header = std::size_t{64} * 1024;
  std::optional<std::string> get_file_size, name, md5;
  std::optional<std::string> nbytes_text, max_nbytes_text, offset_text;
  std::optional<std::size_t> data_offset;
  bool in_file_info = false;
  bool in_signature = false;
  std::string signature;

  std::size_t pos = 0;
  while (pos < body.size() && pos < max_header) {
    std::size_t nl = body.find('\n', pos);
    std::size_t line_end = nl == std::string_view::npos ? body.size() : nl;
    std::size_t next = nl == std::string_view::npos ? body.size() : nl + 1;
    std::string_view line = trim(body.substr(pos, line_end - pos));
    pos = next;

    if (line == "<data>") {
      data_offset = next;
      break;
    }
    if (in_signature) {
      auto end = line.find("</xml_signature>");
      signature += std::string{line.substr(0, end)};
      if (end != std::string_view::npos)
        in_signature = false;
      continue;
    }
    if (line.starts_with("<xml_signature>")) {
      auto inner = line.substr(std::string_view{"<xml_signature>"}.size());
      auto end = inner.find("</xml_signature>");
      signature += std::string{inner.substr(0, end)};
      in_signature = end == std::string_view::npos;
      continue;
    }
    if (line == "<file_info>") {
      in_file_info = true;
      continue;
    }
    if (line == "</file_info>") {
      in_file_info = false;
      continue;
    }
    // `<tag>value</tag>` on one line.
    if (line.size() < 3 || line.front() != '<')
      continue;
    auto gt = line.find('>');
    if (gt == std::string_view::npos || gt < 2)
      continue;
    auto tag = line.substr(1, gt - 1);
    auto rest = line.substr(gt + 1);
    if (rest.size() < tag.size() + 3 || !rest.ends_with('>'))
      continue;
    auto closing = rest.substr(rest.size() - tag.size() - 3);
    if (closing.substr(0, 2) != "</" || closing.substr(2, tag.size()) != tag)
      continue;
    std::string value = xml_unescape(trim(rest.substr(0, rest.size() - tag.size() - 3)));

    if (tag == "get_file_size")
      get_file_size = std::move(value);
    else if (tag == "name" && in_file_info)
      name = std::move(value);
    else if (tag == "max_nbytes")
      max_nbytes_text = std::move(value);
    else if (tag == "nbytes" && !in_file_info) // old clients also put nbytes in file_info
      nbytes_text = std::move(value);
    else if (tag == "md5_cksum")
      md5 = std::move(value);
    else if (tag == "offset")
      offset_text = std::move(value);
  }

  upload_header h;
  if (!data_offset) {
    if (!get_file_size)
      return result::failure("upload request has no <data> line and no <get_file_size>");
    if (!storage::safe_file_name(*get_file_size))
      return result::failure(get_file_size->empty() ? "get_file_size request has no file name"
                                                    : "unsafe file name in get_file_size");
    h.kind = upload_header::kind_t::get_file_size;
    h.name = std::move(*get_file_size);
    return result::success(std::move(h));
  }

  h.kind = upload_header::kind_t::file_upload;
  h.data_offset = *data_offset;
  if (!name || name->empty())
    return result::failure("upload request has no file name");
  if (!storage::safe_file_name(*name))
    return result::failure("unsafe file name in upload request");
  h.name = std::move(*name);
  if (!nbytes_text)
    return result::failure("upload request has no <nbytes>");
  if (!to_byte_count(*nbytes_text, h.nbytes))
    return result::failure("bad <nbytes> in upload request: '" + nbytes_text->substr(0, 40) + "'");
  if (max_nbytes_text && !to_byte_count(*max_nbytes_text, h.max_nbytes))
    return result::failure("bad <max_nbytes> in upload request: '" + max_nbytes_text->substr(0, 40)
                           + "'");
  if (offset_text && !to_byte_count(*offset_text, h.offset))
    return result::failure("bad <offset> in upload request: '" + offset_text->substr(0, 40) + "'");
  if (h.offset > h.nbytes)
    return result::failure("upload offset " + std::to_string(h.offset) + " is beyond nbytes "
                           + std::to_string(h.nbytes));
  if (md5)
    h.md5_cksum = std::move(*md5);
  h.xml_signature = xml_unescape(trim(signature));
  return result::success(std::move(h));
}

std::string upload_reply(int status, std::optional<long long> file_size, std::string_view message) {
  std::string out;
  out.reserve(96 + message.size());
  out += "<data_server_reply>\n    <status>";
  append_number(out, status);
  out += "</status>\n";
  if (file_size) {
    out += "    <file_size>";
    append_number(out, *file_size);
    out += "</file_size>\n";
  }
  if (!message.empty()) {
    out += "    <message>";
    append_escaped(out, message);
    out += "</message>\n";
  }
  out += "</data_server_reply>\n";
  return out;
}

} // namespace cobble::net

// ---------------------------------------------------------------------------------------
// The client side: a scheduler request written, a scheduler reply read (cobble-sim --server).

namespace cobble::net {

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

std::string write_sched_request(const sched_request& req) {
  xml_out x;
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
      m.text.assign(trim(reader::text(n)));
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
