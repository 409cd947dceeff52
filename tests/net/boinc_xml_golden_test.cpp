/// The wire formats of net/boinc_xml pinned byte for byte, to keep them from changing
/// unnoticed under a refactoring: the XML every writer produces (every conditional element of
/// the scheduler reply and request, the upload reply, the master page) and every field of
/// every struct the parsers fill (from real client requests, odd but valid input, and bad
/// input with its exact error text) must equal the checked-in fixtures in
/// tests/net/fixtures/golden/. Those fixtures were written by the code as it stood before the
/// field tables; a real client may depend on the order, the indentation and the number format.
///
/// On a difference the test writes what the code produced to
/// BUILD_DIR/golden-actual/NAME, for `diff` against the fixture. A fixture is changed only
/// with a deliberate change of the wire format, never to make this test pass.

#include "boinc_describe.hpp"
#include "net/boinc_xml.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace cobble;
using namespace cobble::net;
using cobble::net::testing::describe;

namespace {

std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in.good())
    return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string input(const std::string& name) {
  auto text = read_file(std::filesystem::path(COBBLE_SOURCE_DIR) / "tests" / "net" / "fixtures"
                        / name);
  REQUIRE(text);
  return *text;
}

/// Checks that `actual` is the fixture golden/NAME to the byte; on a difference `actual` is
/// written to BUILD_DIR/golden-actual/NAME.
void pin(const std::string& name, const std::string& actual) {
  auto expected = read_file(std::filesystem::path(COBBLE_SOURCE_DIR) / "tests" / "net" / "fixtures"
                            / "golden" / name);
  auto dir = std::filesystem::path(COBBLE_BINARY_DIR) / "golden-actual";
  if (expected != actual) {
    std::filesystem::create_directories(dir);
    std::ofstream(dir / name, std::ios::binary) << actual;
  }
  INFO("fixture golden/" << name << "; what the code wrote is in " << (dir / name).string());
  CHECK(expected.has_value());
  if (expected)
    CHECK(actual == *expected);
}

/// Named cases, each described under a `== NAME ==` line, all in one text.
class casebook {
public:
  std::string text;

  template <class T>
  void add(const std::string& name, const T& value) {
    text += "== " + name + " ==\n";
    text += describe(value);
  }
};

std::string minimal_request(const std::string& inner) {
  return "<scheduler_request>\n<authenticator>key</authenticator>\n" + inner
         + "</scheduler_request>\n";
}

std::string minimal_reply(const std::string& inner) {
  return "<scheduler_reply>\n" + inner + "</scheduler_reply>\n";
}

const reply_urls urls{"http://127.0.0.1:8080/", "/cobble"};

constexpr double inf_value = std::numeric_limits<double>::infinity();
const double nan_value = std::nan("");

