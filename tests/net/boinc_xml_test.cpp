// Tests for net/boinc_xml: scheduler request parsing, reply writing, master page, upload
// protocol. Fixtures in tests/net/fixtures follow the shape a 7.20.5 client sends.

#include "net/boinc_xml.hpp"

#include <catch2/catch.hpp>
#include <pugixml.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

using namespace cobble;
using namespace cobble::net;
using Catch::Matchers::Contains;

namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(COBBLE_SOURCE_DIR) + "/tests/net/fixtures/" + name,
                   std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string minimal_request(const std::string& inner) {
  return "<scheduler_request>\n<authenticator>key</authenticator>\n" + inner
         + "</scheduler_request>\n";
}

double as_double(const pugi::xml_node& n) {
  return std::strtod(n.child_value(), nullptr);
}

} // namespace

TEST_CASE("a full 7.20.5 scheduler request parses every field", "[boinc_xml]") {
  auto r = parse_sched_request(fixture("sched_request_7.20.5.xml"));
  INFO(r.error);
  REQUIRE(r.ok());
  const auto& q = *r.value;

  CHECK(q.authenticator == "0123456789abcdef0123456789abcdef");
  CHECK(q.hostid == 42);
  CHECK(q.rpc_seqno == 7);
  CHECK(q.core_client_major_version == 7);
  CHECK(q.core_client_minor_version == 20);
  CHECK(q.core_client_release == 5);
  CHECK(q.resource_share_fraction == 1.0);
  CHECK(q.duration_correction_factor == 1.0);
  CHECK_FALSE(q.dont_send_work);
  CHECK(q.platform_name == "anonymous");

  CHECK(q.work_req_seconds == 103680.0);
  CHECK(q.cpu.req_secs == 103680.0);
  CHECK(q.cpu.req_instances == 2.0);
  CHECK(q.cpu.estimated_delay == 0.0);
  CHECK(q.cpu.wants_work());
  CHECK(q.coprocs.empty());

  const auto& h = q.host;
  CHECK(h.host_cpid == "a1b2c3d4e5f60718293a4b5c6d7e8f90");
  CHECK(h.domain_name == "ci-runner");
  CHECK(h.p_ncpus == 2);
  CHECK(h.p_vendor == "GenuineIntel");
  CHECK(h.p_model == "Intel(R) Xeon(R) CPU @ 2.20GHz [Family 6 Model 79 Stepping 0]");
  CHECK(h.p_fpops == 1e9);
  CHECK(h.p_iops == 1e9);
  CHECK(h.p_membw == 1e9);
  CHECK(h.m_nbytes == 8340463616.0);
  CHECK(h.m_swap == 2147479552.0);
  CHECK(h.d_total == 105089261568.0);
  CHECK(h.d_free == 52544630784.0);
  CHECK(h.os_name == "Linux Debian");
  CHECK(h.os_version == "Debian GNU/Linux 12 (bookworm) [6.1.0-18-amd64|libc 2.36]");
  CHECK(h.on_frac == 0.998765);
  CHECK(h.active_frac == 0.987654);
  CHECK(h.gpu_active_frac == 0.876543);

  REQUIRE(q.results.size() == 2);
  const auto& a = q.results[0];
  CHECK(a.name == "wu_1_0");
  CHECK(a.state == 5);
  CHECK(a.exit_status == 0);
  CHECK(a.final_cpu_time == 0.0);
  CHECK(a.final_elapsed_time == 2.035510);
  CHECK(a.platform == "x86_64-pc-linux-gnu");
  CHECK(a.version_num == 100);
  CHECK(a.plan_class.empty());
  CHECK(a.app_version_num == 100);
  CHECK_THAT(a.stderr_out, Contains("<core_client_version>7.20.5</core_client_version>"));
  CHECK_THAT(a.stderr_out, Contains("<stderr_txt>\napp says: a < b && c > d\n</stderr_txt>"));
  CHECK_THAT(a.stderr_out, !Contains("CDATA"));
  REQUIRE(a.files.size() == 1);
  CHECK(a.files[0].name == "wu_1_0_out");
  CHECK(a.files[0].nbytes == 12.0);
  CHECK(a.files[0].md5_cksum == "6f5902ac237024bdd0c176cb93063dc4");

  const auto& b = q.results[1];
  CHECK(b.name == "wu_2_0");
  CHECK(b.state == 3);
  CHECK(b.exit_status == -226);
  CHECK(b.final_cpu_time == 1.25);
  CHECK(b.final_elapsed_time == 3.5);
  CHECK(b.version_num == 101);
  CHECK(b.plan_class == "mt");
  CHECK(b.app_version_num == 101);
  CHECK_THAT(b.stderr_out, Contains("<message>\ntoo many exit(0)s\n</message>"));
  CHECK_THAT(b.stderr_out, Contains("line one\nline two"));
  REQUIRE(b.files.size() == 2);
  CHECK(b.files[0].name == "wu_2_0_out_a");
  CHECK(b.files[0].nbytes == 100.0);
  CHECK(b.files[1].name == "wu_2_0_out_b");
  CHECK(b.files[1].nbytes == 20000.0);
  CHECK(b.files[1].md5_cksum == "92eb5ffee6ae2fec3ad71c777531578f");

  REQUIRE(q.app_versions.size() == 1);
  const auto& av = q.app_versions[0];
  CHECK(av.app_name == "testapp");
  CHECK(av.version_num == 100);
  CHECK(av.platform == "x86_64-pc-linux-gnu");
  CHECK(av.plan_class.empty());
  CHECK(av.avg_ncpus == 1.0);
  CHECK(av.flops == 1e9);
  CHECK(av.coproc_type == resource_type::cpu);
  CHECK(av.coproc_count == 0);

  REQUIRE(q.other_results.size() == 1);
  CHECK(q.other_results[0].name == "wu_3_0");
  CHECK(q.other_results[0].app_version_index == 0);
  CHECK(q.other_results[0].plan_class.empty());
}

