/// Tests of project_logic::change_apps (actors/project_apps.cpp): apps, signed versions,
/// deprecation and code-signing keys added while the server runs, with real RSA signatures.

#include "actors/code_sign.hpp"
#include "actors/error.hpp"
#include "actors/project_logic.hpp"
#include "config/config.hpp"
#include "tests/support/demo_config.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

using namespace cobble;

namespace {

constexpr time_us t0 = 1'700'000'000LL * us_per_second;
constexpr const char* linux_platform = "x86_64-pc-linux-gnu";

code_sign_key_pair new_keys() {
  auto keys = generate_code_sign_keys();
  REQUIRE(keys);
  return *keys;
}

/// A demo project (testapp, its configured version 100 for Linux) and a key pair the
/// operator holds offline.
struct apps_fixture {
  project_logic logic;
  time_us now = t0;
  code_sign_key_pair keys = new_keys();

  std::vector<event> configured = logic.configure(cobble::test::demo_config().projects.at(0), now);

  caf::expected<std::vector<event>> change(const app_change& c, app_changed& out) {
    now += us_per_second;
    return logic.change_apps(c, now, out);
  }

  /// Adds `public_key` (signed with `signature`, if any): what it decided.
  caf::expected<std::vector<event>>
  add_key(const std::string& public_key, const std::string& signature, app_changed& out) {
    app_change c;
    c.what = app_change::op::add_key;
    c.by = "admin";
    c.public_key = public_key;
    c.signature = signature;
    return change(c, out);
  }

  void add_first_key() {
    app_changed out;
    auto events = add_key(keys.public_key, {}, out);
    REQUIRE(events);
    REQUIRE(events->size() == 1);
    REQUIRE(out.changed);
  }

  /// A file of `n` bytes named `name` whose MD5 is `md5`, signed with `private_key`.
  static app_file_rec file(const std::string& name, const std::string& md5,
                           const std::string& private_key, bool main_program = false) {
    app_file_rec f;
    f.name = name;
    f.nbytes = 1000;
    f.md5 = md5;
    auto sig = sign_md5(private_key, md5);
    REQUIRE(sig);
    f.signature = *sig;
    f.executable = main_program;
    f.main_program = main_program;
    return f;
  }

  /// testapp `num` for Linux: a main program and a data file, signed with the fixture's key.
  app_version_rec version(int num) const {
    app_version_rec v;
    v.platform = linux_platform;
    v.version_num = num;
    v.api_version = "7.22.0";
    auto n = std::to_string(num);
    auto md5 = std::string(32 - n.size(), 'a') + n; // other bytes for every number
    v.files = {file("testapp_" + n, md5, keys.private_key, true),
               file("params_" + n + ".xml", "fedcba9876543210fedcba9876543210", keys.private_key)};
    return v;
  }

  caf::expected<std::vector<event>>
  add_version(app_version_rec v, app_changed& out, const std::string& app = "testapp") {
    app_change c;
    c.what = app_change::op::add_version;
    c.by = "admin";
    c.app = app;
    c.version = std::move(v);
    return change(c, out);
  }

  /// The project's key, then version `num` of testapp: the version's id.
  std::uint32_t keyed_version(int num) {
    add_first_key();
    app_changed out;
    REQUIRE(add_version(version(num), out));
    REQUIRE(out.changed);
    return out.id;
  }

  caf::expected<std::vector<event>>
  deprecate(std::uint32_t version_id, bool deprecated, app_changed& out) {
    app_change c;
    c.what = app_change::op::deprecate_version;
    c.by = "admin";
    c.app = "testapp";
    c.version_id = version_id;
    c.deprecated = deprecated;
    return change(c, out);
  }

  /// Workunits of testapp with these names.
  void create_work(std::initializer_list<const char*> names) {
    work_batch b;
    b.submitter = "admin";
    for (const auto* name : names) {
      work_spec w;
      w.app = "testapp";
      w.name = name;
      b.items.push_back(w);
    }
    work_created created;
    REQUIRE(logic.create_work(b, now, created));
  }

  /// A work request of a newly registered Linux host (1 CPU, 1 GFLOPS) for one second.
  job_request request() {
    host_info_rec info;
    info.p_ncpus = 1;
    info.p_fpops = 1e9;
    auto e = logic.register_host(logic.state.users.begin()->first, info, now);
    job_request r;
    r.host = std::get<ev::host_registered>(e.data).id;
    r.info = info;
    r.platform = linux_platform;
    r.requests.resize(n_resource_types);
    r.requests[0] = resource_request{1, 0, 0};
    return r;
  }

