#include "actors/code_sign.hpp"

#include "actors/error.hpp"
#include "storage/file_store.hpp"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace cobble {

namespace {

constexpr int key_bits = 1024;
constexpr std::size_t modulus_len = 128; // BOINC's MAX_RSA_MODULUS_LEN
constexpr std::size_t prime_len = 64;    // MAX_RSA_PRIME_LEN
constexpr std::size_t public_len = 2 * modulus_len;
constexpr std::size_t private_len = 3 * modulus_len + 5 * prime_len;

/// The parameter names of a private key, in the order of BOINC's structure, with their field
/// sizes; a public key is the first two.
struct key_field {
  const char* name;
  std::size_t len;
};
constexpr std::array<key_field, 8> key_fields = {{
  {OSSL_PKEY_PARAM_RSA_N, modulus_len},
  {OSSL_PKEY_PARAM_RSA_E, modulus_len},
  {OSSL_PKEY_PARAM_RSA_D, modulus_len},
  {OSSL_PKEY_PARAM_RSA_FACTOR1, prime_len},
  {OSSL_PKEY_PARAM_RSA_FACTOR2, prime_len},
  {OSSL_PKEY_PARAM_RSA_EXPONENT1, prime_len},
  {OSSL_PKEY_PARAM_RSA_EXPONENT2, prime_len},
  {OSSL_PKEY_PARAM_RSA_COEFFICIENT1, prime_len},
}};

struct free_pkey {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct free_ctx {
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
};
struct free_bn {
  void operator()(BIGNUM* p) const { BN_clear_free(p); }
};
struct free_bld {
  void operator()(OSSL_PARAM_BLD* p) const { OSSL_PARAM_BLD_free(p); }
};
struct free_params {
  void operator()(OSSL_PARAM* p) const { OSSL_PARAM_free(p); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, free_pkey>;
using ctx_ptr = std::unique_ptr<EVP_PKEY_CTX, free_ctx>;
using bn_ptr = std::unique_ptr<BIGNUM, free_bn>;

caf::error fail(std::string what) {
  return caf::make_error(ec::invalid_argument, std::move(what));
}

/// Hex, 32 bytes per line, then a line `.` (BOINC's print_hex_data).
std::string hex_lines(const std::vector<unsigned char>& bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2 + bytes.size() / 32 + 4);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
    if (i % 32 == 31)
      out += '\n';
  }
  if (bytes.size() % 32 != 0)
    out += '\n';
  out += ".\n";
  return out;
}

/// A hex digit's value, -1 for anything else (OpenSSL's, which accepts both cases).
int hex_value(char c) {
  return OPENSSL_hexchar2int(static_cast<unsigned char>(c));
}

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/// Hex pairs, whitespace skipped, up to a `.`; nullopt for anything else or an odd digit.
std::optional<std::vector<unsigned char>> read_hex(std::string_view text) {
  std::vector<unsigned char> out;
  int high = -1;
  for (char c : text) {
    if (is_space(c))
      continue;
    if (c == '.')
      return high < 0 ? std::optional{std::move(out)} : std::nullopt;
    int v = hex_value(c);
    if (v < 0)
      return std::nullopt;
    if (high < 0) {
      high = v;
    } else {
      out.push_back(static_cast<unsigned char>(high * 16 + v));
      high = -1;
    }
  }
  return std::nullopt; // no closing `.`
}

/// The numbers of a key text (bits line, hex, `.`), checked against the expected length.
caf::expected<std::vector<unsigned char>>
read_key(std::string_view text, std::size_t len, const char* what) {
  text = strip_key_text(text);
  auto eol = text.find('\n');
  auto first = text.substr(0, eol);
  while (!first.empty() && is_space(first.back()))
    first.remove_suffix(1);
  if (first != "1024")
    return fail(std::string("not a BOINC ") + what
                + " key: the first line must be the key size, 1024");
  auto bytes = eol == std::string_view::npos ? std::nullopt : read_hex(text.substr(eol + 1));
  if (!bytes)
    return fail(std::string("not a BOINC ") + what
                + " key: after the size line it must be hex digits ending in a line '.'");
  if (bytes->size() != len)
    return fail(std::string("not a BOINC ") + what + " key: " + std::to_string(bytes->size())
                + " bytes, expected " + std::to_string(len)
                + (bytes->size() == public_len    ? " (this is a public key)"
                   : bytes->size() == private_len ? " (this is a private key)"
                                                  : ""));
  return std::move(*bytes);
}

/// An EVP key from BOINC's key bytes (public: 2 fields, private: all 8).
caf::expected<pkey_ptr> to_pkey(const std::vector<unsigned char>& bytes, bool is_private) {
  std::unique_ptr<OSSL_PARAM_BLD, free_bld> bld{OSSL_PARAM_BLD_new()};
  std::vector<bn_ptr> numbers;
  std::size_t at = 0;
  std::size_t n = is_private ? key_fields.size() : 2;
  for (std::size_t i = 0; i < n && bld; ++i) {
    const auto& f = key_fields[i];
    numbers.emplace_back(BN_bin2bn(bytes.data() + at, static_cast<int>(f.len), nullptr));
    at += f.len;
    if (!numbers.back() || OSSL_PARAM_BLD_push_BN(bld.get(), f.name, numbers.back().get()) != 1)
      return fail("cannot read the key's numbers");
  }
  if (!bld)
    return fail("out of memory reading a key");
  std::unique_ptr<OSSL_PARAM, free_params> params{OSSL_PARAM_BLD_to_param(bld.get())};
  ctx_ptr ctx{EVP_PKEY_CTX_new_from_name(nullptr, "RSA", nullptr)};
  EVP_PKEY* raw = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1
      || EVP_PKEY_fromdata(ctx.get(), &raw, is_private ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY,
                           params.get())
           != 1)
    return fail("the key's numbers are no RSA key");
  pkey_ptr key{raw};
  if (EVP_PKEY_get_bits(key.get()) != key_bits)
    return fail("the key is not a 1024-bit RSA key");
  return key;
}

/// The key's numbers in BOINC's layout (public: modulus and exponent only).
caf::expected<std::vector<unsigned char>> key_bytes(const EVP_PKEY* key, bool is_private) {
  std::vector<unsigned char> out(is_private ? private_len : public_len);
  std::size_t at = 0;
  std::size_t n = is_private ? key_fields.size() : 2;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& f = key_fields[i];
    BIGNUM* raw = nullptr;
    if (EVP_PKEY_get_bn_param(key, f.name, &raw) != 1)
      return fail(std::string("the key has no ") + f.name);
    bn_ptr number{raw};
    if (BN_bn2binpad(number.get(), out.data() + at, static_cast<int>(f.len)) < 0)
      return fail(std::string("the key's ") + f.name + " does not fit BOINC's key format");
    at += f.len;
  }
  return out;
}

