/// Tests of the events (actors/events, event_codec, event_text, routing): the durable encoding
/// of every event kind, its failure modes, the stable kind numbers, and the entity filters the
/// CLI uses.

#include "actors/event_codec.hpp"
#include "actors/event_text.hpp"
#include "actors/events.hpp"
#include "actors/records.hpp"
#include "actors/routing.hpp"
#include "storage/codec.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace cobble;

namespace {

constexpr time_us t0 = 1'700'000'000LL * us_per_second + 123'456;

app_rec sample_app() {
  app_rec a;
  a.id = 3;
  a.name = "testapp";
  a.user_friendly_name = "Test app";
  a.min_quorum = 3;
  a.target_nresults = 4;
  a.max_error_results = 5;
  a.max_total_results = 11;
  a.max_success_results = 7;
  a.delay_bound = 1234.5;
  a.max_jobs_per_rpc = 9;
  a.validator = 1;
  a.rsc_fpops_est = 1e12;
  a.rsc_fpops_bound = 1e13;
  a.rsc_memory_bound = 2e8;
  a.rsc_disk_bound = 3e9;
  a.max_output_nbytes = 4e6;
  a.output_names = {"out.txt", "log.txt"};
  a.versions = {app_version_rec{7, "x86_64-pc-linux-gnu", 101, "mt", 4, 0, 0},
                app_version_rec{8, "windows_x86_64", 102, "cuda", 0.5, 1, 1}};
  return a;
}

host_info_rec sample_info() {
  host_info_rec h;
  h.host_cpid = "cpid123";
  h.domain_name = "box.example.org";
  h.p_ncpus = 8;
  h.p_vendor = "GenuineIntel";
  h.p_model = "Xeon";
  h.p_fpops = 3.5e9;
  h.p_iops = 7e9;
  h.m_nbytes = 16e9;
  h.d_free = 1e11;
  h.os_name = "Linux";
  h.os_version = "6.1";
  h.coprocs = {{1, 2}, {2, 1}};
  h.coproc_peak_flops = {1e12, 5e11};
  return h;
}

wu_params sample_params() {
  wu_params p;
  p.command_line = "--seed 42";
  p.rsc_fpops_est = 1e12;
  p.rsc_fpops_bound = 1e13;
  p.rsc_memory_bound = 1e8;
  p.rsc_disk_bound = 1e9;
  p.delay_bound = 3600;
  p.min_quorum = 2;
  p.target_nresults = 3;
  p.max_error_results = 4;
  p.max_total_results = 10;
  p.max_success_results = 6;
  p.inputs = {file_rec{"abc_in.dat", 1024, "d41d8cd98f00b204e9800998ecf8427e"}};
  p.input_open_names = {"in.dat"};
  return p;
}

report_rec sample_report() {
  report_rec r;
  r.success = true;
  r.client_state = 5;
  r.exit_status = -3;
  r.elapsed = 123.25;
  r.cpu = 120.5;
  r.flags = flag_bad_cpu;
  r.outputs = {file_rec{"wu_1_0", 77, "0123456789abcdef0123456789abcdef"}};
  return r;
}

/// A version with files, as app_version_added carries it.
app_version_rec sample_signed_version() {
  app_version_rec v{12, "x86_64-pc-linux-gnu", 105, "", 1, 0, 0};
  v.api_version = "7.22.0";
  v.files = {app_file_rec{"testapp_105_x86_64-pc-linux-gnu", "testapp", 4096,
                          "0123456789abcdef0123456789abcdef", "ab\ncd\n.\n", true, true, false},
             app_file_rec{"params_105.xml", "params.xml", 12, "fedcba9876543210fedcba9876543210",
                          "ef\n.\n", false, false, true}};
  return v;
}

event make(payload p, std::uint16_t project = 2) {
  event e;
  e.seq = 17;
  e.time = t0;
  e.project = project;
  e.data = std::move(p);
  return e;
}

/// One event of every kind, every field set to a non-default value.
std::vector<event> samples() {
  std::vector<event> out;
  credit_settings cs;
  cs.version_sample_threshold = 7;
  cs.flops_per_cobblestone = 1e12;
  auto app = sample_app();
  app.host_scale_check = true;
  app.max_jobs_per_day = 33;
  out.push_back(make(ev::project_configured{"demo", "Demo project", {app}, cs}));
  out.push_back(
    make(ev::user_created{5, "alice", "alice@example.org", "0123456789abcdef0123456789abcdef",
                          "team-a", "$argon2id$v=19$m=65536,t=2,p=1$c2FsdA$aGFzaA", "Norway",
                          "0150", "fedcba9876543210fedcba9876543210"}));
  out.push_back(make(ev::host_registered{6, 5, sample_info()}));
  out.push_back(make(ev::host_described{6, sample_info()}));
  out.push_back(
    make(ev::workunit_created{9, "wu_9", 3, sample_params(), 3, "admin", "retry-7", "ab12", 4}));
  out.push_back(make(ev::results_created{9, 2, "inconclusive"}));
  out.push_back(
    make(ev::result_dispatched{result_ref{9, 1}, 6, t0 + 3600 * us_per_second,
                               version_echo{7, "x86_64-pc-linux-gnu", 101, "mt"}, 4.5e9, 400}));
  out.push_back(make(ev::result_reported{result_ref{9, 1}, 6, sample_report(), average_var{12, 2.5},
                                         false, t0 + 99, 0.5, true}));
  out.push_back(make(ev::result_timed_out{result_ref{9, 2}, 6}));
  credit_rec granted{1e12, 2.5, 0.5, 0.75, 1.25, 1.5, credit_probation};
  out.push_back(make(
    ev::workunit_validated{9,
                           1u,
                           {verdict{1, true, 6, 7, 123.25, 120.5}, verdict{2, false, 8, 7, 99, 98}},
                           {granted, credit_rec{}}}));
  out.push_back(make(ev::workunit_assimilated{9, 1}));
  out.push_back(make(ev::workunit_failed{9, "too many errors (4)"}));
  out.push_back(make(ev::workunit_files_deleted{9, {"in_0cc175b9c0f1b6a831c399e269772661"}}));
  auto w1 = sequence_wu_id(4, 0), w2 = sequence_wu_id(4, 1), w3 = sequence_wu_id(4, 2);
  auto params = sample_params();
  params.min_quorum = params.target_nresults = params.max_total_results = 1;
  out.push_back(
    make(ev::sequence_created{4,
                              "climate",
                              3,
                              259200,
                              2,
                              true,
                              params,
                              {seq_element_rec{w1, "climate@1", 1, 0, seq_element_kind::heartbeat},
                               seq_element_rec{w2, "climate@1r1", 1, 1, seq_element_kind::state}},
                              "alice"}));
  out.push_back(make(ev::sequence_extended{
    4, {seq_element_rec{w3, "climate@2", 2, 0, seq_element_kind::state}}, "handler"}));
  out.push_back(make(ev::sequence_ended{4, "converged", {w3}, {{6, "climate@2_0"}}, "bob"}));
  out.push_back(make(ev::sequence_assigned{4, 1, 6, "scheduler"}));
  out.push_back(make(ev::sequence_deassigned{
    4,
    1,
    6,
    "missed the deadline",
    7,
    {w2},
    {"climate@1r1_0"},
    {seq_element_rec{w3, "climate@1r1b1", 1, 1, seq_element_kind::state}},
    "relocation check",
    {file_rec{"in_0123456789abcdef0123456789abcdef", 4096, "0123456789abcdef0123456789abcdef"}},
    {"state.nc"}}));
  out.push_back(make(ev::sequence_element_checked{4, 1, true, {w1, w2}}));
  out.push_back(make(ev::sequence_restart_saved{
    4,
    1,
    7,
    w2,
    {file_rec{"in_0123456789abcdef0123456789abcdef", 4096, "0123456789abcdef0123456789abcdef"}},
    {"state.nc"}}));
  out.push_back(
    make(ev::host_result_validated{6, result_ref{9, 1}, 7, true, 2.5, 1e-7, true, 1.5}));
  out.push_back(make(ev::credit_normalized{3, 2.25, {version_scale{7, average_var{100, 2}, 0.5}}}));
  out.push_back(make(ev::credit_imported{"other.example",
                                         {credit_export_rec{"p", "app", "x86_64-pc-linux-gnu",
                                                            "cuda", 1, true, 12.5, 0.2}}}));
  out.push_back(make(ev::autoflops_sampled{3, 9, 12.5, 37.25, {{2e11, false}, {9e11, true}}}));
  out.push_back(
    make(ev::output_received{result_ref{9, 1}, 6, 0,
                             file_rec{"wu_9_1_0", 64, "0123456789abcdef0123456789abcdef"}}));
  auto added = sample_app();
  added.id = 4;
  added.name = "newapp";
  out.push_back(make(ev::app_added{added, "alice"}));
  out.push_back(make(ev::app_version_added{3, sample_signed_version(), "alice"}));
  out.push_back(make(ev::app_version_deprecated{3, 12, true, "bob"}));
  out.push_back(make(ev::code_sign_key_added{"1024\nabcd\n0003\n.\n", "sig\n", "carol"}));
  out.push_back(make(ev::host_reattached{6, 5, 1}));
  out.push_back(make(ev::result_written_off{result_ref{9, 2}, 6, 1}));
  out.push_back(make(ev::result_resent{result_ref{9, 1}, 6, 1'700'000'000'000'000}));
  out.push_back(make(ev::user_changed{5, "alice b", "alice@example.net", "$argon2id$other",
                                      "Sweden", "12345", "https://alice.example.net", "team-b"}));
  out.push_back(make(ev::team_created{8, "Night Owls", 5, "https://owls.example.org",
                                      "We crunch at night.", "Norway"}));
  out.push_back(
    make(ev::workunit_cancelled{9, "bad inputs", {{6, "wu_9_0"}, {7, "wu_9_1"}}, "alice"}));
  return out;
}

event round_trip(const event& e) {
  auto r = to_record(e);
  auto back = from_record(r);
  REQUIRE(back.has_value());
  return *back;
}

} // namespace

TEST_CASE("event kinds have fixed numbers", "[events]") {
  CHECK(ev::project_configured::kind == 1);
  CHECK(ev::user_created::kind == 2);
  CHECK(ev::host_registered::kind == 3);
  CHECK(ev::host_described::kind == 4);
  CHECK(ev::workunit_created::kind == 5);
  CHECK(ev::results_created::kind == 6);
  CHECK(ev::result_dispatched::kind == 7);
  CHECK(ev::result_reported::kind == 8);
  CHECK(ev::result_timed_out::kind == 9);
  CHECK(ev::workunit_validated::kind == 10);
  CHECK(ev::workunit_assimilated::kind == 11);
  CHECK(ev::workunit_failed::kind == 12);
  CHECK(ev::workunit_files_deleted::kind == 13);
  // The record carries the same numbers, and the names the CLI prints belong to them.
  CHECK(ev::sequence_created::kind == 14);
  CHECK(ev::sequence_extended::kind == 15);
  CHECK(ev::sequence_ended::kind == 16);
  CHECK(ev::sequence_assigned::kind == 17);
  CHECK(ev::sequence_deassigned::kind == 18);
  CHECK(ev::sequence_element_checked::kind == 19);
  CHECK(ev::sequence_restart_saved::kind == 20);
  CHECK(ev::host_result_validated::kind == 21);
  CHECK(ev::credit_normalized::kind == 22);
  CHECK(ev::credit_imported::kind == 23);
  CHECK(ev::autoflops_sampled::kind == 24);
  CHECK(ev::output_received::kind == 25);
  CHECK(ev::app_added::kind == 26);
  CHECK(ev::app_version_added::kind == 27);
  CHECK(ev::app_version_deprecated::kind == 28);
  CHECK(ev::code_sign_key_added::kind == 29);
  CHECK(ev::host_reattached::kind == 30);
  CHECK(ev::result_written_off::kind == 31);
  CHECK(ev::result_resent::kind == 32);
  CHECK(ev::user_changed::kind == 33);
  CHECK(ev::team_created::kind == 34);
  CHECK(ev::workunit_cancelled::kind == 35);
  auto all = samples();
  REQUIRE(all.size() == std::variant_size_v<payload>);
  REQUIRE(all.size() == 35);
  const char* names[] = {"project_configured",
                         "user_created",
                         "host_registered",
                         "host_described",
                         "workunit_created",
                         "results_created",
                         "result_dispatched",
                         "result_reported",
                         "result_timed_out",
                         "workunit_validated",
                         "workunit_assimilated",
                         "workunit_failed",
                         "workunit_files_deleted",
                         "sequence_created",
                         "sequence_extended",
                         "sequence_ended",
                         "sequence_assigned",
                         "sequence_deassigned",
                         "sequence_element_checked",
                         "sequence_restart_saved",
                         "host_result_validated",
                         "credit_normalized",
                         "credit_imported",
                         "autoflops_sampled",
                         "output_received",
                         "app_added",
                         "app_version_added",
                         "app_version_deprecated",
                         "code_sign_key_added",
                         "host_reattached",
                         "result_written_off",
                         "result_resent",
                         "user_changed",
                         "team_created",
                         "workunit_cancelled"};
  for (std::size_t i = 0; i < all.size(); ++i) {
    CHECK(kind_of(all[i].data) == i + 1);
    CHECK(to_record(all[i]).kind == i + 1);
    CHECK(std::string{kind_name(static_cast<std::uint16_t>(i + 1))} == names[i]);
  }
  CHECK(std::string{kind_name(0)} == "unknown");
  CHECK(std::string{kind_name(static_cast<std::uint16_t>(std::variant_size_v<payload> + 1))}
        == "unknown");
  CHECK(std::string{kind_name(36)} == "unknown");
}

TEST_CASE("records carry the event header", "[events]") {
  auto e = make(ev::result_reported{result_ref{9, 1}, 6, sample_report()}, 4);
  auto r = to_record(e);
  CHECK(r.seq == 17);
  CHECK(r.time_us == t0);
  CHECK(r.project == 4);
  CHECK(r.kind == 8);
  CHECK(r.entity_kind == static_cast<std::uint8_t>(entity_kind::workunit));
  CHECK(r.entity_id == 9);
  CHECK(static_cast<std::uint8_t>(r.payload.at(0)) == payload_version(r.kind));
  CHECK(payload_version(r.kind) == 4); // result_reported: scale statistics; app units; late
  auto u = to_record(make(ev::user_created{5, "a", "b", "c"}));
  CHECK(u.entity_kind == static_cast<std::uint8_t>(entity_kind::user));
  CHECK(u.entity_id == 5);
  auto h = to_record(make(ev::host_described{6, {}}));
  CHECK(h.entity_kind == static_cast<std::uint8_t>(entity_kind::host));
  CHECK(h.entity_id == 6);
  auto p = to_record(make(ev::project_configured{"x", "y", {}}));
  CHECK(p.entity_kind == static_cast<std::uint8_t>(entity_kind::project));
}

TEST_CASE("every payload kind round-trips field by field", "[events]") {
  auto all = samples();
  for (const auto& e : all) {
    INFO("kind " << kind_name(kind_of(e.data)));
    auto back = round_trip(e);
    CHECK(back.seq == e.seq);
    CHECK(back.time == e.time);
    CHECK(back.project == e.project);
    REQUIRE(back.data.index() == e.data.index());
  }
  SECTION("project_configured") {
    auto x = std::get<ev::project_configured>(round_trip(all[0]).data);
    CHECK(x.name == "demo");
    CHECK(x.long_name == "Demo project");
    REQUIRE(x.apps.size() == 1);
    auto app = sample_app();
    app.host_scale_check = true;
    app.max_jobs_per_day = 33;
    CHECK(x.apps[0] == app);
    CHECK(x.credit.version_sample_threshold == 7);
    CHECK(x.credit.flops_per_cobblestone == 1e12);
    CHECK(x.apps[0].versions.at(1).plan_class == "cuda");
    CHECK(x.apps[0].output_names == std::vector<std::string>{"out.txt", "log.txt"});
  }
  SECTION("user_created") {
    auto x = std::get<ev::user_created>(round_trip(all[1]).data);
    CHECK(x.id == 5);
    CHECK(x.name == "alice");
    CHECK(x.email == "alice@example.org");
    CHECK(x.authenticator == "0123456789abcdef0123456789abcdef");
    CHECK(x.team == "team-a");
  }
  SECTION("host_registered") {
    auto x = std::get<ev::host_registered>(round_trip(all[2]).data);
    CHECK(x.id == 6);
    CHECK(x.user == 5);
    CHECK(x.info == sample_info());
    CHECK(x.info.coprocs.at(0) == std::pair<std::uint8_t, int>{1, 2});
  }
  SECTION("host_described") {
    auto x = std::get<ev::host_described>(round_trip(all[3]).data);
    CHECK(x.id == 6);
    CHECK(x.info == sample_info());
  }
  SECTION("workunit_created") {
    auto x = std::get<ev::workunit_created>(round_trip(all[4]).data);
    CHECK(x.id == 9);
    CHECK(x.name == "wu_9");
    CHECK(x.app == 3);
    CHECK(x.params == sample_params());
    CHECK(x.n_results == 3);
    CHECK(x.submitter == "admin");
    CHECK(x.batch_key == "retry-7");
    CHECK(x.batch_digest == "ab12");
    CHECK(x.batch_size == 4);
    CHECK(describe(all[4]).find("batch_key=retry-7 batch_size=4") != std::string::npos);
  }
  SECTION("results_created") {
    auto x = std::get<ev::results_created>(round_trip(all[5]).data);
    CHECK(x.wu == 9);
    CHECK(x.count == 2);
    CHECK(x.reason == "inconclusive");
  }
  SECTION("result_dispatched") {
    auto x = std::get<ev::result_dispatched>(round_trip(all[6]).data);
    CHECK(x.result == result_ref{9, 1});
    CHECK(x.host == 6);
    CHECK(x.deadline == t0 + 3600 * us_per_second);
    CHECK(x.version == version_echo{7, "x86_64-pc-linux-gnu", 101, "mt"});
  }
  SECTION("result_reported") {
    auto x = std::get<ev::result_reported>(round_trip(all[7]).data);
    CHECK(x.result == result_ref{9, 1});
    CHECK(x.host == 6);
    CHECK(x.report == sample_report());
    CHECK(x.report.exit_status == -3);
    CHECK(x.report.flags == flag_bad_cpu);
    CHECK(x.quota_factor == 0.5);
    CHECK(x.late);
    CHECK(describe(all[7]).find(" LATE") != std::string::npos);
  }
  SECTION("result_timed_out") {
    auto x = std::get<ev::result_timed_out>(round_trip(all[8]).data);
    CHECK(x.result == result_ref{9, 2});
    CHECK(x.host == 6);
  }
  SECTION("workunit_validated") {
    auto x = std::get<ev::workunit_validated>(round_trip(all[9]).data);
    CHECK(x.wu == 9);
    REQUIRE(x.canonical.has_value());
    CHECK(*x.canonical == 1);
    REQUIRE(x.verdicts.size() == 2);
    CHECK(x.verdicts[0] == verdict{1, true, 6, 7, 123.25, 120.5});
    CHECK(x.verdicts[1] == verdict{2, false, 8, 7, 99, 98});
    // Without a canonical result the optional stays empty.
    auto none = round_trip(make(ev::workunit_validated{9, std::nullopt, {}}));
    CHECK_FALSE(std::get<ev::workunit_validated>(none.data).canonical.has_value());
  }
  SECTION("workunit_assimilated") {
    auto x = std::get<ev::workunit_assimilated>(round_trip(all[10]).data);
    CHECK(x.wu == 9);
    CHECK(x.canonical == 1);
  }
  SECTION("workunit_failed") {
    auto x = std::get<ev::workunit_failed>(round_trip(all[11]).data);
    CHECK(x.wu == 9);
    CHECK(x.reason == "too many errors (4)");
  }
  SECTION("workunit_files_deleted") {
    auto x = std::get<ev::workunit_files_deleted>(round_trip(all[12]).data);
    CHECK(x.wu == 9);
    CHECK(x.inputs == std::vector<std::string>{"in_0cc175b9c0f1b6a831c399e269772661"});
  }
  SECTION("sequence events") {
    auto c = std::get<ev::sequence_created>(round_trip(all[13]).data);
    CHECK(c.id == 4);
    CHECK(c.name == "climate");
    CHECK(c.max_result_time == 259200);
    CHECK(c.replicas == 2);
    CHECK(c.accept_all);
    CHECK(c.params.target_nresults == 1);
    CHECK(c.elements == std::get<ev::sequence_created>(all[13].data).elements);
    CHECK(c.by == "alice");
    auto x = std::get<ev::sequence_extended>(round_trip(all[14]).data);
    CHECK(x.elements.at(0).kind == seq_element_kind::state);
    CHECK(x.by == "handler");
    auto en = std::get<ev::sequence_ended>(round_trip(all[15]).data);
    CHECK(en.reason == "converged");
    CHECK(en.aborted == std::vector<std::pair<id_type, std::string>>{{6, "climate@2_0"}});
    auto as = std::get<ev::sequence_assigned>(round_trip(all[16]).data);
    CHECK(as.replica == 1);
    CHECK(as.host == 6);
    auto d = std::get<ev::sequence_deassigned>(round_trip(all[17]).data);
    CHECK(d.restart == 7);
    CHECK(d.aborted == std::vector<std::string>{"climate@1r1_0"});
    CHECK(d.replacements.at(0).name == "climate@1r1b1");
    CHECK(d.by == "relocation check");
    CHECK(d.restart_inputs.at(0).md5 == "0123456789abcdef0123456789abcdef");
    CHECK(d.restart_open_names == std::vector<std::string>{"state.nc"});
    auto ch = std::get<ev::sequence_element_checked>(round_trip(all[18]).data);
    CHECK(ch.agree);
    CHECK(ch.wus.size() == 2);
    auto rs = std::get<ev::sequence_restart_saved>(round_trip(all[19]).data);
    CHECK(rs.position == 7);
    CHECK(rs.files.at(0).nbytes == 4096);
    CHECK(rs.open_names == std::vector<std::string>{"state.nc"});
  }
  SECTION("output_received") {
    auto x = std::get<ev::output_received>(round_trip(all[24]).data);
    CHECK(x.result == result_ref{9, 1});
    CHECK(x.host == 6);
    CHECK(x.index == 0);
    CHECK(x.file == file_rec{"wu_9_1_0", 64, "0123456789abcdef0123456789abcdef"});
    // The workunit's sequence (if any) and nobody else beside the project owns it.
    auto owners = owners_of(all[24].data);
    CHECK(owners.hosts.empty());
    CHECK(owners.sequence == 0);
    CHECK(result_of(all[24].data) == std::optional<result_ref>{result_ref{9, 1}});
    auto text = describe(all[24]);
    CHECK(text.find("md5=0123456789abcdef0123456789abcdef") != std::string::npos);
  }
  SECTION("app events") {
    auto a = std::get<ev::app_added>(round_trip(all[25]).data);
    CHECK(a.app == std::get<ev::app_added>(all[25].data).app);
    CHECK(a.by == "alice");
    auto v = std::get<ev::app_version_added>(round_trip(all[26]).data);
    CHECK(v.app == 3);
    CHECK(v.version == sample_signed_version());
    CHECK(v.version.files.at(0).main_program);
    CHECK(v.version.files.at(1).copy_file);
    CHECK(v.version.api_version == "7.22.0");
    auto d = std::get<ev::app_version_deprecated>(round_trip(all[27]).data);
    CHECK(d.app == 3);
    CHECK(d.version == 12);
    CHECK(d.deprecated);
    CHECK(d.by == "bob");
    auto k = std::get<ev::code_sign_key_added>(round_trip(all[28]).data);
    CHECK(k.public_key == "1024\nabcd\n0003\n.\n");
    CHECK(k.signature == "sig\n");
    CHECK(k.by == "carol");
    // The new version has an owner of its own (its statistics); the app is the entity.
    auto owners = owners_of(all[26].data);
    CHECK(owners.app_versions == std::vector<std::uint32_t>{12});
    CHECK(entity_of(all[26].data) == std::pair{entity_kind::app, id_type{3}});
    CHECK(entity_of(all[25].data) == std::pair{entity_kind::app, id_type{4}});
    CHECK(entity_of(all[28].data) == std::pair{entity_kind::project, id_type{0}});
    CHECK(describe(all[26]).find("main=testapp_105_x86_64-pc-linux-gnu") != std::string::npos);
    CHECK(describe(all[27]).find("deprecated") != std::string::npos);
    CHECK(describe(all[28]).find("first key") == std::string::npos);
  }
  SECTION("a reattached host and a written-off result: the host's and the workunit's") {
    auto r = std::get<ev::host_reattached>(round_trip(all[29]).data);
    CHECK(r.host == 6);
    CHECK(r.user == 5);
    CHECK(r.match == 1);
    auto w = std::get<ev::result_written_off>(round_trip(all[30]).data);
    CHECK(w.result == result_ref{9, 2});
    CHECK(w.host == 6);
    CHECK(w.reason == 1);
    CHECK(entity_of(all[29].data) == std::pair{entity_kind::host, id_type{6}});
    CHECK(entity_of(all[30].data) == std::pair{entity_kind::workunit, id_type{9}});
    CHECK(owners_of(all[30].data).hosts == std::vector<id_type>{6});
    CHECK(touches(all[29], entity_kind::user, 5));
    CHECK(describe(all[29]).find("user=5 match=cpid") != std::string::npos);
    CHECK(describe(make(ev::host_reattached{6, 5, 2})).find("user=5 match=traits")
          != std::string::npos);
    CHECK(describe(all[30]).find("reason=detached") != std::string::npos);
    auto s = std::get<ev::result_resent>(round_trip(all[31]).data);
    CHECK(s.result == result_ref{9, 1});
    CHECK(s.host == 6);
    CHECK(s.deadline == 1'700'000'000'000'000);
    CHECK(entity_of(all[31].data) == std::pair{entity_kind::workunit, id_type{9}});
    CHECK(owners_of(all[31].data).hosts == std::vector<id_type>{6});
    CHECK(describe(all[31]).find("host=6 deadline=1700000000") != std::string::npos);
    CHECK(describe(all[30]).find("result=2 host=6 reason=detached") != std::string::npos);
  }
}

namespace {

/// The record of `e` as payload format `version` wrote it (an older log's).
storage::event_record record_as_version(const event& e, std::uint8_t version) {
  storage::event_record r = to_record(e);
  r.payload.clear();
  storage::writer w{r.payload};
  w.put_u8(version);
  storage::encoder enc{w, version};
  std::visit([&](const auto& x) { enc.put(x); }, e.data);
  return r;
}

} // namespace

TEST_CASE("a sequence_deassigned of payload version 1 decodes without state files", "[events]") {
  CHECK(payload_version(ev::sequence_deassigned::kind) == 2);
  // Written as version 1 did: no restart_inputs or restart_open_names.
  auto r = record_as_version(samples()[17], 1);
  auto e = from_record(r);
  REQUIRE(e.has_value());
  auto x = std::get<ev::sequence_deassigned>(e->data);
  CHECK(x.restart == 7);
  CHECK(x.by == "relocation check");
  CHECK(x.replacements.at(0).name == "climate@1r1b1");
  CHECK(x.restart_inputs.empty());
  CHECK(x.restart_open_names.empty());
  // The same bytes read as version 2 are incomplete.
  r.payload[0] = 2;
  CHECK_FALSE(from_record(r).has_value());
}

TEST_CASE("a result_reported of payload version 3 decodes as on time", "[events]") {
  CHECK(payload_version(ev::result_reported::kind) == 4);
  // Written as version 3 did (every log before late reports): no `late`.
  auto r = record_as_version(samples()[7], 3);
  auto e = from_record(r);
  REQUIRE(e.has_value());
  auto x = std::get<ev::result_reported>(e->data);
  CHECK(x.report == sample_report());
  CHECK(x.quota_factor == 0.5);
  CHECK_FALSE(x.late);
  // The same bytes read as version 4 are incomplete.
  r.payload[0] = 4;
  CHECK_FALSE(from_record(r).has_value());
}

TEST_CASE("a user_created of payload version 2 decodes without password or profile", "[events]") {
  CHECK(payload_version(ev::user_created::kind) == 3);
  // Written as version 2 did (every log before volunteers made accounts): no password.
  auto r = record_as_version(samples()[1], 2);
  auto e = from_record(r);
  REQUIRE(e.has_value());
  auto x = std::get<ev::user_created>(e->data);
  CHECK(x.name == "alice");
  CHECK(x.team == "team-a");
  CHECK(x.passwd.empty());
  CHECK(x.country.empty());
  CHECK(x.cross_project_id.empty());
  // The same bytes read as version 3 are incomplete.
  r.payload[0] = 3;
  CHECK_FALSE(from_record(r).has_value());
}

TEST_CASE("a workunit_created of payload version 2 decodes without a batch key", "[events]") {
  CHECK(payload_version(ev::workunit_created::kind) == 3);
  // Written as version 2 did (every log before idempotency keys): no batch fields.
  auto r = record_as_version(samples()[4], 2);
  auto e = from_record(r);
  REQUIRE(e.has_value());
  auto x = std::get<ev::workunit_created>(e->data);
  CHECK(x.name == "wu_9");
  CHECK(x.params == sample_params());
  CHECK(x.submitter == "admin");
  CHECK(x.batch_key.empty());
  CHECK(x.batch_digest.empty());
  CHECK(x.batch_size == 0);
  // The same bytes read as version 3 are incomplete.
  r.payload[0] = 3;
  CHECK_FALSE(from_record(r).has_value());
}

TEST_CASE("a project_configured of payload version 5 decodes without app files", "[events]") {
  CHECK(payload_version(ev::project_configured::kind) == 6);
  auto e = samples()[0];
  auto& apps = std::get<ev::project_configured>(e.data).apps;
  apps.at(0).versions.push_back(sample_signed_version());
  // Written as version 5 did (every log before app distribution): versions without files.
  auto r = record_as_version(e, 5);
  auto back = from_record(r);
  REQUIRE(back.has_value());
  auto x = std::get<ev::project_configured>(back->data);
  REQUIRE(x.apps.at(0).versions.size() == 3);
  const auto& v = x.apps[0].versions[2];
  CHECK(v.version_num == 105);
  CHECK(v.files.empty());
  CHECK(v.api_version.empty());
  CHECK_FALSE(v.deprecated);
  // The same bytes read as version 6 are incomplete.
  r.payload[0] = 6;
  CHECK_FALSE(from_record(r).has_value());
}

TEST_CASE("records that cannot be read decode to nothing", "[events]") {
  for (const auto& e : samples()) {
    INFO("kind " << kind_name(kind_of(e.data)));
    auto good = to_record(e);
    REQUIRE(from_record(good).has_value());
    // An unknown kind.
    auto r = good;
    r.kind = static_cast<std::uint16_t>(std::variant_size_v<payload> + 1);
    CHECK_FALSE(from_record(r).has_value());
    r.kind = 0;
    CHECK_FALSE(from_record(r).has_value());
    // A payload version from the future, or the never-written version 0.
    r = good;
    r.payload[0] = static_cast<char>(payload_version(r.kind) + 1);
    CHECK_FALSE(from_record(r).has_value());
    r.payload[0] = 0;
    CHECK_FALSE(from_record(r).has_value());
    // Every truncation.
    for (std::size_t n = 0; n < good.payload.size(); ++n) {
      r = good;
      r.payload.resize(n);
      INFO("truncated to " << n << " of " << good.payload.size() << " bytes");
      CHECK_FALSE(from_record(r).has_value());
    }
    // Trailing bytes.
    r = good;
    r.payload.push_back('\0');
    CHECK_FALSE(from_record(r).has_value());
  }
}

TEST_CASE("a record of one kind does not decode as another", "[events]") {
  // Reading a user_created payload as results_created must not yield an event.
  auto r = to_record(make(ev::user_created{5, "alice", "alice@example.org", "k"}));
  r.kind = ev::results_created::kind;
  CHECK_FALSE(from_record(r).has_value());
}

TEST_CASE("touches finds the events of a host, a workunit and a user", "[events]") {
  auto all = samples();
  auto touching = [&](entity_kind k, id_type id) {
    std::vector<std::uint16_t> kinds;
    for (const auto& e : all)
      if (touches(e, k, id))
        kinds.push_back(kind_of(e.data));
    return kinds;
  };
  // Host 6: registration, description, dispatch, report, timeout, the verdict on its result,
  // the sequence events that give it or take from it a chain or results, its statistics
  // update from the verdict, its reattachment, a result written off and one sent again, and
  // the cancel that took a result back from it.
  CHECK(touching(entity_kind::host, 6)
        == std::vector<std::uint16_t>{3, 4, 7, 8, 9, 10, 16, 17, 18, 21, 30, 31, 32, 35});
  // Host 8 appears only in a verdict.
  CHECK(touching(entity_kind::host, 8) == std::vector<std::uint16_t>{10});
  CHECK(touching(entity_kind::host, 99).empty());
  // Workunit 9: everything about it and its results.
  CHECK(touching(entity_kind::workunit, 9)
        == std::vector<std::uint16_t>{5, 6, 7, 8, 9, 10, 11, 12, 13, 21, 24, 25, 31, 32, 35});
  CHECK(touching(entity_kind::workunit, 6).empty());
  // User 5: its creation, its host's registration and reattachment, its change, the team it
  // made.
  CHECK(touching(entity_kind::user, 5) == std::vector<std::uint16_t>{2, 3, 30, 33, 34});
  CHECK(touching(entity_kind::team, 8) == std::vector<std::uint16_t>{34});
  CHECK(touching(entity_kind::user, 6).empty());
  CHECK(touching(entity_kind::project, 0) == std::vector<std::uint16_t>{1, 22, 23, 29});
  // App 3: the configuration that holds it, its new version and that version's deprecation.
  CHECK(touching(entity_kind::app, 3) == std::vector<std::uint16_t>{1, 27, 28});
  CHECK(touching(entity_kind::app, 4) == std::vector<std::uint16_t>{26});
  // Sequence 4: its own events, and any event of a workunit in its id range.
  CHECK(touching(entity_kind::sequence, 4)
        == std::vector<std::uint16_t>{14, 15, 16, 17, 18, 19, 20});
  auto report = make(ev::result_reported{result_ref{sequence_wu_id(4, 2), 0}, 6, {}});
  CHECK(touches(report, entity_kind::sequence, 4));
  CHECK_FALSE(touches(report, entity_kind::sequence, 5));
  CHECK(sequence_of_wu(sequence_wu_id(4, 2)) == 4);
  CHECK(sequence_of_wu(9) == 0);
  CHECK(sequence_element_name("climate", 7, 1, 2) == "climate@7r1b2");
  CHECK(sequence_element_name("climate", 7, 0, 0) == "climate@7");
}

TEST_CASE("host_of and result_of name the host and result of an event", "[events]") {
  auto all = samples();
  CHECK(host_of(all[2].data) == std::optional<id_type>{6});
  CHECK(host_of(all[7].data) == std::optional<id_type>{6});
  CHECK_FALSE(host_of(all[4].data).has_value());
  CHECK(result_of(all[6].data) == std::optional<result_ref>{result_ref{9, 1}});
  CHECK(result_of(all[8].data) == std::optional<result_ref>{result_ref{9, 2}});
  CHECK_FALSE(result_of(all[9].data).has_value());
}

TEST_CASE("describe names the kind and the entity", "[events]") {
  for (const auto& e : samples()) {
    auto text = describe(e);
    INFO(text);
    CHECK(text.find(kind_name(kind_of(e.data))) != std::string::npos);
    CHECK(text.find("#17") != std::string::npos);
  }
  auto text = describe(samples()[7]);
  CHECK(text.find("wu:9") != std::string::npos);
  CHECK(text.find("host=6") != std::string::npos);
  CHECK(text.find("FLAGGED") != std::string::npos);
}