  const app_version_rec* held(std::uint32_t id) const {
    for (const auto& a : logic.state.apps)
      for (const auto& v : a.versions)
        if (v.id == id)
          return &v;
    return nullptr;
  }
};

/// The state a replay of `events` reaches.
project_state replayed(const std::vector<event>& events) {
  project_logic fresh;
  for (const auto& e : events)
    fresh.apply_delivered(e);
  return fresh.state;
}

void append(std::vector<event>& log, const caf::expected<std::vector<event>>& events) {
  REQUIRE(events);
  log.insert(log.end(), events->begin(), events->end());
}

} // namespace

TEST_CASE("a signed version is added once and replays to the same state", "[project_apps]") {
  apps_fixture f;
  auto log = f.configured;
  app_changed out;
  append(log, f.add_key(f.keys.public_key, {}, out));
  REQUIRE(f.logic.state.code_sign_keys.size() == 1);
  CHECK(f.logic.state.code_sign_keys.back().signature.empty());

  auto v = f.version(101);
  auto added = f.add_version(v, out);
  append(log, added);
  REQUIRE(added->size() == 1);
  CHECK(out.changed);
  const auto* held = f.held(out.id);
  REQUIRE(held != nullptr);
  CHECK(held->version_num == 101);
  CHECK(held->files.size() == 2);
  CHECK(held->files[0].open_name == held->files[0].name); // an empty open name is the name
  CHECK_FALSE(held->deprecated);
  CHECK(out.id == 2); // after the configured version 100

  SECTION("the same version again is a retry: its id, nothing decided") {
    app_changed again;
    auto retry = f.add_version(v, again);
    REQUIRE(retry);
    CHECK(retry->empty());
    CHECK_FALSE(again.changed);
    CHECK(again.id == out.id);
  }
  SECTION("a version number not above the last of its platform is refused") {
    auto lower = f.version(100);
    app_changed no;
    auto refused = f.add_version(lower, no);
    REQUIRE_FALSE(refused);
    CHECK(is(refused.error(), ec::duplicate));
    CHECK_THAT(describe(refused.error()), Catch::Contains("above 101"));
  }
  SECTION("another plan class numbers its versions apart") {
    auto cuda = f.version(50);
    cuda.plan_class = "cuda";
    cuda.resource = 1;
    cuda.coproc_count = 1;
    for (auto& file : cuda.files)
      file.name = "cuda_" + file.name;
    app_changed gpu;
    // A plan class must be defined before a version names it, and be for the version's
    // resource.
    auto undefined = f.add_version(cuda, gpu);
    REQUIRE_FALSE(undefined);
    CHECK(is(undefined.error(), ec::invalid_argument));
    CHECK_THAT(describe(undefined.error()), Catch::Contains("plan class 'cuda' is not defined"));
    config::plan_class_config pc;
    pc.name = "cuda";
    f.logic.plan_classes = {pc};
    auto wrong = f.add_version(cuda, gpu);
    REQUIRE_FALSE(wrong);
    CHECK_THAT(describe(wrong.error()),
               Catch::Contains("plan class cuda is for CPUs, the version for NVIDIA"));
    f.logic.plan_classes[0].gpu_type = "nvidia";
    append(log, f.add_version(cuda, gpu));
    CHECK(gpu.changed);
    CHECK(gpu.id == 3);
  }
  SECTION("a file name is never reused for other bytes") {
    auto next = f.version(102);
    next.files[1] = apps_fixture::file(v.files[1].name, "00000000000000000000000000000000",
                                       f.keys.private_key);
    app_changed no;
    auto refused = f.add_version(next, no);
    REQUIRE_FALSE(refused);
    CHECK(is(refused.error(), ec::duplicate));
    CHECK_THAT(describe(refused.error()), Catch::Contains(v.files[1].name));
  }
  SECTION("the same file in a later version is shared, not refused") {
    auto next = f.version(102);
    next.files[1] = v.files[1];
    app_changed yes;
    append(log, f.add_version(next, yes));
    CHECK(yes.changed);
  }
  CHECK(replayed(log) == f.logic.state);
}

