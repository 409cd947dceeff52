#pragma once
/// `cobble-bench site`: what the site's pages cost the project actor at scale. Builds a
/// project's state in memory (users, hosts, teams, workunits), then times the calls the
/// project answers for each page: a top list's first page and its first 10,000 ranks (what
/// the site keeps for five minutes), the account page's
/// account with its hosts, and the status page's pass. Prints pages per second of the project
/// actor's time (the page's HTTP and template work runs elsewhere and is not counted).

#include <cstddef>
#include <ostream>

namespace cobble::bench {

struct site_options {
  std::size_t users = 1'000'000;
  std::size_t hosts = 1'000'000;
  std::size_t teams = 10'000;
  std::size_t workunits = 1'000'000; ///< Two results each.
  int repeat = 5;                    ///< Calls timed per figure (the median is printed).
};

/// Runs the measurement and prints its figures to `out`.
void run_site_bench(const site_options& opts, std::ostream& out);

} // namespace cobble::bench
