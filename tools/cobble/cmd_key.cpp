/// `cobble key generate|sign|verify|add|list`: the project's code-signing keys and app file
/// signatures in BOINC's formats (actors/code_sign.hpp). generate, sign and verify are
/// offline: no server is asked, so the private key can stay on a machine that never runs one
/// (docs/cli.md, docs/security.md). add and list give the server public keys only.

#include "actors/code_sign.hpp"
#include "actors/error.hpp"
#include "storage/file_store.hpp"
#include "tools/cobble/commands.hpp"
#include "tools/cobble/print.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include <sys/stat.h>

namespace cobble::cli {

namespace {

namespace fs = std::filesystem;

/// Writes `text` to `path` through a temporary file renamed into place, so a crash leaves the
/// old file or the new one, never half of one; `mode` is set before the rename.
void write_file(const fs::path& path, const std::string& text, mode_t mode) {
  auto tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out{tmp, std::ios::binary | std::ios::trunc};
    if (!out || !out.write(text.data(), static_cast<std::streamsize>(text.size())).flush())
      throw failure("cannot write " + tmp.string());
  }
  if (::chmod(tmp.c_str(), mode) != 0)
    throw failure("cannot set the mode of " + tmp.string());
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    throw failure("cannot rename " + tmp.string() + " to " + path.string() + ": " + ec.message());
}

/// The key text of `--key`/`--public`, or a failure naming the file and what is wrong.
template <class T>
T expect(caf::expected<T> x, const std::string& path) {
  if (!x)
    throw failure(path + ": " + describe(x.error()));
  return std::move(*x);
}

// -- generate -----------------------------------------------------------------------------

int key_generate(const std::string& dir) {
  fs::path out{dir};
  auto priv = out / "code_sign_private";
  auto pub = out / "code_sign_public";
  for (const auto& p : {priv, pub})
    if (fs::exists(p))
      throw failure(p.string()
                    + " exists: a project keeps its key (clients refuse a new one unless it is "
                      "signed with the old one); move it away first to start over");
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec)
    throw failure("cannot create " + out.string() + ": " + ec.message());
  auto keys = expect(generate_code_sign_keys(), "key generation");
  write_file(priv, keys.private_key, 0600);
  write_file(pub, keys.public_key, 0644);
  std::cout << "private key " << priv.string() << " (keep it offline: it signs what volunteers "
            << "run)\npublic key  " << pub.string() << '\n';
  return exit_ok;
}

void add_key_generate(CLI::App& key, context& ctx) {
  auto dir = std::make_shared<std::string>();
  auto cmd = key.add_subcommand(
    "generate", "Make a 1024-bit RSA key pair in BOINC's format: DIR/code_sign_private "
                "(mode 600) and DIR/code_sign_public; refuses to replace existing keys");
  cmd->add_option("--out", *dir, "Directory for the two key files (created if missing)")->required();
  on_run(*cmd, ctx, [dir] { return key_generate(*dir); });
}

// -- sign ---------------------------------------------------------------------------------

struct sign_options {
  std::vector<std::string> files;
  std::string key;
  bool new_key = false; ///< The files are public keys: sign each key's text (rotation).
};

int key_sign(const sign_options& o) {
  auto priv = read_file(o.key, "private key");
  // Check the key before writing anything.
  expect(public_code_sign_key(priv), o.key);
  for (const auto& file : o.files) {
    if (o.new_key) {
      // BOINC signs a new key over its text without the whitespace around it; the server
      // keeps keys in one canonical text, so that is what is signed.
      auto text = expect(canonical_public_key(read_file(file, "public key")), file);
      write_file(file + ".sig", expect(sign_text(priv, text), o.key), 0644);
      std::cout << file << ".sig  (the new key, signed with " << o.key << ")\n";
      continue;
    }
    auto md5 = storage::md5_of_file(file);
    if (!md5)
      throw failure("cannot read " + file);
    auto sig = expect(sign_md5(priv, *md5), o.key);
    write_file(file + ".sig", sig, 0644);
    std::cout << file << ".sig  (md5 " << *md5 << ")\n";
  }
  return exit_ok;
}