std::string key_text(const std::vector<unsigned char>& bytes) {
  return std::to_string(key_bits) + "\n" + hex_lines(bytes);
}

caf::expected<pkey_ptr> private_key_of(std::string_view text) {
  auto bytes = read_key(text, private_len, "private");
  if (!bytes)
    return bytes.error();
  return to_pkey(*bytes, true);
}

caf::expected<pkey_ptr> public_key_of(std::string_view text) {
  auto bytes = read_key(text, public_len, "public");
  if (!bytes)
    return bytes.error();
  return to_pkey(*bytes, false);
}

bool is_md5_hex(std::string_view s) {
  if (s.size() != 32)
    return false;
  for (char c : s)
    if (hex_value(c) < 0)
      return false;
  return true;
}

} // namespace

std::string_view strip_key_text(std::string_view text) {
  while (!text.empty() && is_space(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && is_space(text.back()))
    text.remove_suffix(1);
  return text;
}

caf::expected<code_sign_key_pair> generate_code_sign_keys() {
  ctx_ptr ctx{EVP_PKEY_CTX_new_from_name(nullptr, "RSA", nullptr)};
  EVP_PKEY* raw = nullptr;
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1
      || EVP_PKEY_CTX_set_rsa_keygen_bits(ctx.get(), key_bits) != 1
      || EVP_PKEY_generate(ctx.get(), &raw) != 1)
    return fail("OpenSSL could not generate an RSA key");
  pkey_ptr key{raw};
  auto priv = key_bytes(key.get(), true);
  if (!priv)
    return priv.error();
  auto pub = key_bytes(key.get(), false);
  if (!pub)
    return pub.error();
  return code_sign_key_pair{key_text(*priv), key_text(*pub)};
}

