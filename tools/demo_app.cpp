#include "tools/demo_app.hpp"

#include "actors/code_sign.hpp"
#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "actors/state.hpp"
#include "storage/file_store.hpp"
#include "tools/kept_files.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>

#include <sys/stat.h>

namespace fs = std::filesystem;

namespace cobble::tools {

namespace {

constexpr auto ask_timeout = std::chrono::seconds(30);

/// The demo's key pair: read from `dir`, or made there (the private key first, 0600, so that a
/// crash never leaves a public key without its private one).
caf::expected<code_sign_key_pair> demo_keys(const fs::path& dir) {
  auto priv_path = dir / "code_sign_private";
  auto pub_path = dir / "code_sign_public";
  code_sign_key_pair keys;
  try {
    if (auto kept = read_whole(priv_path)) {
      auto pub = public_code_sign_key(*kept);
      if (!pub)
        return caf::make_error(ec::invalid_argument,
                               priv_path.string() + ": " + describe(pub.error())
                                 + " (move the file away to make a new key pair)");
      keys.private_key = std::move(*kept);
      keys.public_key = std::move(*pub);
    } else {
      auto made = generate_code_sign_keys();
      if (!made)
        return made.error();
      keys = std::move(*made);
      fs::create_directories(dir);
      fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
      write_durably(priv_path, keys.private_key, S_IRUSR | S_IWUSR);
    }
    if (read_whole(pub_path) != keys.public_key)
      write_durably(pub_path, keys.public_key, S_IRUSR | S_IWUSR | S_IRGRP | S_IROTH);
  } catch (const std::exception& e) {
    return caf::make_error(ec::storage_failure,
                           std::string{"the demo's code-signing key: "} + e.what());
  }
  return keys;
}

/// One request to the project, waited for; the reply through `take`.
template <class... Ts, class F>
caf::error ask(caf::scoped_actor& self, const project_actor& project, F take, Ts&&... xs) {
  caf::error err;
  self->request(project, ask_timeout, std::forward<Ts>(xs)...)
    .receive(std::move(take), [&](caf::error& e) { err = std::move(e); });
  return err;
}

caf::expected<app_changed>
change(caf::scoped_actor& self, const project_actor& project, app_change c) {
  app_changed out;
  auto err = ask(
    self, project,
    [&](std::uint32_t id, bool changed) {
      out = app_changed{id, changed};
    },
    atom::app_v, app_change_ptr{std::make_shared<const app_change>(std::move(c))});
  if (err)
    return err;
  return out;
}

} // namespace

std::string_view native_platform() {
#if defined(__x86_64__)
  return "x86_64-pc-linux-gnu";
#elif defined(__aarch64__)
  return "aarch64-unknown-linux-gnu";
#elif defined(__i386__)
  return "i686-pc-linux-gnu";
#elif defined(__arm__)
  return "arm-unknown-linux-gnueabihf";
#else
  return "unknown-linux-gnu";
#endif
}

caf::expected<std::string>
distribute_demo_app(caf::actor_system& sys, const project_actor& project,
                    storage::file_store& files, const demo_app_options& o) {
  auto keys = demo_keys(o.key_dir);
  if (!keys)
    return keys.error();
  auto ours = canonical_public_key(keys->public_key);
  if (!ours)
    return ours.error();
  caf::scoped_actor self{sys};
  key_list_ptr held;
  if (auto err = ask(
        self, project, [&](const key_list_ptr& k) { held = k; }, atom::list_v, atom::key_v))
    return err;
  if (held->empty()) {
    app_change c;
    c.what = app_change::op::add_key;
    c.by = "cobbled (demo)";
    c.public_key = *ours;
    if (auto added = change(self, project, std::move(c)); !added)
      return added.error();
  } else if (auto current = canonical_public_key(held->back().public_key);
             !current || *current != *ours) {
    return "demo app: not distributed by cobbled: the project's code-signing key is not the one "
           "in "
           + o.key_dir.string() + " (add versions with `cobble app add-version --key`)";
  }

  auto content = read_whole(o.program);
  if (!content)
    return caf::make_error(ec::invalid_argument,
                           "cannot read the demo's app " + o.program.string() + " (--demo-app)");
  auto staged = files.stage(o.project, *content, "app_");
  if (!staged)
    return caf::make_error(ec::storage_failure, "staging the demo's app " + o.program.string()
                                                  + ": " + describe(staged.error()));
  app_list_ptr apps;
  if (auto err = ask(
        self, project, [&](const app_list_ptr& a) { apps = a; }, atom::list_v, atom::app_v))
    return err;
  auto app = std::find_if(apps->begin(), apps->end(),
                          [&](const app_rec& a) { return a.name == o.app; });
  if (app == apps->end())
    return caf::make_error(ec::unknown_app, "the demo project has no app " + o.app);
  auto platform = std::string{native_platform()};
  int last = 0;
  for (const auto& v : app->versions) {
    if (v.platform != platform || !v.plan_class.empty())
      continue;
    last = std::max(last, v.version_num);
    bool same = !v.deprecated && v.files.size() == 1 && v.files.front().md5 == staged->md5;
    if (same)
      return "demo app: " + o.app + " version " + std::to_string(v.version_num) + " (" + platform
             + "), from " + o.program.string() + ", signed with the key in " + o.key_dir.string();
  }
  auto signature = sign_md5(keys->private_key, staged->md5);
  if (!signature)
    return signature.error();
  app_change c;
  c.what = app_change::op::add_version;
  c.by = "cobbled (demo)";
  c.app = o.app;
  c.version.platform = platform;
  c.version.version_num = std::max(100, last + 1);
  app_file_rec f;
  f.name = staged->name;
  f.open_name = o.program.filename().string();
  f.nbytes = static_cast<double>(staged->nbytes);
  f.md5 = staged->md5;
  f.signature = std::move(*signature);
  f.executable = true;
  f.main_program = true;
  c.version.files.push_back(std::move(f));
  auto num = c.version.version_num;
  if (auto added = change(self, project, std::move(c)); !added)
    return added.error();
  return "demo app: " + o.app + " version " + std::to_string(num) + " (" + platform
         + ") added from " + o.program.string() + ", signed with the key in " + o.key_dir.string();
}

} // namespace cobble::tools