TEST_CASE("versions with bad files or signatures are refused whole", "[project_apps]") {
  apps_fixture f;
  app_changed out;
  SECTION("before the project has a key") {
    auto refused = f.add_version(f.version(101), out);
    REQUIRE_FALSE(refused);
    CHECK(is(refused.error(), ec::conflict));
    CHECK_THAT(describe(refused.error()), Catch::Contains("no code-signing key"));
  }
  SECTION("with a key") {
    f.add_first_key();
    auto before = f.logic.state;
    auto v = f.version(101);
    std::string expect;
    auto code = ec::invalid_argument;
    SECTION("signed with another key") {
      auto other = new_keys();
      v.files[0] = apps_fixture::file(v.files[0].name, v.files[0].md5, other.private_key, true);
      expect = "does not verify";
    }
    SECTION("a signature of other bytes") {
      v.files[0].signature = v.files[1].signature;
      expect = "does not verify";
    }
    SECTION("no signature") {
      v.files[1].signature.clear();
      expect = "no signature";
    }
    SECTION("two main programs") {
      v.files[1].main_program = true;
      expect = "2 are";
    }
    SECTION("no main program") {
      v.files[0].main_program = false;
      expect = "0 are";
    }
    SECTION("a file name that leaves its directory") {
      v.files[0].name = "../testapp";
      expect = "not a plain file name";
    }
    SECTION("an upper-case MD5") {
      v.files[1].md5 = "FEDCBA9876543210FEDCBA9876543210";
      expect = "lower-case hex";
    }
    SECTION("a GPU version without a GPU count") {
      v.resource = 1;
      expect = "coproc_count";
    }
    SECTION("an input's name") {
      v.files[1].name = "in_fedcba9876543210fedcba9876543210";
      expect = "workunit input";
    }
    SECTION("a signature that is not one") {
      v.files[1].signature = "00\n.\n";
      expect = "not a BOINC signature";
    }
    SECTION("the anonymous platform") {
      v.platform = "anonymous";
      expect = "BOINC platform";
    }
    SECTION("an unknown app") {
      auto refused = f.add_version(v, out, "nosuchapp");
      REQUIRE_FALSE(refused);
      CHECK(is(refused.error(), ec::unknown_app));
      CHECK(f.logic.state == before);
      return;
    }
    auto refused = f.add_version(v, out);
    REQUIRE_FALSE(refused);
    CHECK(is(refused.error(), code));
    CHECK_THAT(describe(refused.error()), Catch::Contains(expect));
    CHECK(f.logic.state == before);
  }
}

TEST_CASE("a deprecated version can be offered again", "[project_apps]") {
  apps_fixture f;
  auto id = f.keyed_version(101);
  app_changed out;

  auto off = f.deprecate(id, true, out);
  REQUIRE(off);
  CHECK(off->size() == 1);
  CHECK(out.changed);
  CHECK(f.held(id)->deprecated);
  auto again = f.deprecate(id, true, out);
  REQUIRE(again);
  CHECK(again->empty());
  CHECK_FALSE(out.changed);

  REQUIRE(f.deprecate(id, false, out));
  CHECK(out.changed);
  CHECK_FALSE(f.held(id)->deprecated);

  auto unknown = f.deprecate(99, true, out);
  REQUIRE_FALSE(unknown);
  CHECK(is(unknown.error(), ec::unknown_app));
}

TEST_CASE("a new code-signing key must be signed with the current one", "[project_apps]") {
  apps_fixture f;
  f.add_first_key();
  auto next = new_keys();
  app_changed out;

  SECTION("the current key again is a retry") {
    auto retry = f.add_key("\n" + f.keys.public_key + "\n\n", {}, out);
    REQUIRE(retry);
    CHECK(retry->empty());
    CHECK_FALSE(out.changed);
    CHECK(out.id == 1);
    // The same key in upper case, with junk after its end, is the same key.
    auto upper = f.keys.public_key;
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
    auto spelled = f.add_key(upper + "trailing words\n", {}, out);
    REQUIRE(spelled);
    CHECK(spelled->empty());
    CHECK(out.id == 1);
    CHECK(f.logic.state.code_sign_keys.at(0).public_key == f.keys.public_key);
  }
  SECTION("unsigned") {
    auto refused = f.add_key(next.public_key, {}, out);
    REQUIRE_FALSE(refused);
    CHECK(is(refused.error(), ec::conflict));
  }
  SECTION("signed with itself") {
    auto self = sign_text(next.private_key, next.public_key);
    REQUIRE(self);
    auto refused = f.add_key(next.public_key, *self, out);
    REQUIRE_FALSE(refused);
    CHECK(is(refused.error(), ec::invalid_argument));
    CHECK(f.logic.state.code_sign_keys.size() == 1);
  }
  SECTION("not a key") {
    auto refused = f.add_key("1024\nnot hex\n.\n", {}, out);
    REQUIRE_FALSE(refused);
    CHECK(is(refused.error(), ec::invalid_argument));
  }
  SECTION("signed with the current key: versions must then be signed with the new one") {
    auto sig = sign_text(f.keys.private_key, next.public_key);
    REQUIRE(sig);
    auto rotated = f.add_key(next.public_key, *sig, out);
    REQUIRE(rotated);
    CHECK(out.changed);
    CHECK(out.id == 2);
    REQUIRE(f.logic.state.code_sign_keys.size() == 2);
    CHECK(f.logic.state.code_sign_keys.back().signature == *sig);

    auto old_signed = f.add_version(f.version(101), out);
    REQUIRE_FALSE(old_signed);
    CHECK(is(old_signed.error(), ec::invalid_argument));
    f.keys = next;
    REQUIRE(f.add_version(f.version(101), out));
    CHECK(out.changed);

    // The project never goes back to the older key.
    auto back = f.add_key(f.logic.state.code_sign_keys.front().public_key, {}, out);
    REQUIRE_FALSE(back);
    CHECK(is(back.error(), ec::conflict));
  }
}