/// A request with every element the client side can write, and values that need escaping.
sched_request full_request() {
  sched_request q;
  q.authenticator = "key<&>\"'";
  q.hostid = 18446744073709551615ULL;
  q.rpc_seqno = -3;
  q.core_client_major_version = 7;
  q.core_client_minor_version = 20;
  q.core_client_release = 5;
  q.platform_name = "x86_64-pc-linux-gnu";
  q.alt_platforms = {"i686-pc-linux-gnu", "x86_64<v2>"};
  q.code_sign_key = "1024\n00ff\n.";
  q.allow_multiple_clients = true;
  q.dont_send_work = true;
  q.resource_share_fraction = 1.0 / 3.0;
  q.duration_correction_factor = 0.1;
  q.work_req_seconds = 3600.5;
  q.cpu = {3600, 2, 1e-7};
  q.host.host_cpid = "cafe";
  q.host.domain_name = "host\x01name";
  q.host.p_ncpus = 16;
  q.host.p_vendor = "GenuineIntel";
  q.host.p_model = "Xeon <E5>";
  q.host.p_fpops = 1e10;
  q.host.p_iops = 2.5e10;
  q.host.p_membw = nan_value;
  q.host.m_nbytes = 8340463616;
  q.host.m_swap = inf_value;
  q.host.d_total = 105089261568;
  q.host.d_free = 1.7976931348623157e308;
  q.host.os_name = "Linux";
  q.host.os_version = "6.1 & co";
  q.host.ip_addr = "192.168.1.7";
  q.host.on_frac = 0.998765;
  q.host.active_frac = -1;
  q.host.gpu_active_frac = 5e-324;
  q.coprocs.push_back(
    {resource_type::nvidia, 2, 2.977e13, {3600.5, 1, 12}, 7.5e9, 8.5e9, 53523, 12020, true});
  q.coprocs.push_back({resource_type::cpu, 9, 1, {1, 1, 1}}); // no element for a CPU
  q.coprocs.push_back(
    {resource_type::ati, 1, 5e12, {}, 0, 2147483648.0, 1041720, 0, false, true, true});
  q.coprocs.push_back({resource_type::intel_gpu, 1, 4e11, {10, 0, 5}});

  reported_result a;
  a.name = "wu_1_0";
  a.state = 5;
  a.exit_status = -226;
  a.final_cpu_time = 90.25;
  a.final_elapsed_time = 100;
  a.platform = "x86_64-pc-linux-gnu";
  a.version_num = 100;
  a.plan_class = "mt";
  a.app_version_num = 101;
  a.stderr_out = "<core_client_version>7.20.5</core_client_version>\n<![CDATA[a < b]]>";
  a.files.push_back({"wu_1_0_0", 64, "00112233445566778899aabbccddeeff"});
  a.files.push_back({"wu_1_0_1", 0, ""});
  a.app_units = inf_value; // written, as 0: only > 0 is checked
  a.raw_flops_per_au = 1e9;
  q.results.push_back(a);
  reported_result b; // the optional elements all left out
  b.name = "wu_2_0";
  b.app_units = -1;
  b.raw_flops_per_au = nan_value;
  q.results.push_back(b);

  client_app_version cpu_version;
  cpu_version.app_name = "app";
  cpu_version.version_num = 100;
  cpu_version.platform = "x86_64-pc-linux-gnu";
  cpu_version.flops = 1e9;
  q.app_versions.push_back(cpu_version);
  client_app_version gpu_version;
  gpu_version.app_name = "app";
  gpu_version.version_num = 200;
  gpu_version.plan_class = "cuda";
  gpu_version.avg_ncpus = 0.1;
  gpu_version.flops = 1e12;
  gpu_version.coproc_type = resource_type::nvidia;
  gpu_version.coproc_count = 0.5;
  q.app_versions.push_back(gpu_version);

  q.other_results.push_back({"wu_3_0", 1, "cuda"});
  q.other_results.push_back({"wu_4_0", -1, ""});
  q.sequences_held = {"climate", "traj<1>"};
  q.app_unit_versions.push_back({"app", 100, "", 12.5, 1e9});
  q.app_unit_versions.push_back({"app", 200, "cuda", 0, 0});
  return q;
}

