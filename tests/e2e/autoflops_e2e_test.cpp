// End-to-end, AutoFlops (docs/autoflops.md, issue #5): a real BOINC 7.20.5 client's
// elapsed-time limit follows the server's AutoFlops completion time bound.
//
// One client (anonymous platform, tools/testapp) attached to a real cobbled whose app has
// `autoflops: {estimates: all}`. It first runs a few short jobs (predicted_app_units 1, two
// seconds of wall-clock time each), from which the server learns the host's
// seconds_per_app_unit(H,V) and its spread (a BOINC client reports no app units: each job counts
// its predicted units). Then the test
// submits a job whose predicted app units put its bound just over the client's 120-second
// floor (a limit under 120 s becomes 12 hours), and whose app runs three times that long. The
// reply translates the bound into rsc_fpops_bound = bound × flops; the client's limit
// (rsc_fpops_bound / flops) must be the bound, the client must abort the job there ("exceeded
// elapsed time limit", exit status 197), and the server must record that error.
//
// The environment variables of boinc_e2e_support.hpp apply; COBBLE_E2E_BUDGET defaults to 240.

#include "boinc_e2e_support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iomanip>

using namespace cobble::e2e;

namespace {

constexpr int short_jobs = 4;
/// Wall-clock seconds of a short job (the client measures elapsed time on the wall clock);
/// the short jobs' command line says the same.
constexpr double short_job_seconds = 2;
/// The long job's bound is chosen just over the client's floor of 120 s.
constexpr double wanted_bound = 125;
/// autoflops.host_min_spread (its default): the least σ a host's record is taken to have.
constexpr double host_min_spread = 0.1;
/// The long job's app runs this many times its bound if nobody stops it.
constexpr double overrun = 3;
const std::string long_job = "af_e2e_long";
const std::string short_command = "--iterations 1000 --wall-seconds 2";

/// Quick RPC turnaround; one app whose jobs need one valid result, with AutoFlops estimates
/// for every client (`estimates: all`, set here so that the test does not depend on the
/// default) and a warm-up that ends after min_samples validated jobs: then the factor of the
/// bound is exp(4σ), σ the spread of the host's own samples (at least host_min_spread).
std::string config() {
  return server_config("Cobble AutoFlops end-to-end test", R"(        min_quorum: 1
        target_nresults: 1
        delay_bound: 1d
        autoflops:
          estimates: all
          min_samples: 3
          warmup_bound_factor: 10
)");
}

/// The <TAG> ... </TAG> element of `doc` that contains `needle`, if any.
std::optional<std::string>
xml_element(const std::string& doc, const std::string& tag, const std::string& needle) {
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  for (auto pos = doc.find(open); pos != std::string::npos; pos = doc.find(open, pos + 1)) {
    auto end = doc.find(close, pos);
    if (end == std::string::npos)
      return std::nullopt;
    auto element = doc.substr(pos, end + close.size() - pos);
    if (element.find(needle) != std::string::npos)
      return element;
  }
  return std::nullopt;
}

/// The time of a client log line ("23-Nov-2026 07:03:50 [project] ..."), in seconds.
std::optional<double> log_time(const std::string& line) {
  std::tm tm{};
  std::istringstream in{line};
  in >> std::get_time(&tm, "%d-%b-%Y %H:%M:%S");
  if (in.fail())
    return std::nullopt;
  return static_cast<double>(timegm(&tm));
}

/// The number in <TAG>...</TAG> of an element; NaN when absent.
double xml_number(const std::string& element, const std::string& tag) {
  std::smatch m;
  if (std::regex_search(element, m, std::regex{"<" + tag + ">\\s*([^<\\s]+)\\s*</" + tag + ">"}))
    return std::stod(m[1]);
  return std::nan("");
}

} // namespace