TEST_CASE("an app is added with its policy, once", "[project_apps]") {
  apps_fixture f;
  app_change c;
  c.what = app_change::op::add_app;
  c.by = "admin";
  c.app = "newapp";
  // The configuration's defaults, no user_friendly_name (the name stands in for it).
  c.new_app.output_names = {"out"};
  app_changed out;
  auto added = f.change(c, out);
  INFO((added ? std::string{} : describe(added.error())));
  REQUIRE(added);
  REQUIRE(added->size() == 1);
  CHECK(out.changed);
  CHECK(out.id == 2);
  const auto* app = f.logic.state.app(std::string_view{"newapp"});
  REQUIRE(app != nullptr);
  CHECK(app->user_friendly_name == "newapp");
  CHECK(app->versions.empty());

  SECTION("the same app again is a retry") {
    auto retry = f.change(c, out);
    REQUIRE(retry);
    CHECK(retry->empty());
    CHECK_FALSE(out.changed);
    CHECK(out.id == 2);
  }
  SECTION("another policy under the same name is refused") {
    c.new_app.min_quorum = 1;
    c.new_app.target_nresults = 1;
    auto refused = f.change(c, out);
    REQUIRE_FALSE(refused);
    CHECK(is(refused.error(), ec::duplicate));
  }
  SECTION("a bad name or policy is refused") {
    auto before = f.logic.state;
    SECTION("name") {
      c.app = "New App";
    }
    SECTION("quorum") {
      c.app = "other";
      c.new_app.min_quorum = 3;
    }
    SECTION("no outputs") {
      c.app = "other";
      c.new_app.output_names.clear();
    }
    SECTION("a deadline past ten years (deadlines in microseconds would overflow)") {
      c.app = "other";
      c.new_app.delay_bound = 1e300;
    }
    SECTION("a negative max_error_results") {
      c.app = "other";
      c.new_app.max_error_results = -1;
    }
    SECTION("AutoFlops settings out of range") {
      c.app = "other";
      c.new_app.autoflops.flops_samples = 0;
    }
    auto refused = f.change(c, out);
    REQUIRE_FALSE(refused);
    CHECK(is(refused.error(), ec::invalid_argument));
    CHECK(f.logic.state == before);
  }
  SECTION("its versions follow, and survive a restart with the same configuration") {
    f.add_first_key();
    auto v = f.version(1);
    for (auto& file : v.files)
      file.name = "newapp_" + file.name;
    REQUIRE(f.add_version(v, out, "newapp"));
    auto before = f.logic.state;
    auto events = f.logic.configure(cobble::test::demo_config().projects.at(0), f.now);
    CHECK(events.empty());
    CHECK(f.logic.state == before);
  }
}

TEST_CASE("hosts get the newest version that is not deprecated", "[project_apps]") {
  apps_fixture f;
  auto v101 = f.keyed_version(101);
  app_changed out;
  f.create_work({"a", "b"});

  std::vector<event> events;
  auto jobs = f.logic.select_jobs(f.request(), f.now, events);
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].result.version_num == 101);
  CHECK(jobs[0].dispatched.version.app_version_id == v101);

  REQUIRE(f.deprecate(v101, true, out));
  jobs = f.logic.select_jobs(f.request(), f.now, events);
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].result.version_num == 100);
}