/// A reply with every element the server side can write.
sched_reply full_reply() {
  sched_reply r;
  r.project_name = "Cobble & Friends <test>";
  r.hostid = 12345678901234ULL;
  r.request_delay = 7;
  r.next_rpc_delay = 5.25;
  r.messages.push_back({"Hello \"volunteer\" 'x' & <all>", true});
  r.messages.push_back({std::string("nul\0byte\x01\ttab", 13), false});
  r.project_is_down = true;
  r.dont_use_dcf = true;
  r.user_name = "alice";
  r.userid = 3;
  r.team_name = "Team <A&B>";
  r.user_total_credit = 10.5;
  r.user_expavg_credit = 1.0 / 3.0;
  r.host_total_credit = nan_value;
  r.host_expavg_credit = -inf_value;

  r.files.push_back({"in a&b.dat", false, 1234, "0123456789abcdef0123456789abcdef", 99, "ignored"});
  r.files.push_back({"in_2", false, inf_value, "", 0, ""});
  r.files.push_back({"in_3", false, -5, "", 0, ""});
  r.files.push_back({"wu_1_0_out", true, 77, "ignored", 65536, "sig\nline <2>"});
  r.files.push_back({"wu_1_0_log", true, 0, "", nan_value, ""});
  r.files.push_back(
    {"testapp_1.02_x86_64-pc-linux-gnu", false, 4096, "", 0, "", true, "00ab\n.\n"});
  r.files.push_back(
    {"testapp_1.02_x86_64-pc-linux-gnu_data.bin", false, 10, "", 0, "", false, "00cd\n."});

  r.apps.push_back({"testapp", "Test <app>", false});
  r.apps.push_back({"monitor", "", true});
  app_version_description cpu;
  cpu.app_name = "testapp";
  cpu.version_num = 102;
  cpu.api_version = "7.20.0";
  cpu.platform = "x86_64-pc-linux-gnu";
  cpu.plan_class = "mt";
  cpu.avg_ncpus = 4;
  cpu.max_ncpus = 4;
  cpu.flops = 4e10;
  cpu.cmdline = "--nthreads 4";
  cpu.files.push_back({"testapp_1.02_x86_64-pc-linux-gnu", "testapp", false, false, true});
  cpu.files.push_back({"testapp_1.02_x86_64-pc-linux-gnu_data.bin", "data.bin", true, false});
  cpu.dont_throttle = true;
  cpu.needs_network = true;
  cpu.is_wrapper = true;
  r.app_versions.push_back(cpu);
  app_version_description gpu;
  gpu.app_name = "testapp";
  gpu.version_num = 103;
  gpu.platform = "x86_64-pc-linux-gnu";
  gpu.plan_class = "cuda";
  gpu.avg_ncpus = 0.1;
  gpu.flops = inf_value; // not sent: the client falls back to its own estimate
  gpu.coproc_type = resource_type::nvidia;
  gpu.coproc_count = 0.5;
  gpu.gpu_ram = 1e9;
  r.app_versions.push_back(gpu);

  workunit_description wu;
  wu.name = "wu_1";
  wu.app_name = "testapp";
  wu.command_line = "--n 5 --name a&b";
  wu.rsc_fpops_est = 1e12;
  wu.rsc_fpops_bound = inf_value;
  wu.rsc_memory_bound = -1;
  wu.rsc_disk_bound = 1e9;
  wu.inputs.push_back({"in a&b.dat", "in.txt", true, false});
  wu.inputs.push_back({"in_2", "", false, true});
  r.workunits.push_back(wu);
  workunit_description bare_wu;
  bare_wu.name = "wu_2";
  bare_wu.app_name = "testapp";
  r.workunits.push_back(bare_wu);

  result_description res;
  res.name = "wu_1_0";
  res.wu_name = "wu_1";
  res.report_deadline = 1790000000.5;
  res.platform = "x86_64-pc-linux-gnu";
  res.version_num = 100;
  res.plan_class = "mt";
  res.outputs.push_back({"wu_1_0_out", "out.txt", true, true});
  res.outputs.push_back({"wu_1_0_log", "", false, false});
  res.report_immediately = true;
  res.peak_flops_per_sec = 1e10;
  res.predicted_app_units = inf_value;
  res.est_seconds = 3600;
  res.bound_seconds = 0;
  r.results.push_back(res);
  result_description anon;
  anon.name = "wu_2_0";
  anon.wu_name = "wu_2";
  anon.report_deadline = nan_value;
  anon.platform = "anonymous";
  anon.version_num = 7;
  r.results.push_back(anon);

  r.app_units.push_back({"testapp", 1e9, true});
  r.app_units.push_back({"other", 0, false});
  r.result_acks = {"old_1", "old<2>"};
  r.result_aborts = {"bad_1"};
  r.sequences_revoked = {"climate", "a<b"};
  r.code_sign_key = "1024\n00ff\n.";
  r.code_sign_key_signature = "abcd\n.";
  return r;
}

/// A request whose only coprocessor is a CPU: the `<coprocs>` element is written, empty.
sched_request cpu_coproc_request() {
  sched_request q;
  q.authenticator = "k";
  q.coprocs.push_back({resource_type::cpu, 1, 1, {}});
  q.other_results_listed = true; // none held, and saying so
  return q;
}

