/// Volunteers' accounts and teams as the web RPCs and the site make and change them: the
/// project actor's answers, what it refuses (nothing half-made), and what a restart keeps.
/// Deterministic node (node_fixture.hpp); every test ends with the replay check.

#include "../support/node_fixture.hpp"
#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "tests/support/demo_config.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <string>

using namespace cobble;

namespace {

/// The demo project with a configured user in team "Crunchers".
config::cobble_config with_team() {
  auto cfg = cobble::test::demo_config();
  cfg.projects.at(0).users.push_back({"carol", "carol@example.org", "key-carol", "Crunchers"});
  return cfg;
}

struct accounts_fixture : test::node_fixture {
  accounts_fixture() : node_fixture(options(with_team())) {}

  account_spec_ptr spec(const std::string& name, const std::string& email) {
    auto s = std::make_shared<account_spec>();
    s->name = name;
    s->email = email;
    s->passwd = "stored-form-of-" + name;
    s->country = "Norway";
    return s;
  }

  account_view_ptr create(const std::string& name, const std::string& email) {
    return ask<account_view_ptr>(project, atom::create_v, spec(name, email));
  }

  account_view_ptr by_email(const std::string& email) {
    auto q = std::make_shared<account_query>();
    q->text = email;
    return ask<account_view_ptr>(project, atom::user_v, account_query_ptr{q});
  }

  account_view_ptr update(const account_update& u) {
    return ask<account_view_ptr>(project, atom::user_v,
                                 account_update_ptr{std::make_shared<account_update>(u)});
  }

  team_list_ptr teams(const std::string& name, id_type id = 0) {
    auto q = std::make_shared<team_query>();
    q->name = name;
    q->id = id;
    return ask<team_list_ptr>(project, atom::team_v, team_query_ptr{q});
  }

  team_list_ptr make_team(const std::string& key, const std::string& name) {
    auto t = std::make_shared<team_spec>();
    t->authenticator = key;
    t->name = name;
    t->description = "We crunch.";
    return ask<team_list_ptr>(project, atom::create_v, team_spec_ptr{t});
  }

  std::size_t user_count() {
    return ask<user_list_ptr>(project, atom::list_v, atom::user_v)->size();
  }
};

} // namespace

TEST_CASE_METHOD(accounts_fixture, "a volunteer's account is made once per e-mail address",
                 "[actors][accounts]") {
  auto before = user_count();
  auto made = create("Ann", "Ann@Example.org");
  CHECK(made->user.id != 0);
  CHECK(made->user.authenticator.size() == 32);
  CHECK(made->user.passwd == "stored-form-of-Ann");
  CHECK(made->user.country == "Norway");
  CHECK(made->team == 0);
  CHECK(user_count() == before + 1);

  // Found by its address in any case, as BOINC's lookup_account.php does.
  CHECK(by_email("ann@example.ORG")->user.id == made->user.id);

  // The same address again, in another case: refused, nothing made.
  auto err = ask_error<account_view_ptr>(project, atom::create_v, spec("Ann 2", "ANN@example.org"));
  CHECK(is(err, ec::duplicate));
  CHECK(user_count() == before + 1);

  // Bad fields: refused with the reason, nothing made.
  auto empty_name = ask_error<account_view_ptr>(project, atom::create_v, spec("", "b@example.org"));
  CHECK(is(empty_name, ec::invalid_argument));
  auto control = ask_error<account_view_ptr>(project, atom::create_v,
                                             spec("Bob\n<script>", "b@example.org"));
  CHECK(is(control, ec::invalid_argument));
  auto huge = ask_error<account_view_ptr>(project, atom::create_v,
                                          spec(std::string(300, 'x'), "b@example.org"));
  CHECK(is(huge, ec::invalid_argument));
  CHECK(user_count() == before + 1);

  // An unknown address is no account.
  auto q = std::make_shared<account_query>();
  q->text = "nobody@example.org";
  CHECK(is(ask_error<account_view_ptr>(project, atom::user_v, account_query_ptr{q}),
           ec::unknown_account));
}