TEST_CASE("a host is sent the signed versions and the key it lacks", "[project_apps]") {
  apps_fixture f;
  auto v101 = f.keyed_version(101);
  f.create_work({"a", "b", "c", "d"});
  auto grant_for = [&](const job_request& r) {
    std::vector<event> events;
    job_grant g;
    // As serve_rpc does: the standing of the key the client holds decides what it may get.
    auto req = r;
    req.code_sign = f.logic.key_standing_of(r.code_sign_key);
    g.jobs = f.logic.select_jobs(req, f.now, events);
    REQUIRE(!g.jobs.empty());
    f.logic.add_deliveries(req, g);
    return g;
  };

  SECTION("a new host gets the app, the version with its signed files, and the key") {
    auto g = grant_for(f.request());
    REQUIRE(g.apps.size() == 1);
    CHECK(g.apps[0].name == "testapp");
    REQUIRE(g.app_versions.size() == 1);
    const auto& v = g.app_versions[0];
    CHECK(v.app_name == "testapp");
    CHECK(v.version_num == 101);
    CHECK(v.platform == linux_platform);
    CHECK(v.api_version == "7.22.0");
    REQUIRE(v.files.size() == 2);
    CHECK(v.files[0].file_name == "testapp_101");
    CHECK(v.files[0].main_program);
    CHECK_FALSE(v.files[1].main_program);
    const auto* held = f.held(v101);
    REQUIRE(held != nullptr);
    REQUIRE(g.version_files.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
      CHECK(g.version_files[i].name == held->files[i].name);
      CHECK(g.version_files[i].md5_cksum == held->files[i].md5);
      CHECK(g.version_files[i].nbytes == held->files[i].nbytes);
      CHECK_FALSE(g.version_files[i].is_output);
      // What the client checks before it runs the file.
      CHECK(!verify_md5(f.keys.public_key, g.version_files[i].md5_cksum,
                        g.version_files[i].file_signature));
    }
    CHECK(g.version_files[0].executable);
    CHECK(g.code_sign_key == f.keys.public_key);
    CHECK(g.code_sign_key_signature.empty());
  }
  SECTION("a host that holds the key gets none; the version goes with its jobs again") {
    auto r = f.request();
    r.offered.push_back(
      client_app_version{"testapp", 101, linux_platform, "", 1, 0, resource_type::cpu, 0});
    r.code_sign_key = "\n" + f.keys.public_key + "\n\n";
    auto g = grant_for(r);
    // Sent again: receiving it is how a client retries a download that failed.
    CHECK(g.app_versions.size() == 1);
    CHECK(g.version_files.size() == 2);
    CHECK(g.code_sign_key.empty());
    CHECK(g.messages.empty());
  }
  SECTION("a job of a configured version (the client's own) sends no version") {
    app_changed out;
    REQUIRE(f.deprecate(v101, true, out));
    auto g = grant_for(f.request());
    CHECK(g.jobs[0].result.version_num == 100);
    CHECK(g.app_versions.empty());
    CHECK(g.version_files.empty());
  }
  SECTION("a key change: offered versions first, then a host gets the key its files need") {
    auto rotate = [&] {
      auto next = new_keys();
      auto text = canonical_public_key(next.public_key);
      REQUIRE(text);
      auto sig = sign_text(f.keys.private_key, *text);
      REQUIRE(sig);
      app_changed out;
      auto decided = f.add_key(next.public_key, *sig, out);
      if (decided)
        f.keys = next; // the operator signs with the new key from now on
      return decided;
    };
    auto first = f.keys;
    // A client checks files with the key it holds after the reply: no new key while a
    // version signed with the current one is offered.
    auto refused = rotate();
    REQUIRE_FALSE(refused);
    CHECK(is(refused.error(), ec::conflict));
    CHECK_THAT(describe(refused.error()), Catch::Contains("is offered"));
    CHECK(f.logic.state.code_sign_keys.size() == 1);
    app_changed retry;
    auto same = f.add_key(first.public_key, {}, retry); // the current key again: a retry
    REQUIRE(same);
    CHECK_FALSE(retry.changed);
    app_changed out;
    REQUIRE(f.deprecate(v101, true, out));
    REQUIRE(rotate());
    auto second = f.keys;
    auto again = f.deprecate(v101, false, out);
    REQUIRE_FALSE(again);
    CHECK(is(again.error(), ec::conflict));
    CHECK_THAT(describe(again.error()), Catch::Contains("earlier code-signing key"));
    REQUIRE(f.add_version(f.version(102), out));

    // The client with the first key gets the second, signed with the first, and files that
    // verify with the second.
    auto r = f.request();
    r.code_sign_key = first.public_key;
    auto g = grant_for(r);
    CHECK(g.code_sign_key == f.logic.state.code_sign_keys.back().public_key);
    CHECK(g.code_sign_key_signature == f.logic.state.code_sign_keys.back().signature);
    CHECK(!verify_text(first.public_key, g.code_sign_key, g.code_sign_key_signature));
    REQUIRE(g.app_versions.size() == 1);
    CHECK(g.app_versions[0].version_num == 102);
    for (const auto& file : g.version_files)
      CHECK(!verify_md5(second.public_key, file.md5_cksum, file.file_signature));
    r.code_sign_key = second.public_key;
    CHECK(grant_for(r).code_sign_key.empty());

    // Two changes behind, no signature by the held key vouches for the current one.
    auto v102 = f.logic.state.apps.front().versions.back().id;
    REQUIRE(f.deprecate(v102, true, out));
    REQUIRE(rotate());
    REQUIRE(f.add_version(f.version(103), out));
    // Such a client gets no work of a version it could not check, and is told why.
    r.code_sign_key = first.public_key;
    CHECK(f.logic.key_standing_of(r.code_sign_key) == key_standing::too_old);
    g = grant_for(r);
    CHECK(g.jobs[0].result.version_num == 100); // the configured version, the client's own
    CHECK(g.app_versions.empty());
    CHECK(g.code_sign_key.empty());
    REQUIRE(g.messages.size() == 1);
    CHECK_THAT(g.messages[0].text, Catch::Contains("replaced twice"));
    r.code_sign_key = second.public_key;
    CHECK(f.logic.key_standing_of(r.code_sign_key) == key_standing::previous);
    g = grant_for(r);
    CHECK(!verify_text(second.public_key, g.code_sign_key, g.code_sign_key_signature));
  }
  SECTION("a host holding a key the project never had is told to attach again") {
    auto r = f.request();
    r.code_sign_key = new_keys().public_key;
    CHECK(f.logic.key_standing_of(r.code_sign_key) == key_standing::never_had);
    auto g = grant_for(r);
    CHECK(g.code_sign_key.empty());
    REQUIRE(g.messages.size() == 1);
    CHECK_THAT(g.messages[0].text, Catch::Contains("Detach from the project and attach again"));
  }
}