std::string upload_body(const std::string& file_info, const std::string& rest) {
  return "<data_server_request>\n"
         "    <core_client_major_version>7</core_client_major_version>\n"
         "<file_upload>\n<file_info>\n"
         + file_info + "</file_info>\n" + rest;
}

} // namespace

TEST_CASE("golden: the written scheduler reply", "[boinc_xml][golden]") {
  pin("written_sched_reply_full.xml", write_sched_reply(full_reply(), urls));
  pin("written_sched_reply_empty.xml", write_sched_reply(sched_reply{}, urls));
  pin("written_sched_reply_error.xml",
      write_sched_reply(sched_reply::error("down <now>", 3600), urls));

  sched_reply other;
  other.files.push_back({"a b/c%d", false, 1, "", 0, ""});
  other.files.push_back({"out", true, 0, "", 1e6, ""});
  result_description no_platform;
  no_platform.name = "r";
  no_platform.version_num = 5;
  no_platform.plan_class = "";
  other.results.push_back(no_platform);
  pin("written_sched_reply_other_urls.xml",
      write_sched_reply(other, reply_urls{"https://example.org", ""}));
}

TEST_CASE("golden: the written scheduler request", "[boinc_xml][golden]") {
  pin("written_sched_request_full.xml", write_sched_request(full_request()));
  pin("written_sched_request_empty.xml", write_sched_request(sched_request{}));
  pin("written_sched_request_cpu_coproc.xml", write_sched_request(cpu_coproc_request()));
}

TEST_CASE("golden: parsed scheduler requests", "[boinc_xml][golden]") {
  casebook book;
  book.add("7.20.5", parse_sched_request(input("sched_request_7.20.5.xml")));
  book.add("first contact", parse_sched_request(input("sched_request_first_contact.xml")));
  book.add("edges", parse_sched_request(input("golden/sched_request_edges.xml")));
  book.add("coprocs", parse_sched_request(input("golden/sched_request_coprocs.xml")));
  book.add("gpus and identity", parse_sched_request(input("golden/sched_request_gpus.xml")));
  book.add("written full", parse_sched_request(write_sched_request(full_request())));
  book.add("written cpu coproc", parse_sched_request(write_sched_request(cpu_coproc_request())));
  book.add("empty coprocs hide host_info's",
           parse_sched_request(minimal_request(
             "<host_info><coprocs><coproc_cuda><count>1</count></coproc_cuda></coprocs>"
             "</host_info>\n<coprocs/>\n")));

  const std::vector<std::pair<std::string, std::string>> bad = {
    {"empty", ""},
    {"blank", " \r\n\t"},
    {"truncated", "<scheduler_request><authenticator>k</authenticator>"},
    {"garbage", "not xml at all"},
    {"declaration only", "<?xml version=\"1.0\"?>"},
    {"wrong root", "<scheduler_reply/>"},
    {"no authenticator", "<scheduler_request><hostid>1</hostid></scheduler_request>"},
    {"blank authenticator", "<scheduler_request><authenticator> </authenticator>"
                            "</scheduler_request>"},
    {"bad number before the missing authenticator",
     "<scheduler_request><hostid>x</hostid></scheduler_request>"},
    {"negative hostid", minimal_request("<hostid>-1</hostid>")},
    {"fractional integer", minimal_request("<rpc_seqno>1.5</rpc_seqno>")},
    {"integer overflow", minimal_request("<core_client_release>99999999999</core_client_release>")},
    {"plus minus", minimal_request("<hostid>+-1</hostid>")},
    {"double plus", minimal_request("<work_req_seconds>++1</work_req_seconds>")},
    {"hexadecimal float", minimal_request("<time_stats><on_frac>0x1p-2</on_frac></time_stats>")},
    {"long bad value",
     minimal_request("<host_info><p_fpops>" + std::string(60, 'z') + "</p_fpops></host_info>")},
    {"bad boolean", minimal_request("<dont_send_work>yes</dont_send_work>")},
    {"first error wins",
     minimal_request("<host_info><coprocs><coproc_cuda><count>x</count></coproc_cuda></coprocs>"
                     "</host_info><result><state>y</state></result>")},
    {"host_info error before its coprocs",
     minimal_request("<host_info><p_ncpus>q</p_ncpus><coprocs><coproc_cuda><count>x</count>"
                     "</coproc_cuda></coprocs></host_info>")},
    {"bad generic coproc count",
     minimal_request("<coprocs><coproc><type>ATI</type><count>1.5</count></coproc></coprocs>")},
    {"bad coproc request", minimal_request("<coprocs><coproc_ati><req_secs>s</req_secs>"
                                           "</coproc_ati></coprocs>")},
    {"bad result file size", minimal_request("<result><name>r</name><file_info><nbytes>n</nbytes>"
                                             "</file_info></result>")},
    {"bad app version coproc count",
     minimal_request("<app_versions><app_version><coproc><type>CUDA</type><count>z</count>"
                     "</coproc></app_version></app_versions>")},
    {"bad app version number", minimal_request("<app_versions><app_version><version_num>v"
                                               "</version_num></app_version></app_versions>")},
    {"bad other_result index",
     minimal_request("<other_results><other_result><app_version>-</app_version></other_result>"
                     "</other_results>")},
    {"bad app unit version", minimal_request("<app_unit_versions><app_unit_version>"
                                             "<raw_flops_per_sec>r</raw_flops_per_sec>"
                                             "</app_unit_version></app_unit_versions>")},
  };
  for (const auto& [name, body] : bad)
    book.add(name, parse_sched_request(body));
  pin("parsed_sched_requests.txt", book.text);
}