caf::expected<std::string> public_code_sign_key(std::string_view private_key) {
  auto key = private_key_of(private_key);
  if (!key)
    return key.error();
  auto pub = key_bytes(key->get(), false);
  if (!pub)
    return pub.error();
  return key_text(*pub);
}

caf::expected<std::string> sign_md5(std::string_view private_key, std::string_view md5_hex) {
  if (!is_md5_hex(md5_hex))
    return fail("an MD5 is 32 hex digits, not '" + std::string(md5_hex.substr(0, 40)) + "'");
  auto key = private_key_of(private_key);
  if (!key)
    return key.error();
  ctx_ptr ctx{EVP_PKEY_CTX_new_from_pkey(nullptr, key->get(), nullptr)};
  std::vector<unsigned char> sig(modulus_len);
  auto len = sig.size();
  const auto* tbs = reinterpret_cast<const unsigned char*>(md5_hex.data());
  // No digest is set: the 32 ASCII digits are padded as they are (PKCS#1 type 1), as
  // BOINC's RSA_private_encrypt does.
  if (!ctx || EVP_PKEY_sign_init(ctx.get()) != 1
      || EVP_PKEY_CTX_set_rsa_padding(ctx.get(), RSA_PKCS1_PADDING) != 1
      || EVP_PKEY_sign(ctx.get(), sig.data(), &len, tbs, md5_hex.size()) != 1)
    return fail("OpenSSL could not sign with the key");
  sig.resize(len);
  return hex_lines(sig);
}

caf::expected<std::string> sign_text(std::string_view private_key, std::string_view text) {
  return sign_md5(private_key, storage::md5_hex(strip_key_text(text)));
}

caf::error
verify_md5(std::string_view public_key, std::string_view md5_hex, std::string_view signature) {
  auto key = public_key_of(public_key);
  if (!key)
    return key.error();
  auto sig = read_hex(signature);
  if (!sig || sig->size() != modulus_len)
    return fail("not a BOINC signature: " + std::to_string(modulus_len)
                + " bytes of hex digits ending in a line '.'");
  ctx_ptr ctx{EVP_PKEY_CTX_new_from_pkey(nullptr, key->get(), nullptr)};
  std::vector<unsigned char> clear(modulus_len);
  auto len = clear.size();
  if (!ctx || EVP_PKEY_verify_recover_init(ctx.get()) != 1
      || EVP_PKEY_CTX_set_rsa_padding(ctx.get(), RSA_PKCS1_PADDING) != 1
      || EVP_PKEY_verify_recover(ctx.get(), clear.data(), &len, sig->data(), sig->size()) != 1)
    return fail("the signature was not made with this key");
  if (std::string_view(reinterpret_cast<const char*>(clear.data()), len) != md5_hex)
    return fail("the signature is of other content (MD5 mismatch)");
  return {};
}

caf::expected<std::string> canonical_public_key(std::string_view public_key) {
  auto bytes = read_key(public_key, public_len, "public");
  if (!bytes)
    return bytes.error();
  if (auto key = to_pkey(*bytes, false); !key)
    return key.error();
  return key_text(*bytes);
}

caf::expected<std::string> canonical_signature(std::string_view signature) {
  auto sig = read_hex(signature);
  if (!sig || sig->size() != modulus_len)
    return fail("not a BOINC signature: " + std::to_string(modulus_len)
                + " bytes of hex digits ending in a line '.'");
  return hex_lines(*sig);
}

caf::error
verify_text(std::string_view public_key, std::string_view text, std::string_view signature) {
  return verify_md5(public_key, storage::md5_hex(strip_key_text(text)), signature);
}

std::string key_fingerprint(std::string_view key_text) {
  return storage::md5_hex(strip_key_text(key_text)).substr(0, 16);
}

} // namespace cobble