TEST_CASE("a real BOINC client's elapsed-time limit is the AutoFlops bound", "[e2e][autoflops]") {
  const auto started = steady::now();
  const auto budget = test_budget(240s);
  const auto deadline = started + budget;
  INFO("the BOINC client " << boinc_binary() << " and " << boinccmd_binary()
                           << " are required (Debian package boinc-client)");
  REQUIRE(fs::exists(boinc_binary()));
  REQUIRE(fs::exists(boinccmd_binary()));

  temp_dir root;
  write_file(root.path / "cobble.yaml", config());
  server s{root.path / "cobble.yaml", root.path / "server"};

  // -- short jobs: one predicted app unit each -----------------------------------------
  std::vector<std::string> shorts;
  for (int i = 0; i < short_jobs; ++i) {
    shorts.push_back("af_e2e_short_" + std::to_string(i));
    s.create_work({{"app", "testapp"},
                   {"name", shorts.back()},
                   {"command_line", short_command},
                   {"predicted_app_units", 1}});
  }
  // The wait does not change the output: it is the plain run's.
  const auto short_md5 = testapp_md5(root.path / "scratch", "--iterations 1000", std::nullopt);

  // The client stays (no --exit_when_idle): it must still be there for the long job.
  boinc_client c{"client", root.path / "client", client_options{false, 2}};
  c.prepare(s.master_url());
  c.start(s.master_url(), s.account_key);

  auto diagnostics = [&](const std::string& why) {
    s.proc->drain();
    return why + "\n" + c.log_tail(80) + "---- cobbled ----\n" + tail(s.proc->lines(), 40);
  };
  // Polls (output pumped, never a sleep) until `done` holds; fails at the test's deadline or
  // when the server or the client exits.
  auto poll_until = [&](const std::string& what, auto&& done) {
    for (;;) {
      if (steady::now() >= deadline)
        FAIL(diagnostics("timed out after " + std::to_string(budget.count()) + " s waiting for "
                         + what));
      std::vector<child_process*> pipes{s.proc.get()};
      if (c.proc)
        pipes.push_back(c.proc.get());
      cobble::test::pump_output(pipes, 250ms);
      c.collect();
      if (auto code = s.proc->wait(0ms))
        FAIL(diagnostics("cobbled exited with " + std::to_string(*code)));
      if (c.exited())
        FAIL(diagnostics("the client exited with " + std::to_string(*c.exit_code)));
      if (done())
        return;
    }
  };
  auto workunit = [&](const std::string& name) {
    return s.get("/api/projects/" + project + "/workunits/" + name);
  };

  // -- phase 1: the short jobs teach the server the host's seconds per app unit --------
  poll_until("the short jobs to be assimilated", [&] {
    for (const auto& name : shorts) {
      auto wu = workunit(name);
      if (wu["state"] == "failed")
        FAIL(diagnostics("short job " + name + " failed:\n" + wu.dump(2)));
      if (wu["state"] != "assimilated")
        return false;
    }
    return true;
  });
  const auto short_phase = std::chrono::duration<double>(steady::now() - started).count();
  // The control: every short job succeeded on this host, with the expected output.
  const auto hostid = c.hostid();
  REQUIRE(hostid != 0);
  std::vector<double> short_elapsed;
  for (const auto& name : shorts) {
    auto wu = workunit(name);
    INFO(wu.dump(2));
    REQUIRE(wu["results"].size() == 1);
    const auto& r = wu["results"][0];
    CHECK(r["outcome"] == "success");
    CHECK(r["validation"] == "valid");
    CHECK(r["exit_status"] == 0);
    CHECK(r["host"] == hostid);
    REQUIRE(r["outputs"].size() == 1);
    CHECK(r["outputs"][0]["md5"] == short_md5);
    short_elapsed.push_back(r["elapsed"].get<double>());
    // Elapsed time is wall-clock time, counted in steps of the client's one-second poll:
    // about the two seconds the app waited.
    CHECK(short_elapsed.back() > short_job_seconds / 4);
    CHECK(short_elapsed.back() < short_job_seconds + 10);
  }
  // The server's seconds_per_app_unit(H,V): the average elapsed time per job (one unit each).
  auto host = s.get("/api/projects/" + project + "/hosts/" + std::to_string(hostid));
  INFO("host: " << host.dump(2));
  REQUIRE(host["state"]["app_versions"].size() == 1);
  const auto& hav = host["state"]["app_versions"][0];
  CHECK(hav["n_success"] == short_jobs);
  REQUIRE(hav["seconds_per_app_unit"]["n"] == short_jobs);
  const double spau = hav["seconds_per_app_unit"]["avg"].get<double>();
  double mean_elapsed = 0;
  for (double e : short_elapsed)
    mean_elapsed += e / short_jobs;
  CHECK(spau == Approx(mean_elapsed));
  REQUIRE(spau > 0);

  // The spread of the host's samples (logarithms of elapsed / predicted app units): a BOINC
  // client reports no app units, so its completion times come from its own record.
  const auto& spread = hav["seconds_per_app_unit_spread"];
  REQUIRE(spread["n"] == short_jobs);
  CHECK(spread["with_app_units"] == 0);
  const double sigma = std::max(spread["log_stdev"].get<double>(), host_min_spread);

  // -- phase 2: a job predicted to take just over 120 s, which runs three times that ---
  // Past min_samples the estimate and bound are spau × predicted × exp(X × σ), X = 2 and 4
  // (docs/autoflops.md, "Clients that report no app units").
  const double bound_factor = std::exp(4 * sigma);
  const double est_factor = std::exp(2 * sigma);
  const double predicted = std::ceil(wanted_bound / (spau * bound_factor));
  const double bound = spau * predicted * bound_factor;
  const double estimate = spau * predicted * est_factor;
  const double natural = overrun * bound;
  INFO("seconds_per_app_unit " << spau << ", sigma " << sigma << ", predicted app units "
                               << predicted << ", AutoFlops bound " << bound
                               << " s, natural run time " << natural << " s");
  REQUIRE(bound > 120);
  {
    std::ostringstream cmd;
    cmd << "--iterations 1000 --wall-seconds " << std::fixed << std::setprecision(0)
        << std::ceil(natural);
    s.create_work({{"app", "testapp"},
                   {"name", long_job},
                   {"command_line", cmd.str()},
                   {"predicted_app_units", predicted}});
  }
  // A user's "update" makes the client contact the project now (the project asks for an
  // RPC within 3 s of the last one anyway); a work request goes with it even if an earlier empty
  // reply made the client back off.
  {
    auto [code, out] = c.boinccmd({"--project", s.master_url(), "update"});
    INFO("boinccmd: " << out);
    REQUIRE(code == 0);
  }
  std::string wu_xml, av_xml;
  poll_until("the client to get " + long_job, [&] {
    auto state = c.state_xml();
    auto wu = xml_element(state, "workunit", "<name>" + long_job + "</name>");
    auto av = xml_element(state, "app_version", "<app_name>testapp</app_name>");
    if (!wu || !av)
      return false;
    wu_xml = *wu;
    av_xml = *av;
    return true;
  });
  const auto dispatched = steady::now();
  // What the client got: its elapsed-time limit is rsc_fpops_bound / flops.
  INFO("client_state.xml: " << wu_xml << "\n" << av_xml);
  const double fpops_bound = xml_number(wu_xml, "rsc_fpops_bound");
  const double fpops_est = xml_number(wu_xml, "rsc_fpops_est");
  const double flops = xml_number(av_xml, "flops");
  REQUIRE(flops > 0);
  CHECK(fpops_bound / flops == Approx(bound).epsilon(1e-6));
  CHECK(fpops_est / flops == Approx(estimate).epsilon(1e-6));

  // -- phase 3: the client aborts the job at its limit and reports it ------------------
  json result;
  poll_until("the server to get the report of " + long_job, [&] {
    auto wu = workunit(long_job);
    for (const auto& r : wu["results"])
      if (r["state"] == "over" && r["host"] == hostid) {
        result = r;
        return true;
      }
    return false;
  });
  const auto reported_after = std::chrono::duration<double>(steady::now() - dispatched).count();
  const auto result_name = result["name"].get<std::string>();
  INFO(diagnostics("the long job's result: " + result.dump(2)));
  // The client's own account: "Starting task R" and, L seconds of running later, "Aborting
  // task R: exceeded elapsed time limit L (BG/FG)" (log times have whole seconds).
  std::optional<double> started_at, aborted_at, logged_limit;
  const std::regex start_line{"Starting task " + result_name + "(\\s|$)"};
  static const std::regex abort_line{"Aborting task (\\S+): exceeded elapsed time limit ([0-9.]+)"};
  for (const auto& line : c.log) {
    std::smatch m;
    if (std::regex_search(line, start_line) && !started_at)
      started_at = log_time(line);
    if (std::regex_search(line, m, abort_line) && m[1] == result_name) {
      aborted_at = log_time(line);
      logged_limit = std::stod(m[2]);
    }
  }
  REQUIRE(started_at);
  REQUIRE(aborted_at);
  REQUIRE(logged_limit);
  CHECK(*logged_limit == Approx(bound).margin(0.01));
  CHECK(*logged_limit < 12 * 3600); // not the client's 12-hour fallback
  const double ran = *aborted_at - *started_at;
  CHECK(ran >= bound - 2);
  CHECK(ran <= bound + 10); // not the app's natural run time (3 × bound)
  // The server recorded the abort: an error with the time-limit exit status, after an
  // elapsed time just past the bound (the client checks once a second). The app obeyed the
  // abort request at once, like a BOINC-API app, so the client reports the task as a compute
  // error (state 3, no output) with the elapsed time at the abort; an app that ignores the
  // request is reported as aborted (state 6) with an elapsed time of 0 before it is killed.
  CHECK(result["outcome"] == "client_error");
  CHECK(result["success"] == false);
  CHECK(result["exit_status"] == 197); // EXIT_TIME_LIMIT_EXCEEDED
  CHECK(result["client_state"] == 3);  // compute error
  const double elapsed = result["elapsed"].get<double>();
  CHECK(elapsed >= bound);
  CHECK(elapsed <= bound + 10);
  CHECK(reported_after < natural);
  std::fprintf(
    stderr,
    "AutoFlops e2e: short jobs done after %.1f s; seconds_per_app_unit %.3f s; sigma %.3f; "
    "predicted app units %.0f; bound %.2f s; client limit %.2f s; ran %.0f s "
    "(log); elapsed reported %.2f s; reported %.1f s after dispatch; natural run "
    "time %.0f s\n",
    short_phase, spau, sigma, predicted, bound, *logged_limit, ran, elapsed, reported_after,
    natural);

  // -- the log verifies after a clean stop ----------------------------------------------
  s.stop_and_verify_log();
  auto seconds = std::chrono::duration<double>(steady::now() - started).count();
  std::fprintf(stderr, "AutoFlops e2e: took %.1f s in all\n", seconds);
  INFO("took " << seconds << " s");
  CHECK(steady::now() < deadline + 30s);
}