TEST_CASE("golden: parsed scheduler replies", "[boinc_xml][golden]") {
  casebook book;
  book.add("written full", parse_sched_reply(write_sched_reply(full_reply(), urls)));
  book.add("written empty", parse_sched_reply(write_sched_reply(sched_reply{}, urls)));
  book.add("written error",
           parse_sched_reply(write_sched_reply(sched_reply::error("down", 60), urls)));
  book.add("edges", parse_sched_reply(input("golden/sched_reply_edges.xml")));

  const std::vector<std::pair<std::string, std::string>> bad = {
    {"empty", ""},
    {"garbage", "<<<"},
    {"declaration only", "<?xml version=\"1.0\"?>"},
    {"wrong root", "<scheduler_request/>"},
    {"negative hostid", minimal_reply("<hostid>-5</hostid>")},
    {"bad userid", minimal_reply("<userid>1e3</userid>")},
    {"bad request_delay", minimal_reply("<request_delay>soon</request_delay>")},
    {"bad next_rpc_delay", minimal_reply("<next_rpc_delay>later</next_rpc_delay>")},
    {"bad credit", minimal_reply("<host_expavg_credit>c</host_expavg_credit>")},
    {"bad file size", minimal_reply("<file_info><name>f</name><nbytes>n</nbytes></file_info>")},
    {"bad max_nbytes", minimal_reply("<file_info><max_nbytes>m</max_nbytes></file_info>")},
    {"bad bound", minimal_reply("<workunit><rsc_disk_bound>d</rsc_disk_bound></workunit>")},
    {"bad copy_file",
     minimal_reply("<workunit><file_ref><copy_file>maybe</copy_file></file_ref></workunit>")},
    {"bad optional",
     minimal_reply("<result><file_ref><optional>2x</optional></file_ref></result>")},
    {"bad version_num", minimal_reply("<result><version_num>1.5</version_num></result>")},
    {"bad deadline", minimal_reply("<result><report_deadline>t</report_deadline></result>")},
    {"bad est_flops_per_au",
     minimal_reply("<app_units_info><est_flops_per_au>e</est_flops_per_au></app_units_info>")},
    {"first error wins", minimal_reply("<userid>u</userid><hostid>h</hostid>")},
  };
  for (const auto& [name, body] : bad)
    book.add(name, parse_sched_reply(body));
  pin("parsed_sched_replies.txt", book.text);
}