TEST_CASE_METHOD(accounts_fixture, "an account's owner changes it and joins and leaves teams",
                 "[actors][accounts]") {
  auto ann = create("Ann", "ann@example.org");
  auto bob = create("Bob", "bob@example.org");
  auto crunchers = teams("crunch");
  REQUIRE(crunchers->size() == 1); // the configuration's team is in the directory
  CHECK(crunchers->at(0).team.name == "Crunchers");
  CHECK(crunchers->at(0).members == 1);
  auto team_id = crunchers->at(0).team.id;

  account_update u;
  u.authenticator = ann->user.authenticator;
  u.name = "Ann L.";
  u.url = "https://ann.example.org";
  u.team = team_id;
  auto changed = update(u);
  CHECK(changed->user.name == "Ann L.");
  CHECK(changed->user.url == "https://ann.example.org");
  CHECK(changed->user.country == "Norway"); // untouched fields stay
  CHECK(changed->team == team_id);
  CHECK(teams("", team_id)->at(0).members == 2);

  // A new address with its new password hash; the old address no longer finds her.
  account_update mail;
  mail.authenticator = ann->user.authenticator;
  mail.email = "ann@example.net";
  mail.passwd = "new-stored-form";
  CHECK(update(mail)->user.passwd == "new-stored-form");
  CHECK(by_email("ann@example.net")->user.id == ann->user.id);
  auto q = std::make_shared<account_query>();
  q->text = "ann@example.org";
  CHECK(is(ask_error<account_view_ptr>(project, atom::user_v, account_query_ptr{q}),
           ec::unknown_account));

  // Refused: another account's address, a team that does not exist, an unknown key.
  account_update taken;
  taken.authenticator = ann->user.authenticator;
  taken.email = "BOB@example.org";
  CHECK(is(ask_error<account_view_ptr>(project, atom::user_v,
                                       account_update_ptr{std::make_shared<account_update>(taken)}),
           ec::duplicate));
  account_update no_team;
  no_team.authenticator = ann->user.authenticator;
  no_team.team = 999;
  CHECK(
    is(ask_error<account_view_ptr>(project, atom::user_v,
                                   account_update_ptr{std::make_shared<account_update>(no_team)}),
       ec::invalid_argument));
  account_update stranger;
  stranger.authenticator = "not-a-key";
  stranger.name = "Mallory";
  CHECK(
    is(ask_error<account_view_ptr>(project, atom::user_v,
                                   account_update_ptr{std::make_shared<account_update>(stranger)}),
       ec::unknown_account));
  CHECK(by_email("ann@example.net")->user.name == "Ann L."); // nothing half-done

  // Leaving: team 0.
  account_update leave;
  leave.authenticator = ann->user.authenticator;
  leave.team = id_type{0};
  CHECK(update(leave)->team == 0);
  CHECK(teams("", team_id)->at(0).members == 1);
  (void)bob;
}

TEST_CASE_METHOD(accounts_fixture, "a volunteer makes a team, joins it, and the name stays theirs",
                 "[actors][accounts]") {
  auto ann = create("Ann", "ann@example.org");
  auto made = make_team(ann->user.authenticator, "Night Owls");
  REQUIRE(made->size() == 1);
  CHECK(made->at(0).team.name == "Night Owls");
  CHECK(made->at(0).team.founder == ann->user.id);
  CHECK(made->at(0).founder_name == "Ann");
  CHECK(made->at(0).members == 1);
  CHECK(by_email("ann@example.org")->team == made->at(0).team.id);

  auto bob = create("Bob", "bob@example.org");
  auto t = std::make_shared<team_spec>();
  t->authenticator = bob->user.authenticator;
  t->name = "night OWLS";
  CHECK(is(ask_error<team_list_ptr>(project, atom::create_v, team_spec_ptr{t}), ec::duplicate));
  t->name = "";
  CHECK(
    is(ask_error<team_list_ptr>(project, atom::create_v, team_spec_ptr{t}), ec::invalid_argument));
  t->name = "Larks";
  t->authenticator = "nobody";
  CHECK(
    is(ask_error<team_list_ptr>(project, atom::create_v, team_spec_ptr{t}), ec::unknown_account));
  CHECK(teams("")->size() == 2); // Crunchers and Night Owls only

  // A new account naming a team joins it (any case); an unknown team name is ignored.
  auto s = spec("Cy", "cy@example.org");
  auto s2 = std::make_shared<account_spec>(*s);
  s2->team = "NIGHT owls";
  auto cy = ask<account_view_ptr>(project, atom::create_v, account_spec_ptr{s2});
  CHECK(cy->team == made->at(0).team.id);
  CHECK(cy->user.team == "Night Owls");
  auto s3 = std::make_shared<account_spec>(*spec("Di", "di@example.org"));
  s3->team = "No Such Team";
  CHECK(ask<account_view_ptr>(project, atom::create_v, account_spec_ptr{s3})->team == 0);
}

TEST_CASE_METHOD(accounts_fixture, "accounts, passwords and teams survive a restart",
                 "[actors][accounts]") {
  auto ann = create("Ann", "ann@example.org");
  auto team = make_team(ann->user.authenticator, "Night Owls");
  stop();
  start();
  auto again = by_email("ANN@example.org");
  CHECK(again->user.authenticator == ann->user.authenticator);
  CHECK(again->user.passwd == "stored-form-of-Ann");
  CHECK(again->team == team->at(0).team.id);
  CHECK(teams("owl")->at(0).members == 1);
  // The name index was rebuilt too.
  auto t = std::make_shared<team_spec>();
  t->authenticator = ann->user.authenticator;
  t->name = "NIGHT OWLS";
  CHECK(is(ask_error<team_list_ptr>(project, atom::create_v, team_spec_ptr{t}), ec::duplicate));
}
