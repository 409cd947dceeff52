#pragma once
/// The XML of BOINC's web RPCs (get_project_config.php, create_account.php,
/// lookup_account.php, am_get_info.php, am_set_info.php, show_user.php, team_lookup.php,
/// create_team.php) as BOINC's own server writes them and the 7.20 client and account managers
/// read them, and the reading of their query strings. Pure functions: net/web_rpc.cpp serves
/// them. docs/web.md lists every RPC with its parameters and errors.
#include "actors/messages.hpp"
#include "actors/records.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cobble::net {

/// BOINC's error numbers (lib/error_numbers.h) the web RPCs answer with.
namespace web_error_num {
inline constexpr int generic = -1;        ///< BOINC's newest server answers some errors so
inline constexpr int xml_parse = -112;    ///< ERR_XML_PARSE
inline constexpr int not_found = -136;    ///< ERR_DB_NOT_FOUND: no such account, team, user
inline constexpr int not_unique = -137;   ///< ERR_DB_NOT_UNIQUE: e-mail or team name taken
inline constexpr int project_down = -183; ///< ERR_PROJECT_DOWN
inline constexpr int bad_user_name = -188;
inline constexpr int retry = -199; ///< ERR_RETRY: busy (too many password checks waiting)
inline constexpr int bad_email = -205;
inline constexpr int bad_passwd = -206;
inline constexpr int creation_disabled = -208;
inline constexpr int bad_invitation = -209; ///< What 7.x servers answer a wrong code with
} // namespace web_error_num

/// `<error><error_num>N</error_num><error_msg>MSG</error_msg></error>`: every RPC's error.
std::string web_error_xml(int num, std::string_view msg);

/// What get_project_config.php tells a client about the project.
struct project_config_info {
  std::string name;       ///< The long name.
  std::string master_url; ///< With its trailing '/'.
  int min_passwd_length = 6;
  bool creation_disabled = false;   ///< Closed, or only with an invitation code.
  bool invitation_required = false; ///< `<invite_code_required/>` (creation_disabled too).
  std::string terms_of_use{};
  /// (platform, plan class) of every version not deprecated, each once.
  std::vector<std::pair<std::string, std::string>> platforms{};
};

/// The (platform, plan class) pairs of `apps`' versions not deprecated, each once, sorted.
std::vector<std::pair<std::string, std::string>> platforms_of(const std::vector<app_rec>& apps);

/// `<project_config>` as BOINC's get_project_config.php writes it.
std::string project_config_xml(const project_config_info& info);

/// `<account_out><authenticator>KEY</authenticator></account_out>`.
std::string account_out_xml(std::string_view authenticator);

/// `<account_out><success/></account_out>`: lookup_account.php without a password, when the
/// account exists.
std::string account_exists_xml();

/// The public cross-project id of an account: md5(cross_project_id + e-mail) in hex, as BOINC
/// exports it (empty when the account has no cross_project_id).
std::string public_cpid(const user_rec& u);

/// `<am_get_info_reply>` for the account's owner (name, country, URL and postal code
/// URL-encoded, as BOINC writes them).
std::string am_get_info_xml(const account_view& a, bool founder);

/// `<am_set_info_reply><success/></am_set_info_reply>`.
std::string am_set_info_xml();

/// show_user.php's `<user>`; with `hosts`, the account's hosts too (show_user.php?auth=).
std::string user_xml(const account_view& a, bool hosts);

/// team_lookup.php's `<team>` of one team.
std::string team_xml(const team_view& t);

/// team_lookup.php's `<teams>` of several.
std::string teams_xml(const std::vector<team_view>& teams);

/// `<create_team_reply><success/><team_id>N</team_id></create_team_reply>`.
std::string create_team_xml(id_type team);

/// PHP's urlencode(): letters, digits and `-_.` stay, a space is `+`, the rest `%XX`.
std::string php_urlencode(std::string_view text);

/// A web RPC's query string (after '?') read as a form: `+` is a space, `%XX` a byte; a
/// repeated key keeps its first value. nullopt on a malformed escape.
std::optional<std::map<std::string, std::string>> parse_form(std::string_view query);

/// Whether `email` has the form BOINC accepts (something@something.something, no spaces or
/// control characters, at most 254 bytes).
bool plausible_email(std::string_view email);

} // namespace cobble::net
