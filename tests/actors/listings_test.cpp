/// Tests of actors/listings: the operator pages' lists of workunits and results, filtered by
/// state, app and host, a page at a time in id order, each page looking at a bounded number
/// of workunits.

#include "actors/error.hpp"
#include "actors/project_views.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace cobble;

namespace {

result_rec in_progress_on(id_type host) {
  result_rec r;
  r.state = result_state::in_progress;
  r.host = host;
  r.sent = 1;
  return r;
}

result_rec timed_out_on(id_type host) {
  auto r = in_progress_on(host);
  r.state = result_state::over;
  r.outcome = result_outcome::no_reply;
  return r;
}

/// Apps "even" (1) and "odd" (2); workunits 1..n, each of its id's parity's app, with two
/// results: the first in progress on host 1 (host 2 for every tenth workunit), the second
/// unsent, or timed out on host 3 when the id is a multiple of 3. Plus a sequence's workunit
/// with a sparse id.
project_state project_with(id_type n) {
  project_state ps;
  for (std::uint32_t id : {1U, 2U}) {
    app_rec a;
    a.id = id;
    a.name = id == 1 ? "even" : "odd";
    ps.apps.push_back(a);
  }
  auto add = [&ps](id_type id) {
    workunit_rec wu;
    wu.id = id;
    wu.name = "wu" + std::to_string(id);
    wu.app = id % 2 == 0 ? 1 : 2;
    wu.results.push_back(in_progress_on(id % 10 == 0 ? 2 : 1));
    wu.results.push_back(id % 3 == 0 ? timed_out_on(3) : result_rec{});
    if (id % 5 == 0)
      wu.state = wu_state::failed;
    ps.workunits[id] = wu;
  };
  for (id_type id = 1; id <= n; ++id)
    add(id);
  add(id_type{1} << 52);
  return ps;
}

std::vector<std::string> names(const listing_page& p) {
  std::vector<std::string> out;
  for (const auto& r : p.results)
    out.push_back(r.name);
  for (const auto& w : p.workunits)
    out.push_back(w.wu.name);
  return out;
}

listing_page page_of(const project_state& ps, const listing_query& q) {
  auto page = listing_of(ps, q);
  REQUIRE(page);
  return std::move(*page);
}

} // namespace

TEST_CASE("results are listed in order, page after page, to the end", "[listings]") {
  auto ps = project_with(4);
  listing_query q;
  q.limit = 3;
  auto first = page_of(ps, q);
  CHECK(names(first) == std::vector<std::string>{"wu1_0", "wu1_1", "wu2_0"});
  REQUIRE(first.next);
  CHECK(first.apps == std::vector<std::string>{"even", "odd"});
  CHECK(first.results[0].wu_name == "wu1");
  CHECK(first.results[0].app == "odd");
  CHECK(first.results[0].rec.host == 1);
  q.after = *first.next;
  auto second = page_of(ps, q);
  CHECK(names(second) == std::vector<std::string>{"wu2_1", "wu3_0", "wu3_1"});
  q.after = *second.next;
  auto third = page_of(ps, q);
  // The sequence's workunit (a sparse id) comes after the dense ones.
  CHECK(
    names(third)
    == std::vector<std::string>{"wu4_0", "wu4_1", "wu" + std::to_string(id_type{1} << 52) + "_0"});
  q.after = *third.next;
  auto last = page_of(ps, q);
  CHECK(names(last).size() == 1);
  CHECK_FALSE(last.next);
  CHECK_FALSE(last.budget_spent);
}

TEST_CASE("results are filtered by state in words, app and host", "[listings]") {
  auto ps = project_with(30);
  listing_query q;
  q.state = "timed out";
  auto timed_out = page_of(ps, q);
  CHECK(timed_out.results.size() == 10); // workunits 3, 6, ..., 30
  for (const auto& r : timed_out.results)
    CHECK(result_words(r.rec) == std::string{"timed out"});
  q.app = "odd";
  CHECK(names(page_of(ps, q))
        == std::vector<std::string>{"wu3_1", "wu9_1", "wu15_1", "wu21_1", "wu27_1"});
  listing_query on_host;
  on_host.host = 2;
  CHECK(names(page_of(ps, on_host)) == std::vector<std::string>{"wu10_0", "wu20_0", "wu30_0"});
  on_host.state = "unsent";
  CHECK(page_of(ps, on_host).results.empty());

  // Every phrase result_words() has is a state to filter by, and nothing else is.
  for (auto s : result_states()) {
    listing_query ok;
    ok.state = std::string{s};
    CHECK(listing_of(ps, ok));
  }
  listing_query bad;
  bad.state = "lost";
  auto refused = listing_of(ps, bad);
  REQUIRE_FALSE(refused);
  CHECK_THAT(describe(refused.error()), Catch::Contains("no result state 'lost'"));
  bad.state.clear();
  bad.app = "nope";
  CHECK_FALSE(listing_of(ps, bad));
}

TEST_CASE("a rare filter is searched a budget of workunits at a time", "[listings]") {
  auto ps = project_with(100);
  listing_query q;
  q.host = 2; // workunits 10, 20, ..., 100
  q.budget = 15;
  q.limit = 50;
  std::vector<std::string> found;
  int pages = 0;
  for (;;) {
    auto page = page_of(ps, q);
    ++pages;
    CHECK(page.looked_at <= 15);
    for (const auto& n : names(page))
      found.push_back(n);
    if (!page.next)
      break;
    CHECK(page.budget_spent);
    q.after = *page.next;
  }
  CHECK(found.size() == 10);
  CHECK(found.front() == "wu10_0");
  CHECK(found.back() == "wu100_0");
  CHECK(pages == 7); // 101 workunits, 15 a page
}

TEST_CASE("workunits are listed by state and app, resuming after the last", "[listings]") {
  auto ps = project_with(30);
  listing_query q;
  q.what = listing_query::of::workunits;
  q.state = "failed";
  q.limit = 4;
  auto first = page_of(ps, q);
  CHECK(names(first) == std::vector<std::string>{"wu5", "wu10", "wu15", "wu20"});
  REQUIRE(first.next);
  q.after = *first.next;
  auto second = page_of(ps, q);
  CHECK(names(second) == std::vector<std::string>{"wu25", "wu30"});
  CHECK_FALSE(second.next);

  q.after = {};
  q.app = "even";
  CHECK(names(page_of(ps, q)) == std::vector<std::string>{"wu10", "wu20", "wu30"});
  q.state = "lost";
  CHECK_FALSE(listing_of(ps, q));
}

TEST_CASE("one result by its reference, for a host's finished list", "[listings]") {
  auto ps = project_with(3);
  auto row = result_row_of(ps, {3, 1});
  REQUIRE(row);
  CHECK(row->name == "wu3_1");
  CHECK(row->app == "odd");
  CHECK(result_words(row->rec) == std::string{"timed out"});
  CHECK_FALSE(result_row_of(ps, {3, 2}));
  CHECK_FALSE(result_row_of(ps, {99, 0}));
}
