/// The design's examples (tools/sim/scenarios), each run in-process in virtual time and
/// checked against its target behaviour within a stated tolerance after a warm-up. Virtual
/// durations are shorter than the design's (20 days for its year) to keep the suite fast.

#include "tools/sim/emulator.hpp"

#include <catch2/catch.hpp>

using namespace cobble::sim;

namespace {

constexpr double day = 86400;

run_result run_example(const std::string& name) {
  auto sc = load_scenario(std::string(COBBLE_SOURCE_DIR) + "/tools/sim/scenarios/" + name);
  auto link = in_process_link(sc);
  return run_scenario(sc, *link);
}

} // namespace

TEST_CASE("example 1: CPU 100% B, GPU 75% A / 25% B, equal total processing", "[sim][examples]") {
  auto r = run_example("example1.yaml");
  const int a = 0, b = 1, cpu = 0, gpu = 1;
  // After a 2-day warm-up, within 0.05 of each target.
  CHECK(r.share(b, cpu, 2 * day, r.duration) == Approx(1.0).margin(0.01));
  CHECK(r.share(a, gpu, 2 * day, r.duration) == Approx(0.75).margin(0.05));
  CHECK(r.share(b, gpu, 2 * day, r.duration) == Approx(0.25).margin(0.05));
  CHECK(r.flops_share(a, 2 * day, r.duration) == Approx(0.5).margin(0.05));
  CHECK(r.fig.overall.idle_fraction < 0.01);
  CHECK(r.fig.overall.wasted_fraction == 0);
}

TEST_CASE("example 2: after A's high-priority job, B gets the CPU as long as A had it",
          "[sim][examples]") {
  auto r = run_example("example2.yaml");
  const int a = 0, b = 1, cpu = 0;
  // A's 20-day job runs alone (high priority) and meets its deadline.
  CHECK(r.share(a, cpu, 0.5 * day, 19.5 * day) > 0.97);
  CHECK(r.fig.projects[0].deadlines_missed == 0);
  // Then B has the CPU for about 20 days (tolerance: a day at either end)...
  CHECK(r.share(b, cpu, 21 * day, 39 * day) > 0.95);
  // ...and after that they share it evenly (within 0.15 over the last 4 days).
  CHECK(r.share(a, cpu, 41 * day, 45 * day) == Approx(0.5).margin(0.15));
}

TEST_CASE("example 2, variation: C attached when A's job ends shares 50/50 with B at once",
          "[sim][examples]") {
  auto r = run_example("example2c.yaml");
  const int a = 0, b = 1, c = 2, cpu = 0;
  CHECK(r.share(a, cpu, 0.5 * day, 19.5 * day) > 0.97);
  // From half a day after C attaches: B and C within 0.1 of half each, A (overworked) none.
  CHECK(r.share(b, cpu, 20.5 * day, 30 * day) == Approx(0.5).margin(0.1));
  CHECK(r.share(c, cpu, 20.5 * day, 30 * day) == Approx(0.5).margin(0.1));
  CHECK(r.share(a, cpu, 20.5 * day, 30 * day) < 0.05);
}

TEST_CASE("example 3: B's new GPU app shares the GPU 50/50 with A at once", "[sim][examples]") {
  auto r = run_example("example3.yaml");
  const int a = 0, b = 1, gpu = 1;
  CHECK(r.share(a, gpu, 0, 10 * day) > 0.99);
  // B asks for GPU work again within its backoff (at most a day); from then on the GPU is
  // shared evenly (within 0.1).
  CHECK(r.share(b, gpu, 11 * day, 20 * day) == Approx(0.5).margin(0.1));
}

TEST_CASE("CPU scheduling: two CPUs, 75/25: one CPU always on A, the other alternating",
          "[sim][examples]") {
  auto r = run_example("cpu_sched.yaml");
  const int a = 0, b = 1, cpu = 0;
  const double from = 1 * day;
  CHECK(r.share(a, cpu, from, r.duration) == Approx(0.75).margin(0.03));
  CHECK(r.share(b, cpu, from, r.duration) == Approx(0.25).margin(0.03));
  // Time after the warm-up during which no CPU runs A: under 1%.
  std::vector<std::pair<double, double>> spans;
  for (const auto& s : r.timeline)
    if (s.rsc == cpu && s.project == a)
      spans.emplace_back(std::max(s.start, from), s.end);
  std::sort(spans.begin(), spans.end());
  double covered = 0, reach = from;
  for (auto [s, e] : spans) {
    if (e <= reach)
      continue;
    covered += e - std::max(s, reach);
    reach = e;
  }
  CHECK(covered / (r.duration - from) > 0.99);
  // B does run: the second CPU alternates.
  long b_segments = 0;
  for (const auto& s : r.timeline)
    b_segments += s.project == b && s.start >= from;
  CHECK(b_segments >= 5);
}