TEST_CASE("golden: parsed upload headers", "[boinc_xml][golden]") {
  casebook book;
  book.add("get_file_size",
           parse_upload_header("<data_server_request>\n  <get_file_size> a&amp;b </get_file_size>"
                               "\n</data_server_request>\n"));
  book.add("upload",
           parse_upload_header(upload_body(
             "    <name>f&lt;1&gt;</name>\n<xml_signature>\nab&amp;\ncd\n</xml_signature>\n"
             "    <nbytes>3</nbytes>\n    <max_nbytes>100.000000</max_nbytes>\n",
             "<nbytes>10</nbytes>\n<md5_cksum>m</md5_cksum>\n<offset>7</offset>\r\n <data> \r\n"
             "xyz")));
  book.add("one-line signature, no offset",
           parse_upload_header(upload_body("<name>g</name>\n<xml_signature>s</xml_signature>\n",
                                           "<nbytes>0</nbytes>\n<data>\n")));
  book.add("get_file_size after data", parse_upload_header("<data>\n<get_file_size>x"
                                                           "</get_file_size>\n"));

  const std::vector<std::pair<std::string, std::string>> bad = {
    {"empty", ""},
    {"no data, no get_file_size", upload_body("<name>f</name>\n", "<nbytes>1</nbytes>\n")},
    {"empty get_file_size", "<get_file_size></get_file_size>\n"},
    {"unsafe get_file_size", "<get_file_size>../x</get_file_size>\n"},
    {"no name", upload_body("", "<nbytes>1</nbytes>\n<data>\nx")},
    {"name outside file_info", "<name>f</name>\n<nbytes>1</nbytes>\n<data>\nx"},
    {"unsafe name", upload_body("<name>a/b</name>\n", "<nbytes>1</nbytes>\n<data>\nx")},
    {"no nbytes", upload_body("<name>f</name>\n<nbytes>1</nbytes>\n", "<data>\nx")},
    {"bad nbytes", upload_body("<name>f</name>\n", "<nbytes>1.5</nbytes>\n<data>\nx")},
    {"bad max_nbytes",
     upload_body("<name>f</name>\n<max_nbytes>-1</max_nbytes>\n", "<nbytes>1</nbytes>\n<data>\n")},
    {"bad offset", upload_body("<name>f</name>\n", "<nbytes>1</nbytes>\n<offset>nan</offset>\n"
                                                   "<data>\n")},
    {"offset beyond nbytes",
     upload_body("<name>f</name>\n", "<nbytes>1</nbytes>\n<offset>2</offset>\n<data>\n")},
    {"data beyond the first 64 KiB",
     upload_body("<name>f</name>\n", std::string(70000, ' ') + "\n<nbytes>1</nbytes>\n<data>\nx")},
  };
  for (const auto& [name, body] : bad)
    book.add(name, parse_upload_header(body));
  pin("parsed_upload_headers.txt", book.text);
}

TEST_CASE("golden: upload replies and scheduler lines", "[boinc_xml][golden]") {
  pin("written_upload_replies.xml",
      upload_reply(0, 1234, "") + upload_reply(-1, std::nullopt, "too big <x> & y\x01\t!")
        + upload_reply(1, std::nullopt, "") + upload_reply(0, -1, "ok"));

  // The lines that make the site's home page a master file (the page around them is the
  // site's, tested in tests/net/web_site_test.cpp).
  std::string lines = scheduler_lines("http://127.0.0.1:8080/cobble_cgi/cgi") + "\n";
  const std::vector<std::string> bad_urls = {"",
                                             "http://a.b/\"x",
                                             "http://a.b/'x",
                                             "http://a.b/ x",
                                             "http://a.b/<",
                                             "http://a.b/&",
                                             "http://a.b/\x7f",
                                             "http://a.b/" + std::string(190, 'p')};
  for (const auto& bad_url : bad_urls) {
    try {
      lines += scheduler_lines(bad_url);
    } catch (const std::invalid_argument& e) {
      lines += std::string("invalid_argument: ") + e.what() + "\n";
    }
  }
  pin("written_scheduler_lines.html", lines);
}