void add_key_sign(CLI::App& key, context& ctx) {
  auto o = std::make_shared<sign_options>();
  auto cmd = key.add_subcommand(
    "sign", "Sign app files with the private key: writes FILE.sig beside each FILE, the "
            "signature a BOINC client checks (of the file's MD5, in BOINC's hex form)");
  cmd->add_option("files", o->files, "Files to sign")->required()->check(CLI::ExistingFile);
  cmd->add_option("--key", o->key, "The private key file (code_sign_private)")->required();
  cmd->add_flag("--new-key", o->new_key,
                "Each FILE is a project's next public key: sign its text with the current "
                "private key (--key), as POST .../keys wants for a key change");
  on_run(*cmd, ctx, [o] { return key_sign(*o); });
}

// -- verify -------------------------------------------------------------------------------

struct verify_options {
  std::string file;
  std::string public_key;
  std::string signature; ///< Empty: FILE.sig.
};

int key_verify(const verify_options& o) {
  auto pub = read_file(o.public_key, "public key");
  auto sig_path = o.signature.empty() ? o.file + ".sig" : o.signature;
  auto sig = read_file(sig_path, "signature");
  auto md5 = storage::md5_of_file(o.file);
  if (!md5)
    throw failure("cannot read " + o.file);
  if (auto err = verify_md5(pub, *md5, sig))
    throw failure(o.file + ": signature " + sig_path + " does not verify: " + describe(err));
  std::cout << o.file << ": signature OK\n";
  return exit_ok;
}

void add_key_verify(CLI::App& key, context& ctx) {
  auto o = std::make_shared<verify_options>();
  auto cmd = key.add_subcommand("verify", "Check a file's signature as a BOINC client would; "
                                          "exit 0 when it holds, 1 when it does not");
  cmd->add_option("file", o->file, "The signed file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--public", o->public_key, "The public key file (code_sign_public)")->required();
  cmd->add_option("--signature", o->signature, "The signature file (default: FILE.sig)");
  on_run(*cmd, ctx, [o] { return key_verify(*o); });
}

// -- add, list (online) ----------------------------------------------------------------

struct add_options {
  std::string public_key;
  std::string signature; ///< Empty: PUBLIC.sig when it exists.
  std::string by;
};

int key_add(context& ctx, const add_options& o) {
  nlohmann::json body = {{"public_key", read_file(o.public_key, "public key")},
                         {"by", operator_name(o.by)}};
  auto sig_path = o.signature.empty() ? o.public_key + ".sig" : o.signature;
  if (!o.signature.empty() || fs::exists(sig_path))
    body["signature"] = read_file(sig_path, "signature");
  auto& on = ctx.server;
  auto res = on.api().post(on.project_path() + "/keys", body);
  if (ctx.options.json)
    print_json(res);
  else
    std::cout << "key " << field(res, "id")
              << (res.value("changed", false) ? " is the project's code-signing key"
                                              : " was the project's already: nothing changed")
              << '\n';
  return exit_ok;
}

void add_key_add(CLI::App& key, context& ctx) {
  auto o = std::make_shared<add_options>();
  auto cmd = key.add_subcommand(
    "add", "Give the server the project's public key (the first, or the next one signed with "
           "the current private key: `key sign --new-key`); hosts get it with the apps");
  cmd->add_option("public", o->public_key, "The public key file (code_sign_public)")
    ->required()
    ->check(CLI::ExistingFile);
  cmd->add_option("--signature", o->signature,
                  "The new key signed with the current one (default: PUBLIC.sig when it "
                  "exists; the first key has none)");
  cmd->add_option("--by", o->by, "Who adds it (default: your login name)");
  on_run(*cmd, ctx, [&ctx, o] { return key_add(ctx, *o); });
}

void print_keys(std::ostream& out, const nlohmann::json& keys) {
  table t{{"ID", "ADDED", "SIGNED BY PREVIOUS", "CURRENT"}};
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto& k = keys[i];
    t.add({field(k, "id"), time_field(k, "added"),
           k.at("signature").is_null() ? "no (first key)" : "yes",
           i + 1 == keys.size() ? "yes" : "no"});
  }
  t.print(out);
}

void add_key_list(CLI::App& key, context& ctx) {
  auto cmd = key.add_subcommand("list", "The server's code-signing public keys, oldest first "
                                        "(--json for their text)");
  on_run(*cmd, ctx, [&ctx] {
    auto& on = ctx.server;
    return show(ctx, on.api().get(on.project_path() + "/keys"), print_keys);
  });
}

} // namespace

void add_key_commands(CLI::App& app, context& ctx) {
  add_group(app, ctx, "key",
            "Code-signing keys and app file signatures (generate, sign, verify: offline)",
            {add_key_generate, add_key_sign, add_key_verify, add_key_add, add_key_list});
}

} // namespace cobble::cli
