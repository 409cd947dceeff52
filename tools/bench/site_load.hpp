#pragma once

/// cobble-bench site-load: the volunteer site's pages through HTTP on a running cobbled, alone
/// and while the scheduler is under load. This part joins the site as a volunteer does (the
/// join form, its form token and the session cookie it sets) and lists the pages the page
/// generator asks for; the load itself is load.hpp's generator with load_options::pages.

#include <cstdint>
#include <string>
#include <vector>

namespace cobble::bench {

/// A volunteer who joined on the site.
struct site_volunteer {
  std::string cookie;      ///< The Cookie header of their requests (session and form token).
  std::string account_key; ///< Read from their account page, as a volunteer copies it.
};

/// Makes an account through `/PROJECT/create_account` at 127.0.0.1:`port` and returns its
/// session; throws std::runtime_error (with the page's status) when the site refuses.
site_volunteer join_site(std::uint16_t port, const std::string& project, const std::string& name,
                         const std::string& email, const std::string& password);

/// A page as the volunteer sees it (GET with their cookie): status and body.
struct site_page {
  int status = 0;
  std::string body;
};
site_page get_page(std::uint16_t port, const std::string& target, const std::string& cookie);

/// The ids in the `host?id=N` links of a page, in order.
std::vector<std::uint64_t> host_links(const std::string& body);

/// One kind of page in the mix: its name, its weight and the targets it cycles through.
struct page_kind {
  std::string name;
  unsigned weight = 1;
  std::vector<std::string> targets;
};

/// The site's pages as the benchmark asks for them: the volunteer's account page, the top
/// lists (users, hosts and teams, by recent and total credit, pages deep into the ranking),
/// a computer's page, the home page and the status page.
std::vector<page_kind>
site_pages(const std::string& project, std::uint64_t host_id, std::uint64_t ranked);

/// The targets of a mix, each kind repeated by its weight and interleaved.
std::vector<std::string> page_mix(const std::vector<page_kind>& kinds);

} // namespace cobble::bench
