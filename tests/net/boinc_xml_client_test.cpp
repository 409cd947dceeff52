/// The client side of the scheduler XML (cobble-sim --server): a request written and read
/// back by the server's parser, a reply written by the server and read back by the client.

#include "net/boinc_xml.hpp"

#include <catch2/catch.hpp>

using namespace cobble;
using namespace cobble::net;

TEST_CASE("a written scheduler request reads back field for field", "[boinc_xml]") {
  sched_request q;
  q.authenticator = "key<&>";
  q.hostid = 42;
  q.rpc_seqno = 7;
  q.core_client_major_version = 7;
  q.core_client_minor_version = 20;
  q.core_client_release = 5;
  q.platform_name = "x86_64-pc-linux-gnu";
  q.work_req_seconds = 3600;
  q.sequences_held = {"climate", "traj<1>"};
  q.cpu.req_secs = 3600;
  q.cpu.req_instances = 2;
  q.cpu.estimated_delay = 10;
  q.host.host_cpid = "cafe";
  q.host.p_ncpus = 4;
  q.host.p_fpops = 1e10;
  q.host.os_name = "Linux";
  q.host.on_frac = 0.9;
  q.host.active_frac = 0.8;
  coproc_description gpu;
  gpu.type = resource_type::nvidia;
  gpu.count = 1;
  gpu.peak_flops = 4e10;
  gpu.request.req_secs = 1800;
  gpu.request.req_instances = 1;
  q.coprocs.push_back(gpu);
  reported_result res;
  res.name = "wu_1_0";
  res.state = 5;
  res.final_cpu_time = 90;
  res.final_elapsed_time = 100;
  res.platform = "x86_64-pc-linux-gnu";
  res.version_num = 100;
  res.plan_class = "nvidia";
  res.files.push_back(reported_file{"wu_1_0_0", 64, "00112233445566778899aabbccddeeff"});
  q.results.push_back(res);

  auto xml = write_sched_request(q);
  auto back = parse_sched_request(xml);
  INFO(xml);
  REQUIRE(back.ok());
  const auto& b = *back.value;
  CHECK(b.authenticator == "key<&>");
  CHECK(b.hostid == 42);
  CHECK(b.rpc_seqno == 7);
  CHECK(b.core_client_release == 5);
  CHECK(b.platform_name == "x86_64-pc-linux-gnu");
  CHECK(b.work_req_seconds == 3600);
  CHECK(b.cpu.req_secs == 3600);
  CHECK(b.cpu.req_instances == 2);
  CHECK(b.cpu.estimated_delay == 10);
  CHECK(b.host.p_ncpus == 4);
  CHECK(b.host.p_fpops == 1e10);
  CHECK(b.host.on_frac == 0.9);
  REQUIRE(b.coprocs.size() == 1);
  CHECK(b.coprocs[0].type == resource_type::nvidia);
  CHECK(b.coprocs[0].peak_flops == 4e10);
  CHECK(b.coprocs[0].request.req_secs == 1800);
  CHECK(b.coprocs[0].request.req_instances == 1);
  REQUIRE(b.results.size() == 1);
  CHECK(b.results[0].name == "wu_1_0");
  CHECK(b.results[0].state == 5);
  CHECK(b.results[0].final_elapsed_time == 100);
  CHECK(b.results[0].plan_class == "nvidia");
  REQUIRE(b.results[0].files.size() == 1);
  CHECK(b.results[0].files[0].md5_cksum == "00112233445566778899aabbccddeeff");
  CHECK(b.results[0].files[0].nbytes == 64);
  CHECK(b.sequences_held == std::vector<std::string>{"climate", "traj<1>"});
}

TEST_CASE("a server's scheduler reply reads back on the client side", "[boinc_xml]") {
  sched_reply r;
  r.project_name = "Demo & co";
  r.hostid = 9;
  r.request_delay = 60;
  r.next_rpc_delay = 3600;
  r.messages.push_back(reply_message{"hello <there>", true});
  r.files.push_back(file_description{"in.dat", false, 10, "abc", 0, {}});
  r.files.push_back(file_description{"wu_1_0_0", true, 0, {}, 1e6, {}});
  workunit_description w;
  w.name = "wu_1";
  w.app_name = "gpujob";
  w.rsc_fpops_est = 3.6e13;
  w.inputs.push_back(file_ref{"in.dat", "in.txt", true, false});
  r.workunits.push_back(w);
  result_description d;
  d.name = "wu_1_0";
  d.wu_name = "wu_1";
  d.report_deadline = 1.7e9;
  d.platform = "x86_64-pc-linux-gnu";
  d.version_num = 100;
  d.plan_class = "nvidia";
  d.outputs.push_back(file_ref{"wu_1_0_0", "out.txt", true, false});
  r.results.push_back(d);
  r.result_acks = {"old_0"};
  r.result_aborts = {"bad_1"};
  r.sequences_revoked = {"climate"};
  auto back = parse_sched_reply(write_sched_reply(r, reply_urls{"http://127.0.0.1:8080", "demo"}));
  REQUIRE(back.ok());
  const auto& b = *back.value;
  CHECK(b.project_name == "Demo & co");
  CHECK(b.hostid == 9u);
  CHECK(b.request_delay == 60);
  CHECK(b.next_rpc_delay == 3600);
  REQUIRE(b.messages.size() == 1);
  CHECK(b.messages[0].text == "hello <there>");
  CHECK(b.messages[0].notice);
  CHECK(b.dont_use_dcf);
  REQUIRE(b.files.size() == 2);
  CHECK_FALSE(b.files[0].is_output);
  CHECK(b.files[0].md5_cksum == "abc");
  CHECK(b.files[1].is_output);
  CHECK(b.files[1].max_nbytes == 1e6);
  REQUIRE(b.workunits.size() == 1);
  CHECK(b.workunits[0].app_name == "gpujob");
  CHECK(b.workunits[0].rsc_fpops_est == 3.6e13);
  REQUIRE(b.workunits[0].inputs.size() == 1);
  CHECK(b.workunits[0].inputs[0].open_name == "in.txt");
  CHECK(b.workunits[0].inputs[0].copy_file);
  REQUIRE(b.results.size() == 1);
  CHECK(b.results[0].wu_name == "wu_1");
  CHECK(b.results[0].report_deadline == 1.7e9);
  CHECK(b.results[0].plan_class == "nvidia");
  CHECK(b.results[0].version_num == 100);
  REQUIRE(b.results[0].outputs.size() == 1);
  CHECK(b.results[0].outputs[0].file_name == "wu_1_0_0");
  CHECK(b.result_acks == std::vector<std::string>{"old_0"});
  CHECK(b.result_aborts == std::vector<std::string>{"bad_1"});
  CHECK(b.sequences_revoked == std::vector<std::string>{"climate"});
  // A reply without a hostid has none.
  auto plain = parse_sched_reply(
    "<scheduler_reply><request_delay>5</request_delay></scheduler_reply>");
  REQUIRE(plain.ok());
  CHECK_FALSE(plain.value->hostid);
  CHECK_FALSE(plain.value->dont_use_dcf);
}

TEST_CASE("scheduler reply errors", "[boinc_xml]") {
  CHECK_FALSE(parse_sched_reply("").ok());
  CHECK(parse_sched_reply("<scheduler_reply><hostid>").error.find("malformed") == 0);
  CHECK(parse_sched_reply("<html/>").error.find("expected <scheduler_reply>") != std::string::npos);
  auto bad = parse_sched_reply(
    "<scheduler_reply><request_delay>soon</request_delay></scheduler_reply>");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error.find("request_delay") != std::string::npos);
}
