/// `cobble-sim run` as a user runs it: the figures table on stdout, the HTML report opened in
/// headless Chromium (Debian's chromium package) where a script in the page measures every
/// chart, and clear errors for a bad scenario.

#include "../../support/process.hpp"
#include "../../support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <sstream>

using namespace cobble;
using namespace std::chrono_literals;

namespace {

const std::string sim = std::string(COBBLE_BINARY_DIR) + "/tools/sim/cobble-sim";
const std::string scenarios = std::string(COBBLE_SOURCE_DIR) + "/tools/sim/scenarios/";

struct outcome {
  int rc = -1;
  std::string out;
};

outcome
run(std::vector<std::string> argv, std::chrono::milliseconds limit = 120s, bool merge = true) {
  test::child_process p(std::move(argv), merge);
  outcome o;
  while (p.read_line(limit))
    ;
  for (const auto& l : p.lines())
    o.out += l + "\n";
  o.rc = p.wait(limit).value_or(-1);
  return o;
}

} // namespace

TEST_CASE("cobble-sim run prints the figures and writes a report that Chromium renders",
          "[sim][report]") {
  test::temp_dir dir{"simreport"};
  auto html = (dir.path() / "out.html").string();
  auto r = run({sim, "run", "-q", scenarios + "example1.yaml", "--report", html});
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("RESOURCE") != std::string::npos);
  CHECK(std::regex_search(r.out, std::regex("\\nNVIDIA +0\\.0")));
  CHECK(std::regex_search(r.out, std::regex("\\na +0\\.500 +0\\.5")));
  CHECK(r.out.find("report: " + html) != std::string::npos);
  {
    std::ifstream in(html);
    std::stringstream ss;
    ss << in.rdbuf();
    auto page = ss.str();
    CHECK(page.find("<svg id='timeline'") != std::string::npos);
    CHECK(page.find("http") == page.find("http://www.w3.org/2000/svg")); // nothing external
  }
  auto dom = run({"chromium", "--headless", "--no-sandbox", "--disable-gpu", "--log-level=3",
                  "--user-data-dir=" + (dir.path() / "chromium").string(), "--dump-dom",
                  "file://" + html},
                 120s, false);
  INFO(dom.out.substr(0, 2000));
  REQUIRE(dom.rc == 0);
  // The page's own check: four charts (timeline, CPU share, GPU share, debts), each with a
  // real size and every shape drawn.
  CHECK(dom.out.find("charts=4") != std::string::npos);
  std::regex line(
    "(timeline|share-CPU|share-NVIDIA|debts) (\\d+)x(\\d+) shapes=(\\d+) drawn=(\\d+)");
  int charts = 0;
  for (auto it = std::sregex_iterator(dom.out.begin(), dom.out.end(), line);
       it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    INFO(m.str());
    CHECK(std::stoi(m[2]) > 800);
    CHECK(std::stoi(m[3]) > 50);
    CHECK(std::stoi(m[4]) > 0);
    CHECK(m[4] == m[5]);
    ++charts;
  }
  CHECK(charts == 4);
}

TEST_CASE("cobble-sim names the file, line and key of a bad scenario", "[sim][report]") {
  test::temp_dir dir{"simbad"};
  auto file = (dir.path() / "bad.yaml").string();
  std::ofstream(file) << "duration: 2d\nprojects:\n  - name: a\n    shares: 100\n"
                         "    apps: [{name: x}]\nhosts: [{ncpus: 1}]\n";
  auto r = run({sim, "run", file});
  CHECK(r.rc == 2);
  CHECK(r.out.find(file + ":4: projects[0].shares: unknown key 'shares'") != std::string::npos);
  auto missing = run({sim, "run", (dir.path() / "nope.yaml").string()});
  CHECK(missing.rc == 2);
  CHECK(missing.out.find("cannot read the file") != std::string::npos);
  auto usage = run({sim});
  CHECK(usage.rc == 2);
  auto unknown = run({sim, "run", file, "--no-such-flag"});
  CHECK(unknown.rc == 2);
  CHECK(unknown.out.find("--no-such-flag") != std::string::npos);
  CHECK(run({sim, "run", "--help"}).rc == 0);
  auto good = scenarios + "example1.yaml";
  auto scheme = run({sim, "run", good, "--server", "ftp://127.0.0.1:1", "--token", "t"});
  CHECK(scheme.rc == 2);
  CHECK(scheme.out.find("--server must be an http:// URL") != std::string::npos);
  auto no_token = run({sim, "run", good, "--server", "http://127.0.0.1:1"});
  CHECK(no_token.rc == 2);
  CHECK(no_token.out.find("needs the admin token") != std::string::npos);
  auto stray = run({sim, "run", good, "--token", "t"});
  CHECK(stray.rc == 2);
}