TEST_CASE("a first-contact request parses", "[boinc_xml]") {
  auto r = parse_sched_request(fixture("sched_request_first_contact.xml"));
  INFO(r.error);
  REQUIRE(r.ok());
  const auto& q = *r.value;
  CHECK(q.hostid == 0);
  CHECK(q.rpc_seqno == 0);
  CHECK(q.work_req_seconds == 1.0);
  CHECK(q.cpu.req_secs == 1.0);
  CHECK(q.cpu.req_instances == 0.0);
  CHECK(q.cpu.wants_work());
  CHECK(q.results.empty());
  CHECK(q.other_results.empty());
  CHECK(q.app_versions.size() == 1);
  CHECK(q.host.on_frac == -1.0);
  CHECK(q.host.p_ncpus == 2);
}

TEST_CASE("coprocessor blocks and GPU app versions", "[boinc_xml]") {
  auto r = parse_sched_request(minimal_request(R"(
<coprocs>
<coproc_cuda>
   <count>2</count>
   <name>NVIDIA GeForce RTX 3080</name>
   <req_secs>3600.5</req_secs>
   <req_instances>1.000000</req_instances>
   <estimated_delay>12.000000</estimated_delay>
   <peak_flops>29770000000000.000000</peak_flops>
   <coproc_opencl><name>nested</name><peak_flops>1</peak_flops></coproc_opencl>
</coproc_cuda>
<coproc_ati>
   <count>1</count>
   <peak_flops>5e12</peak_flops>
   <req_secs>0</req_secs>
   <req_instances>0</req_instances>
   <estimated_delay>0</estimated_delay>
</coproc_ati>
<coproc_intel_gpu>
   <count>1</count>
   <peak_flops>4e11</peak_flops>
   <req_secs>10</req_secs>
   <req_instances>0</req_instances>
   <estimated_delay>5</estimated_delay>
</coproc_intel_gpu>
<coproc>
   <type>apple_gpu</type>
   <count>1</count>
</coproc>
</coprocs>
<app_versions>
<app_version>
    <app_name>gpuapp</app_name>
    <version_num>200</version_num>
    <platform>x86_64-pc-linux-gnu</platform>
    <plan_class>cuda</plan_class>
    <avg_ncpus>0.100000</avg_ncpus>
    <flops>1e12</flops>
    <coproc>
        <type>NVIDIA</type>
        <count>1.000000</count>
    </coproc>
</app_version>
</app_versions>
)"));
  INFO(r.error);
  REQUIRE(r.ok());
  const auto& q = *r.value;
  REQUIRE(q.coprocs.size() == 3);
  CHECK(q.coprocs[0].type == resource_type::nvidia);
  CHECK(q.coprocs[0].count == 2);
  CHECK(q.coprocs[0].peak_flops == 29770000000000.0);
  CHECK(q.coprocs[0].request.req_secs == 3600.5);
  CHECK(q.coprocs[0].request.req_instances == 1.0);
  CHECK(q.coprocs[0].request.estimated_delay == 12.0);
  CHECK(q.coprocs[1].type == resource_type::ati);
  CHECK_FALSE(q.coprocs[1].request.wants_work());
  CHECK(q.coprocs[2].type == resource_type::intel_gpu);
  CHECK(q.coprocs[2].request.req_secs == 10.0);
  CHECK(q.coprocs[2].request.estimated_delay == 5.0);
  CHECK(q.request_for(resource_type::nvidia).req_secs == 3600.5);

  REQUIRE(q.app_versions.size() == 1);
  CHECK(q.app_versions[0].plan_class == "cuda");
  CHECK(q.app_versions[0].avg_ncpus == 0.1);
  CHECK(q.app_versions[0].coproc_type == resource_type::nvidia);
  CHECK(q.app_versions[0].coproc_count == 1.0);
}

TEST_CASE("dont_send_work and other result plan classes", "[boinc_xml]") {
  SECTION("empty element") {
    auto r = parse_sched_request(minimal_request("<dont_send_work/>\n"));
    REQUIRE(r.ok());
    CHECK(r.value->dont_send_work);
  }
  SECTION("1 and 0") {
    CHECK(parse_sched_request(minimal_request("<dont_send_work>1</dont_send_work>"))
            .value->dont_send_work);
    CHECK_FALSE(parse_sched_request(minimal_request("<dont_send_work>0</dont_send_work>"))
                  .value->dont_send_work);
  }
  SECTION("other_result plan class and missing index") {
    auto r = parse_sched_request(
      minimal_request("<other_results><other_result><name>x</name><app_version>2</app_version>"
                      "<plan_class>mt</plan_class></other_result><other_result><name>y</name>"
                      "</other_result></other_results>"));
    REQUIRE(r.ok());
    REQUIRE(r.value->other_results.size() == 2);
    CHECK(r.value->other_results[0].app_version_index == 2);
    CHECK(r.value->other_results[0].plan_class == "mt");
    CHECK(r.value->other_results[1].app_version_index == -1);
  }
}

TEST_CASE("stderr_out is capped at 64 KiB", "[boinc_xml]") {
  std::string big(200000, 'x');
  auto r = parse_sched_request(minimal_request("<result><name>r</name><stderr_out><![CDATA[" + big
                                               + "]]></stderr_out></result>"));
  REQUIRE(r.ok());
  CHECK(r.value->results.at(0).stderr_out.size() == max_stderr_bytes);
}

TEST_CASE("a whole code-signing key is read, beyond the 255-byte cap of other text",
          "[boinc_xml]") {
  // As a 7.20.5 client echoes the key it holds: a size line, 8 lines of hex, a line '.'
  // (cut at 255 bytes it matched no key, and the client was told to attach again).
  std::string key = "1024\n";
  for (int i = 0; i < 8; ++i)
    key += std::string(64, static_cast<char>('a' + i)) + "\n";
  key += ".";
  auto r = parse_sched_request(minimal_request("<code_sign_key>\n" + key + "\n</code_sign_key>"));
  REQUIRE(r.ok());
  CHECK(r.value->code_sign_key == key);
  auto huge = parse_sched_request(
    minimal_request("<code_sign_key>" + std::string(10000, 'f') + "</code_sign_key>"));
  REQUIRE(huge.ok());
  CHECK(huge.value->code_sign_key.size() == max_code_sign_key_bytes);
  // The cap of every other text value is back in force after it.
  auto after = parse_sched_request(minimal_request("<code_sign_key>" + key
                                                   + "</code_sign_key><platform_name>"
                                                   + std::string(400, 'p') + "</platform_name>"));
  REQUIRE(after.ok());
  CHECK(after.value->platform_name.size() == max_request_text_bytes);
}

TEST_CASE("negative and huge finite times parse: the scheduler flags them", "[boinc_xml]") {
  auto r = parse_sched_request(
    minimal_request("<result><name>s</name><final_elapsed_time>-3</final_elapsed_time>"
                    "<final_cpu_time>-5.5</final_cpu_time></result>"
                    "<result><name>t</name><final_elapsed_time>1e300</final_elapsed_time>"
                    "<final_cpu_time>+2</final_cpu_time></result>"));
  INFO(r.error);
  REQUIRE(r.ok());
  const auto& res = r.value->results;
  REQUIRE(res.size() == 2);
  CHECK(res[0].final_elapsed_time == -3);
  CHECK(res[0].final_cpu_time == -5.5);
  CHECK(res[1].final_elapsed_time == 1e300);
  CHECK(res[1].final_cpu_time == 2.0);
}

TEST_CASE("NaN and infinities are refused in every number, naming the element",
          "[boinc_xml][limits]") {
  // What the attacker sent: one RPC with <p_fpops>nan</p_fpops> made `cobble log verify`
  // report a mismatch forever (NaN is unequal to itself).
  for (const char* bad : {"nan", "-nan", "NaN", "inf", "-inf", "infinity", "1e400", "-1e999"}) {
    INFO(bad);
    auto host = parse_sched_request(
      minimal_request(std::string("<host_info><p_fpops>") + bad + "</p_fpops></host_info>"));
    CHECK_FALSE(host.ok());
    CHECK_THAT(host.error, Contains("p_fpops") && Contains("not a finite number"));
    auto result = parse_sched_request(
      minimal_request(std::string("<result><name>r</name><final_elapsed_time>") + bad
                      + "</final_elapsed_time>" + "</result>"));
    CHECK_FALSE(result.ok());
    CHECK_THAT(result.error, Contains("final_elapsed_time"));
    auto request = parse_sched_request(
      minimal_request(std::string("<work_req_seconds>") + bad + "</work_req_seconds>"));
    CHECK_FALSE(request.ok());
    CHECK_THAT(request.error, Contains("work_req_seconds"));
  }
}

TEST_CASE("out-of-range host figures and AutoFlops numbers are refused", "[boinc_xml][limits]") {
  auto refused = [](const std::string& inner, const std::string& element) {
    auto r = parse_sched_request(minimal_request(inner));
    INFO(inner);
    CHECK_FALSE(r.ok());
    CHECK_THAT(r.error, Contains(element) && Contains("out of range"));
  };
  refused("<host_info><p_ncpus>-64</p_ncpus></host_info>", "host_info/p_ncpus");
  refused("<host_info><p_fpops>-1e9</p_fpops></host_info>", "host_info/p_fpops");
  refused("<host_info><d_free>-1</d_free></host_info>", "host_info/d_free");
  refused("<time_stats><on_frac>1.5</on_frac></time_stats>", "time_stats/on_frac");
  refused("<time_stats><active_frac>-2</active_frac></time_stats>", "time_stats/active_frac");
  refused("<coprocs><coproc_cuda><count>-2</count></coproc_cuda></coprocs>", "coprocs/count");
  refused("<result><name>r</name><app_units>-5</app_units></result>", "result/app_units");
  refused("<result><name>r</name><raw_flops_per_au>-1</raw_flops_per_au></result>",
          "result/raw_flops_per_au");
  // The edges are in range.
  auto ok = parse_sched_request(
    minimal_request("<time_stats><on_frac>1</on_frac><active_frac>-1</active_frac></time_stats>"
                    "<host_info><p_ncpus>0</p_ncpus><d_free>0</d_free></host_info>"));
  INFO(ok.error);
  CHECK(ok.ok());
}

TEST_CASE("text values are cut at 255 bytes and invalid UTF-8 is replaced", "[boinc_xml][limits]") {
  // What the attacker sent: megabytes of domain_name (every change an event), and bytes
  // that are no UTF-8, which made every view of the host fail.
  std::string huge(1 << 20, 'd');
  auto r = parse_sched_request(minimal_request(
    "<host_info><domain_name>" + huge + "</domain_name><p_vendor>Vendor\xff\xfeX</p_vendor>"
    + "<os_name>\xc3\xa9t\xc3</os_name><p_model>\xed\xa0\x80</p_model></host_info>"
    + "<result><name>r</name><file_info><name>r_0</name><md5_cksum>\xc0\xaf"
      "ab</md5_cksum>"
    + "</file_info></result>"));
  INFO(r.error);
  REQUIRE(r.ok());
  const auto& h = r.value->host;
  CHECK(h.domain_name == std::string(max_request_text_bytes, 'd'));
  CHECK(h.p_vendor == "Vendor\xEF\xBF\xBD\xEF\xBF\xBDX");     // one U+FFFD per bad byte
  CHECK(h.os_name == "\xc3\xa9t\xEF\xBF\xBD");                // the é kept, the cut one replaced
  CHECK(h.p_model == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"); // a surrogate is no UTF-8
  CHECK(r.value->results.at(0).files.at(0).md5_cksum
        == "\xEF\xBF\xBD\xEF\xBF\xBD"
           "ab");
  // A long multi-byte text is cut on a character boundary.
  std::string accents;
  for (int i = 0; i < 200; ++i)
    accents += "\xc3\xa9";
  auto cut = parse_sched_request(
    minimal_request("<host_info><os_version>" + accents + "</os_version></host_info>"));
  REQUIRE(cut.ok());
  CHECK(cut.value->host.os_version.size() == 254);
  CHECK(cut.value->host.os_version == accents.substr(0, 254));
  // stderr_out keeps its own cap, and is cleaned too.
  auto err = parse_sched_request(
    minimal_request("<result><name>r</name><stderr_out>ok\xff</stderr_out></result>"));
  REQUIRE(err.ok());
  CHECK(err.value->results.at(0).stderr_out == "ok\xEF\xBF\xBD");
}

TEST_CASE("scheduler request errors", "[boinc_xml]") {
  SECTION("empty body") {
    auto r = parse_sched_request("");
    CHECK_FALSE(r.ok());
    CHECK_THAT(r.error, Contains("empty"));
    CHECK_FALSE(parse_sched_request("  \n\t ").ok());
  }
  SECTION("truncated fixture") {
    auto body = fixture("sched_request_7.20.5.xml");
    auto r = parse_sched_request(std::string_view(body).substr(0, body.size() / 2));
    CHECK_FALSE(r.ok());
    CHECK_FALSE(r.value.has_value());
    CHECK_THAT(r.error, Contains("malformed"));
    CHECK_THAT(r.error, Contains("offset"));
  }
  SECTION("garbage") {
    auto r = parse_sched_request("\x01\x02 this is <not xml>& at all");
    CHECK_FALSE(r.ok());
    CHECK_FALSE(r.error.empty());
    auto t = parse_sched_request("just text");
    CHECK_FALSE(t.ok());
    CHECK_FALSE(t.error.empty());
  }
  SECTION("wrong root") {
    auto r = parse_sched_request(
      "<scheduler_reply><authenticator>k</authenticator></scheduler_reply>");
    CHECK_FALSE(r.ok());
    CHECK_THAT(r.error, Contains("scheduler_request"));
  }
  SECTION("no authenticator") {
    auto r = parse_sched_request("<scheduler_request><hostid>1</hostid></scheduler_request>");
    CHECK_FALSE(r.ok());
    CHECK_THAT(r.error, Contains("authenticator"));
    CHECK_FALSE(parse_sched_request(
                  "<scheduler_request><authenticator>  </authenticator></scheduler_request>")
                  .ok());
  }
  SECTION("non-numeric hostid") {
    auto r = parse_sched_request(minimal_request("<hostid>abc</hostid>"));
    CHECK_FALSE(r.ok());
    CHECK_THAT(r.error, Contains("hostid"));
    CHECK_THAT(r.error, Contains("abc"));
  }
  SECTION("negative hostid and fractional ints") {
    CHECK_FALSE(parse_sched_request(minimal_request("<hostid>-1</hostid>")).ok());
    CHECK_FALSE(parse_sched_request(minimal_request("<rpc_seqno>1.5</rpc_seqno>")).ok());
    CHECK_FALSE(
      parse_sched_request(minimal_request("<host_info><p_ncpus>99999999999</p_ncpus></host_info>"))
        .ok());
  }
  SECTION("bad number deep inside a result") {
    auto r = parse_sched_request(minimal_request(
      "<result><name>r</name><final_elapsed_time>12s</final_elapsed_time></result>"));
    CHECK_FALSE(r.ok());
    CHECK_THAT(r.error, Contains("final_elapsed_time"));
  }
  SECTION("bad numbers in ignored elements are fine") {
    CHECK(parse_sched_request(minimal_request("<rrs_fraction>zz</rrs_fraction>")).ok());
  }
}

// ---------------------------------------------------------------------------------------

namespace {

const reply_urls urls{"http://127.0.0.1:8080", "cobble"};

sched_reply job_reply() {
  sched_reply r;
  r.project_name = "Cobble & Friends <test>";
  r.request_delay = 7;
  r.next_rpc_delay = 5.25;
  r.messages.push_back({"Hello \"volunteer\" 'x' & <all>", true});
  r.messages.push_back({"log line", false});
  r.user_name = "alice";
  r.userid = 3;
  r.user_total_credit = 10.5;

  file_description in;
  in.name = "wu_1_in";
  in.nbytes = 1234;
  in.md5_cksum = "0123456789abcdef0123456789abcdef";
  file_description out;
  out.name = "wu_1_0_out";
  out.is_output = true;
  out.max_nbytes = 65536;
  r.files = {in, out};

  workunit_description wu;
  wu.name = "wu_1";
  wu.app_name = "testapp";
  wu.command_line = "--n 5 --name a&b";
  wu.rsc_fpops_est = 1e12;
  wu.rsc_fpops_bound = 1e13;
  wu.rsc_memory_bound = 1e8;
  wu.rsc_disk_bound = 1e9;
  wu.inputs.push_back({"wu_1_in", "in.txt", true, false});
  r.workunits.push_back(wu);

  result_description res;
  res.name = "wu_1_0";
  res.wu_name = "wu_1";
  res.report_deadline = 1790000000.5;
  res.platform = "x86_64-pc-linux-gnu";
  res.version_num = 100;
  res.outputs.push_back({"wu_1_0_out", "out.txt", true, true});
  res.report_immediately = true;
  r.results.push_back(res);

  r.result_acks = {"old_1", "old_2"};
  r.result_aborts = {"bad_1"};
  return r;
}

pugi::xml_node parse_reply(pugi::xml_document& doc, const std::string& xml) {
  auto pr = doc.load_string(xml.c_str());
  INFO(xml);
  REQUIRE(pr);
  auto root = doc.document_element();
  REQUIRE(std::string(root.name()) == "scheduler_reply");
  return root;
}

} // namespace

TEST_CASE("a reply with a job has every element", "[boinc_xml]") {
  auto xml = write_sched_reply(job_reply(), urls);
  pugi::xml_document doc;
  auto root = parse_reply(doc, xml);
  INFO(xml);

  CHECK(std::string(root.child_value("scheduler_version")) == "720");
  CHECK(std::string(root.child_value("project_name")) == "Cobble & Friends <test>");
  CHECK_FALSE(root.child("hostid"));
  CHECK(as_double(root.child("request_delay")) == 7);
  CHECK(as_double(root.child("next_rpc_delay")) == 5.25);
  CHECK(root.child("dont_use_dcf"));
  CHECK_FALSE(root.child("project_is_down"));
  CHECK(std::string(root.child_value("user_name")) == "alice");
  CHECK(as_double(root.child("user_total_credit")) == 10.5);

  auto msg = root.child("message");
  CHECK(std::string(msg.attribute("priority").value()) == "notice");
  CHECK(std::string(msg.child_value()) == "Hello \"volunteer\" 'x' & <all>");
  CHECK(std::string(msg.next_sibling("message").attribute("priority").value()) == "low");

  auto fin = root.child("file_info");
  CHECK(std::string(fin.child_value("name")) == "wu_1_in");
  CHECK(std::string(fin.child_value("download_url"))
        == "http://127.0.0.1:8080/cobble/download/wu_1_in");
  CHECK(as_double(fin.child("nbytes")) == 1234);
  CHECK(std::string(fin.child_value("md5_cksum")) == "0123456789abcdef0123456789abcdef");
  CHECK_FALSE(fin.child("upload_url"));
  auto fout = fin.next_sibling("file_info");
  CHECK(std::string(fout.child_value("name")) == "wu_1_0_out");
  CHECK(std::string(fout.child_value("upload_url")) == "http://127.0.0.1:8080/cobble/upload");
  CHECK(as_double(fout.child("max_nbytes")) == 65536);
  CHECK_FALSE(fout.child("nbytes"));
  CHECK_FALSE(fout.child("download_url"));

  auto wu = root.child("workunit");
  CHECK(std::string(wu.child_value("name")) == "wu_1");
  CHECK(std::string(wu.child_value("app_name")) == "testapp");
  CHECK(std::string(wu.child_value("command_line")) == "--n 5 --name a&b");
  CHECK(as_double(wu.child("rsc_fpops_est")) == 1e12);
  CHECK(as_double(wu.child("rsc_fpops_bound")) == 1e13);
  CHECK(as_double(wu.child("rsc_memory_bound")) == 1e8);
  CHECK(as_double(wu.child("rsc_disk_bound")) == 1e9);
  auto wref = wu.child("file_ref");
  CHECK(std::string(wref.child_value("file_name")) == "wu_1_in");
  CHECK(std::string(wref.child_value("open_name")) == "in.txt");
  CHECK(wref.child("copy_file"));
  CHECK_FALSE(wref.child("optional"));

  auto res = root.child("result");
  CHECK(std::string(res.child_value("name")) == "wu_1_0");
  CHECK(std::string(res.child_value("wu_name")) == "wu_1");
  CHECK(as_double(res.child("report_deadline")) == 1790000000.5);
  CHECK(std::string(res.child_value("platform")) == "x86_64-pc-linux-gnu");
  CHECK(std::string(res.child_value("version_num")) == "100");
  CHECK_FALSE(res.child("plan_class"));
  CHECK(res.child("report_immediately"));
  auto rref = res.child("file_ref");
  CHECK(std::string(rref.child_value("file_name")) == "wu_1_0_out");
  CHECK(std::string(rref.child_value("open_name")) == "out.txt");
  CHECK(rref.child("copy_file"));
  CHECK(rref.child("optional"));

  std::vector<std::string> acks;
  for (auto a = root.child("result_ack"); a; a = a.next_sibling("result_ack"))
    acks.emplace_back(a.child_value("name"));
  CHECK(acks == std::vector<std::string>{"old_1", "old_2"});
  CHECK(std::string(root.child("result_abort").child_value("name")) == "bad_1");

  // The client finds the document by its start and end tags on their own lines.
  CHECK(xml.rfind("<scheduler_reply>\n", 0) == 0);
  CHECK_THAT(xml, Contains("\n</scheduler_reply>\n"));
}

TEST_CASE("reply booleans are empty elements, present only when true", "[boinc_xml]") {
  auto xml = write_sched_reply(job_reply(), urls);
  CHECK_THAT(xml, Contains("<dont_use_dcf/>"));
  CHECK_THAT(xml, Contains("<copy_file/>"));
  CHECK_THAT(xml, Contains("<optional/>"));
  CHECK_THAT(xml, Contains("<report_immediately/>"));
  CHECK_THAT(xml, !Contains("<dont_use_dcf>"));
  CHECK_THAT(xml, !Contains("</copy_file>"));

  sched_reply down;
  down.project_is_down = true;
  down.dont_use_dcf = false;
  auto x2 = write_sched_reply(down, urls);
  CHECK_THAT(x2, Contains("<project_is_down/>"));
  CHECK_THAT(x2, !Contains("dont_use_dcf"));
  CHECK_THAT(x2, !Contains("report_immediately"));
  CHECK_THAT(xml, !Contains("project_is_down"));
}

TEST_CASE("hostid, plan_class and anonymous platform rules", "[boinc_xml]") {
  auto r = job_reply();
  CHECK_THAT(write_sched_reply(r, urls), !Contains("<hostid>"));
  r.hostid = 12345678901234ULL;
  CHECK_THAT(write_sched_reply(r, urls), Contains("<hostid>12345678901234</hostid>"));

  r.results[0].plan_class = "mt";
  CHECK_THAT(write_sched_reply(r, urls), Contains("<plan_class>mt</plan_class>"));

  r.results[0].plan_class.clear();
  r.results[0].platform = "anonymous";
  auto xml = write_sched_reply(r, urls);
  CHECK_THAT(xml, !Contains("<platform>"));
  CHECK_THAT(xml, !Contains("anonymous"));
  CHECK_THAT(xml, !Contains("<plan_class>"));
  CHECK_THAT(xml, !Contains("<version_num>"));

  sched_reply bare;
  auto x2 = write_sched_reply(bare, urls);
  CHECK_THAT(x2, !Contains("next_rpc_delay"));
  CHECK_THAT(x2, Contains("<request_delay>0</request_delay>"));
}

TEST_CASE("reply text is escaped", "[boinc_xml]") {
  auto xml = write_sched_reply(job_reply(), urls);
  CHECK_THAT(xml, Contains("<project_name>Cobble &amp; Friends &lt;test&gt;</project_name>"));
  CHECK_THAT(xml, Contains("Hello &quot;volunteer&quot; &apos;x&apos; &amp; &lt;all&gt;"));
  CHECK_THAT(xml, Contains("<command_line>--n 5 --name a&amp;b</command_line>"));

  sched_reply r;
  r.messages.push_back({std::string("nul\0byte\x01", 9), false});
  auto x2 = write_sched_reply(r, urls);
  CHECK_THAT(x2, Contains(">nulbyte</message>"));
}

TEST_CASE("reply numbers round-trip and are never empty", "[boinc_xml]") {
  auto r = job_reply();
  const double odd[] = {1790000000.5, 0.1,
                        1.0 / 3.0,    6.048e14,
                        2.4192e15,    123456789.123456789,
                        5e-324,       1.7976931348623157e308};
  for (double v : odd) {
    r.results[0].report_deadline = v;
    auto xml = write_sched_reply(r, urls);
    pugi::xml_document doc;
    auto root = parse_reply(doc, xml);
    std::string text = root.child("result").child_value("report_deadline");
    REQUIRE_FALSE(text.empty());
    CHECK(std::strtod(text.c_str(), nullptr) == v);
  }
  CHECK_THAT(write_sched_reply(job_reply(), urls),
             Contains("<report_deadline>1790000000.5</report_deadline>"));

  r.results[0].report_deadline = std::nan("");
  r.request_delay = INFINITY;
  auto xml = write_sched_reply(r, urls);
  CHECK_THAT(xml, Contains("<report_deadline>0</report_deadline>"));
  CHECK_THAT(xml, Contains("<request_delay>0</request_delay>"));
  CHECK_THAT(xml, !Contains(">nan<"));
  CHECK_THAT(xml, !Contains(">inf<"));
}

TEST_CASE("download and upload URLs", "[boinc_xml]") {
  CHECK(download_url(urls, "a.b-c_d~e") == "http://127.0.0.1:8080/cobble/download/a.b-c_d~e");
  CHECK(download_url(urls, "a b&c") == "http://127.0.0.1:8080/cobble/download/a%20b%26c");
  CHECK(download_url({"http://h.x:1/", "/p/"}, "f") == "http://h.x:1/p/download/f");
  CHECK(upload_url(urls) == "http://127.0.0.1:8080/cobble/upload");
}

TEST_CASE("the scheduler lines stand at column 0", "[boinc_xml]") {
  // The client reads the master file as text, 255-character lines, and looks for both lines.
  const std::string sched = "http://127.0.0.1:8080/cobble/scheduler";
  std::istringstream in(scheduler_lines(sched));
  std::string line;
  bool scheduler_line = false, link_line = false;
  while (std::getline(in, line)) {
    CHECK(line.size() < 255);
    if (line == "<scheduler>" + sched + "</scheduler>")
      scheduler_line = true;
    if (line == "<link rel=\"boinc_scheduler\" href=\"" + sched + "\">")
      link_line = true;
  }
  CHECK(scheduler_line);
  CHECK(link_line);

  CHECK_THROWS_AS(scheduler_lines(""), std::invalid_argument);
  CHECK_THROWS_AS(scheduler_lines("http://a.b/\"x"), std::invalid_argument);
  CHECK_THROWS_AS(scheduler_lines("http://a.b/'x"), std::invalid_argument);
  CHECK_THROWS_AS(scheduler_lines("http://a.b/" + std::string(300, 'p')), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------

namespace {

std::string upload_body(const std::string& name, const std::string& nbytes,
                        const std::string& offset, const std::string& data) {
  return "<data_server_request>\n"
         "    <core_client_major_version>7</core_client_major_version>\n"
         "    <core_client_minor_version>20</core_client_minor_version>\n"
         "    <core_client_release>5</core_client_release>\n"
         "<file_upload>\n"
         "<file_info>\n"
         "<name>"
         + name
         + "</name>\n"
           "<xml_signature>\n"
           "</xml_signature>\n"
           "<max_nbytes>65536</max_nbytes>\n"
           "</file_info>\n"
           "<nbytes>"
         + nbytes
         + "</nbytes>\n"
           "<md5_cksum>0cc175b9c0f1b6a831c399e269772661</md5_cksum>\n"
           "<offset>"
         + offset
         + "</offset>\n"
           "<data>\n"
         + data;
}

} // namespace

TEST_CASE("upload: get_file_size header", "[boinc_xml][upload]") {
  auto r = parse_upload_header("<data_server_request>\n"
                               "    <core_client_major_version>7</core_client_major_version>\n"
                               "    <core_client_minor_version>20</core_client_minor_version>\n"
                               "    <core_client_release>5</core_client_release>\n"
                               "    <get_file_size>wu_1_0_out</get_file_size>\n"
                               "</data_server_request>\n");
  INFO(r.error);
  REQUIRE(r.ok());
  CHECK(r.value->kind == upload_header::kind_t::get_file_size);
  CHECK(r.value->name == "wu_1_0_out");

  CHECK_FALSE(parse_upload_header("<data_server_request>\n<get_file_size>../etc/passwd"
                                  "</get_file_size>\n</data_server_request>\n")
                .ok());
}

TEST_CASE("upload: file_upload header with binary data", "[boinc_xml][upload]") {
  // A NUL, the closing tag and bytes that are no UTF-8, as binary output may hold them.
  static constexpr char bytes[] = "<data>\n\0</file_upload><\x01\xff\n<offset>9</offset>";
  const std::string data(bytes, sizeof(bytes) - 1);
  auto body = upload_body("wu_1_0_out", std::to_string(data.size()), "0", data);
  auto r = parse_upload_header(body);
  INFO(r.error);
  REQUIRE(r.ok());
  const auto& h = *r.value;
  CHECK(h.kind == upload_header::kind_t::file_upload);
  CHECK(h.name == "wu_1_0_out");
  CHECK(h.max_nbytes == 65536);
  CHECK(h.nbytes == static_cast<long long>(data.size()));
  CHECK(h.md5_cksum == "0cc175b9c0f1b6a831c399e269772661");
  CHECK(h.offset == 0);
  REQUIRE(h.data_offset <= body.size());
  CHECK(body.substr(h.data_offset) == data);

  SECTION("resume at an offset, with a signature and %.0f-style numbers") {
    std::string b2
      = "<data_server_request>\n<file_upload>\n<file_info>\n    <name>f</name>\n"
        "    <nbytes>0.000000</nbytes>\n<xml_signature>\nabcdef\n0123\n</xml_signature>\n"
        "    <max_nbytes>100.000000</max_nbytes>\n</file_info>\n<nbytes>100</nbytes>\n"
        "<offset>40</offset>\r\n<data>\r\n"
        + std::string(60, '\0');
    auto r2 = parse_upload_header(b2);
    INFO(r2.error);
    REQUIRE(r2.ok());
    CHECK(r2.value->nbytes == 100);
    CHECK(r2.value->max_nbytes == 100);
    CHECK(r2.value->offset == 40);
    CHECK(r2.value->md5_cksum.empty());
    CHECK(b2.size() - r2.value->data_offset == 60);
  }
}

TEST_CASE("upload: header errors", "[boinc_xml][upload]") {
  SECTION("empty") {
    CHECK_FALSE(parse_upload_header("").ok());
  }
  SECTION("missing <data>") {
    auto body = upload_body("f", "3", "0", "");
    body.resize(body.size() - std::string("<data>\n").size());
    auto r = parse_upload_header(body + "abc");
    CHECK_FALSE(r.ok());
    CHECK_THAT(r.error, Contains("<data>"));
  }
  SECTION("bad offset") {
    auto r = parse_upload_header(upload_body("f", "3", "abc", "xyz"));
    CHECK_FALSE(r.ok());
    CHECK_THAT(r.error, Contains("offset"));
    CHECK_FALSE(parse_upload_header(upload_body("f", "3", "-1", "xyz")).ok());
    CHECK_FALSE(parse_upload_header(upload_body("f", "3", "1.5", "xyz")).ok());
    CHECK_FALSE(parse_upload_header(upload_body("f", "3", "4", "")).ok());
    CHECK_FALSE(parse_upload_header(upload_body("f", "3", "nan", "xyz")).ok());
  }
  SECTION("missing or unsafe name") {
    auto r = parse_upload_header(upload_body("", "3", "0", "xyz"));
    CHECK_FALSE(r.ok());
    CHECK_THAT(r.error, Contains("name"));
    CHECK_FALSE(parse_upload_header(upload_body("../x", "3", "0", "xyz")).ok());
    CHECK_FALSE(parse_upload_header(upload_body("a/b", "3", "0", "xyz")).ok());
  }
  SECTION("missing nbytes") {
    std::string b = "<data_server_request>\n<file_upload>\n<file_info>\n<name>f</name>\n"
                    "</file_info>\n<offset>0</offset>\n<data>\nxyz";
    auto r = parse_upload_header(b);
    CHECK_FALSE(r.ok());
    CHECK_THAT(r.error, Contains("nbytes"));
  }
}

TEST_CASE("upload reply", "[boinc_xml][upload]") {
  CHECK(upload_reply(0, 1234, "")
        == "<data_server_reply>\n    <status>0</status>\n    <file_size>1234</file_size>\n"
           "</data_server_reply>\n");
  auto r = upload_reply(-1, std::nullopt, "too big <x> & y");
  CHECK_THAT(r, Contains("<status>-1</status>"));
  CHECK_THAT(r, !Contains("file_size"));
  CHECK_THAT(r, Contains("<message>too big &lt;x&gt; &amp; y</message>"));
  pugi::xml_document doc;
  REQUIRE(doc.load_string(r.c_str()));
  CHECK(std::string(doc.child("data_server_reply").child_value("message")) == "too big <x> & y");
}

TEST_CASE("work sequences: the list a client holds and the revocation notices", "[boinc_xml]") {
  SECTION("a request lists the sequences it believes it holds") {
    auto r = parse_sched_request(minimal_request(
      "<work_sequences>\n  <name>climate</name>\n  <name> traj-2 </name>\n</work_sequences>\n"));
    REQUIRE(r.ok());
    CHECK(r.value->sequences_held == std::vector<std::string>{"climate", "traj-2"});
  }
  SECTION("BOINC clients send none") {
    auto r = parse_sched_request(fixture("sched_request_7.20.5.xml"));
    REQUIRE(r.ok());
    CHECK(r.value->sequences_held.empty());
  }
  SECTION("the reply names each sequence the host no longer holds") {
    sched_reply reply;
    reply.sequences_revoked = {"climate", "a<b"};
    auto xml = write_sched_reply(reply, reply_urls{"http://127.0.0.1:8080", "cobble"});
    pugi::xml_document doc;
    REQUIRE(doc.load_string(xml.c_str()));
    std::vector<std::string> revoked;
    for (auto n : doc.child("scheduler_reply").children("work_sequence_revoked"))
      revoked.emplace_back(n.child_value());
    CHECK(revoked == std::vector<std::string>{"climate", "a<b"});
  }
  SECTION("without revocations there is no element") {
    auto xml = write_sched_reply(sched_reply{}, reply_urls{"http://127.0.0.1:8080", "cobble"});
    CHECK(xml.find("work_sequence_revoked") == std::string::npos);
  }
}