TEST_CASE("a host gets the version that fits it, described as it runs there", "[project_apps]") {
  apps_fixture f;
  config::plan_class_config mt;
  mt.name = "mt";
  mt.min_ncpus = 2;
  mt.max_threads = 8;
  mt.nthreads_cmdline = true;
  f.logic.plan_classes = {mt};
  f.add_first_key();
  auto v = f.version(101);
  v.plan_class = "mt";
  app_changed out;
  REQUIRE(f.add_version(v, out));
  f.create_work({"a", "b"});
  auto grant_for = [&](const job_request& r) {
    std::vector<event> events;
    job_grant g;
    g.jobs = f.logic.select_jobs(r, f.now, events);
    f.logic.add_deliveries(r, g);
    return g;
  };

  // One CPU: below the class's min_ncpus, so the configured single-threaded version.
  auto one = grant_for(f.request());
  REQUIRE(one.jobs.size() == 1);
  CHECK(one.jobs[0].result.version_num == 100);
  CHECK(one.app_versions.empty());

  // Four CPUs: the multi-threaded version, with four threads and four CPUs' FLOPS.
  auto r = f.request();
  r.info.p_ncpus = 4;
  auto four = grant_for(r);
  REQUIRE(four.jobs.size() == 1);
  CHECK(four.jobs[0].result.version_num == 101);
  CHECK(four.jobs[0].result.plan_class == "mt");
  REQUIRE(four.app_versions.size() == 1);
  const auto& d = four.app_versions[0];
  CHECK(d.plan_class == "mt");
  CHECK(d.avg_ncpus == 4);
  CHECK(d.max_ncpus == 4);
  CHECK(d.cmdline == "--nthreads 4");
  CHECK(d.flops == Approx(4e9));
  // The dispatch records the peak FLOPS of the four CPUs the job uses (credit's peak_flops).
  CHECK(four.jobs[0].dispatched.peak_flops == Approx(4e9));
}
