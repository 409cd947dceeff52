// `cobble seq ...` against a real cobbled (127.0.0.1, port 0), a client listing the sequences
// it holds over the scheduler's XML, and `cobble log replay --entity seq:NAME` on the same
// data directory.

#include "../support/cobbled.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <string>

#include <sys/wait.h>

using namespace cobble::test;

namespace {

struct run_result {
  int code = -1;
  std::string output;
};

run_result run_cobble(const std::string& args) {
  std::string cmd = std::string{COBBLE_BINARY_DIR} + "/tools/cobble " + args + " 2>&1";
  run_result out;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0)
    out.output.append(buf.data(), n);
  int status = ::pclose(pipe);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

/// The 7.20.5 request shape, plus the sequences the client believes it holds.
std::string
request_listing(const server& s, std::uint64_t hostid, double req_secs, const std::string& seq) {
  auto body = make_request(s.account_key, hostid, req_secs, req_secs > 0 ? 1 : 0, {});
  auto end = body.rfind("</scheduler_request>");
  REQUIRE(end != std::string::npos);
  if (!seq.empty())
    body.insert(end, "<work_sequences>\n    <name>" + seq + "</name>\n</work_sequences>\n");
  return body;
}

} // namespace

TEST_CASE("an operator runs a sequence with cobble seq and the host is told when it loses it",
          "[integration][sequences]") {
  temp_dir dir{"cobble-seq"};
  server s{dir.path()};
  auto online = "--server http://127.0.0.1:" + std::to_string(s.admin_port) + " --token " + s.token;
  auto offline = "--data-dir '" + s.data.string() + "'";

  auto created = run_cobble(online
                            + " seq create traj --app testapp --count 3 --state-every 3"
                              " --max-result-time 86400 --by alice");
  INFO(created.output);
  REQUIRE(created.code == 0);
  CHECK_THAT(created.output, Catch::Contains("sequence traj (id 1, app testapp): 3 elements"));
  CHECK_THAT(created.output, Catch::Contains("by alice"));
  CHECK_THAT(created.output, Catch::Matches("[\\s\\S]*traj@3 +state +unsent[\\s\\S]*"));

  // A host asks for work: it is given the sequence and two elements.
  http_client c{"127.0.0.1", s.port};
  auto first = rpc(c, request_listing(s, 0, 3600, ""));
  REQUIRE(first.hostid.has_value());
  auto host = *first.hostid;
  REQUIRE(first.jobs.size() == 2);
  CHECK(first.jobs[0].wu == "traj@1");
  CHECK(first.jobs[1].wu == "traj@2");
  auto shown = run_cobble(online + " seq show traj");
  CHECK_THAT(shown.output, Catch::Contains("chain 0: host " + std::to_string(host)));

  // Reassigning to an unknown host is refused and records nothing.
  auto before = run_cobble(offline + " log tail -n 1").output;
  auto bad = run_cobble(online + " seq reassign traj --to 999");
  CHECK(bad.code == 1);
  CHECK_THAT(bad.output, Catch::Contains("no host 999"));
  CHECK(run_cobble(offline + " log tail -n 1").output == before);
  auto usage = run_cobble(online + " seq reassign traj");
  CHECK(usage.code == 2);

  // The operator takes it away; the host, listing it, is told.
  auto taken = run_cobble(online + " seq reassign traj --unassign --by carol");
  INFO(taken.output);
  REQUIRE(taken.code == 0);
  CHECK_THAT(taken.output, Catch::Contains("chain 0: host -"));
  CHECK_THAT(taken.output,
             Catch::Contains("dead branch 1 of chain 0: taken from host " + std::to_string(host)));
  CHECK_THAT(taken.output, Catch::Contains("by carol"));
  auto r = c.post("/demo/cgi", request_listing(s, host, 0, "traj"));
  REQUIRE(r.status == 200);
  CHECK_THAT(r.body, Catch::Contains("<work_sequence_revoked>traj</work_sequence_revoked>"));

  auto listed = run_cobble(online + " seq list");
  CHECK_THAT(listed.output, Catch::Contains("traj"));
  auto ended = run_cobble(online + " seq end traj --reason converged --by bob");
  CHECK(ended.code == 0);
  CHECK_THAT(ended.output, Catch::Contains("by bob (converged)"));
  auto ext = run_cobble(online + " seq extend traj --count 2");
  CHECK(ext.code == 1);
  CHECK_THAT(ext.output, Catch::Contains("has ended; it cannot be extended"));

  // The history, offline, with who did what.
  auto history = run_cobble(offline + " log replay --entity seq:traj");
  INFO(history.output);
  CHECK(history.code == 0);
  CHECK_THAT(history.output, Catch::Contains("sequence_created seq:1 name=traj"));
  CHECK_THAT(history.output, Catch::Contains("by=alice"));
  CHECK_THAT(history.output, Catch::Contains("sequence_assigned seq:1 replica=0 host="
                                             + std::to_string(host) + " by=scheduler"));
  CHECK_THAT(history.output, Catch::Contains("result_dispatched"));
  CHECK_THAT(history.output, Catch::Contains("sequence_deassigned seq:1"));
  CHECK_THAT(history.output, Catch::Contains("by=carol"));
  CHECK_THAT(history.output, Catch::Contains("sequence_ended seq:1"));
  CHECK(run_cobble(offline + " log replay --entity seq:nope").code == 1);
  CHECK(s.stop() == 0);
  CHECK(run_cobble(offline + " log verify").code == 0);
}
