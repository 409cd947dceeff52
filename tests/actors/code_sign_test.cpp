/// Code signing in BOINC's formats (actors/code_sign.hpp): key texts of the right shape,
/// signatures a BOINC client would accept (checked here with plain RSA arithmetic, not the
/// code under test), and every bad key, signature or digest refused with a reason.

#include "actors/code_sign.hpp"
#include "actors/error.hpp"
#include "storage/file_store.hpp"

#include <catch2/catch.hpp>
#include <openssl/bn.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace cobble;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

/// The hex digits of lines [from, to) of a key or signature text, as bytes.
std::vector<unsigned char>
bytes_of(const std::vector<std::string>& lines, std::size_t from, std::size_t to) {
  std::vector<unsigned char> out;
  for (std::size_t i = from; i < to; ++i)
    for (std::size_t j = 0; j + 1 < lines[i].size(); j += 2)
      out.push_back(static_cast<unsigned char>(std::stoi(lines[i].substr(j, 2), nullptr, 16)));
  return out;
}

struct bn_free {
  void operator()(BIGNUM* b) const { BN_free(b); }
};
using bn = std::unique_ptr<BIGNUM, bn_free>;

bn to_bn(const std::vector<unsigned char>& b) {
  return bn{BN_bin2bn(b.data(), static_cast<int>(b.size()), nullptr)};
}

/// What a BOINC client recovers from `signature` with `public_key`: signature^e mod n, as
/// 128 bytes, computed by hand from the key text.
std::vector<unsigned char> recover(const std::string& public_key, const std::string& signature) {
  auto key = lines_of(public_key);
  auto n = to_bn(bytes_of(key, 1, 5));
  auto e = to_bn(bytes_of(key, 5, 9));
  auto s = to_bn(bytes_of(lines_of(signature), 0, 4));
  bn m{BN_new()};
  std::unique_ptr<BN_CTX, void (*)(BN_CTX*)> ctx{BN_CTX_new(), BN_CTX_free};
  REQUIRE(BN_mod_exp(m.get(), s.get(), e.get(), n.get(), ctx.get()) == 1);
  std::vector<unsigned char> out(128);
  REQUIRE(BN_bn2binpad(m.get(), out.data(), 128) == 128);
  return out;
}

std::string message_of(const caf::error& e) {
  return describe(e);
}

} // namespace

TEST_CASE("generated keys have BOINC's text form", "[code_sign]") {
  auto keys = generate_code_sign_keys();
  REQUIRE(keys);
  auto priv = lines_of(keys->private_key);
  auto pub = lines_of(keys->public_key);
  REQUIRE(priv.size() == 24); // size, 22 lines of 32 bytes (704), "."
  REQUIRE(pub.size() == 10);  // size, 8 lines (256 bytes), "."
  CHECK(priv.front() == "1024");
  CHECK(pub.front() == "1024");
  CHECK(priv.back() == ".");
  CHECK(pub.back() == ".");
  for (std::size_t i = 1; i + 1 < pub.size(); ++i) {
    CHECK(pub[i].size() == 64);
    CHECK(pub[i].find_first_not_of("0123456789abcdef") == std::string::npos);
  }
  // The modulus is a full 1024 bits; the exponent is 65537, zero-padded to 128 bytes.
  auto modulus = bytes_of(pub, 1, 5);
  CHECK(modulus.at(0) >= 0x80);
  auto exponent = bytes_of(pub, 5, 9);
  CHECK(exponent.at(125) == 0x01);
  CHECK(exponent.at(126) == 0x00);
  CHECK(exponent.at(127) == 0x01);
  // The private key starts with the same modulus and exponent.
  CHECK(bytes_of(priv, 1, 9) == bytes_of(pub, 1, 9));
  auto again = public_code_sign_key(keys->private_key);
  REQUIRE(again);
  CHECK(*again == keys->public_key);
  // Two keys are two keys.
  auto other = generate_code_sign_keys();
  REQUIRE(other);
  CHECK(other->public_key != keys->public_key);
}

TEST_CASE("a file signature is PKCS#1 type 1 over the MD5's 32 hex digits", "[code_sign]") {
  auto keys = generate_code_sign_keys();
  REQUIRE(keys);
  auto md5 = storage::md5_hex("the app's main program");
  auto sig = sign_md5(keys->private_key, md5);
  REQUIRE(sig);
  auto sl = lines_of(*sig);
  REQUIRE(sl.size() == 5); // 4 lines of 32 bytes, "."
  CHECK(sl.back() == ".");
  // What the client computes: 00 01 FF…FF 00, then the digits themselves (no DigestInfo).
  auto block = recover(keys->public_key, *sig);
  CHECK(block[0] == 0x00);
  CHECK(block[1] == 0x01);
  for (std::size_t i = 2; i < 128 - 33; ++i)
    CHECK(block[i] == 0xff);
  CHECK(block[128 - 33] == 0x00);
  CHECK(std::string(block.begin() + 128 - 32, block.end()) == md5);

  CHECK_FALSE(verify_md5(keys->public_key, md5, *sig));
  // Line breaks and indentation do not matter (the client strips them).
  CHECK_FALSE(verify_md5("\n  " + keys->public_key + "\n", md5, "\n" + *sig + "   "));
}

TEST_CASE("a signature of other content, by another key, or altered is refused", "[code_sign]") {
  auto keys = generate_code_sign_keys();
  auto other = generate_code_sign_keys();
  REQUIRE(keys);
  REQUIRE(other);
  auto md5 = storage::md5_hex("v1.02");
  auto sig = sign_md5(keys->private_key, md5);
  REQUIRE(sig);
  auto changed = verify_md5(keys->public_key, storage::md5_hex("v1.02 tampered"), *sig);
  REQUIRE(changed);
  CHECK(is(changed, ec::invalid_argument));
  CHECK(message_of(changed).find("other content") != std::string::npos);
  auto foreign = verify_md5(other->public_key, md5, *sig);
  REQUIRE(foreign);
  CHECK(message_of(foreign).find("not made with this key") != std::string::npos);
  auto altered = *sig;
  altered[10] = altered[10] == '0' ? '1' : '0';
  CHECK(verify_md5(keys->public_key, md5, altered));
  auto cut = verify_md5(keys->public_key, md5, sig->substr(0, 64) + "\n.\n");
  REQUIRE(cut);
  CHECK(message_of(cut).find("not a BOINC signature") != std::string::npos);
}

TEST_CASE("a new key signed with the previous one: key rotation", "[code_sign]") {
  auto old_keys = generate_code_sign_keys();
  auto new_keys = generate_code_sign_keys();
  REQUIRE(old_keys);
  REQUIRE(new_keys);
  auto sig = sign_text(old_keys->private_key, new_keys->public_key);
  REQUIRE(sig);
  // Signed over the stripped text, as the client checks it with the key it holds.
  CHECK_FALSE(verify_text(old_keys->public_key, "  " + new_keys->public_key + "\n\n", *sig));
  CHECK_FALSE(
    verify_md5(old_keys->public_key, storage::md5_hex(strip_key_text(new_keys->public_key)), *sig));
  CHECK(verify_text(new_keys->public_key, new_keys->public_key, *sig));
}

TEST_CASE("bad keys and digests are refused with the reason", "[code_sign]") {
  auto keys = generate_code_sign_keys();
  REQUIRE(keys);
  auto md5 = storage::md5_hex("x");
  auto reason = [](const caf::expected<std::string>& r) {
    REQUIRE_FALSE(r);
    CHECK(is(r.error(), ec::invalid_argument));
    return message_of(r.error());
  };
  CHECK(reason(sign_md5(keys->public_key, md5)).find("this is a public key") != std::string::npos);
  CHECK(reason(sign_md5("2048\n" + keys->private_key.substr(5), md5)).find("1024")
        != std::string::npos);
  auto no_dot = keys->private_key.substr(0, keys->private_key.size() - 2);
  CHECK(reason(sign_md5(no_dot, md5)).find("ending in a line '.'") != std::string::npos);
  auto bad_digit = keys->private_key;
  bad_digit[7] = 'g';
  CHECK(reason(sign_md5(bad_digit, md5)).find("hex digits") != std::string::npos);
  CHECK(reason(sign_md5(keys->private_key, "abc")).find("32 hex digits") != std::string::npos);
  CHECK(reason(sign_md5(keys->private_key, std::string(32, 'z'))).find("32 hex digits")
        != std::string::npos);
  CHECK(reason(public_code_sign_key("")).find("1024") != std::string::npos);
  auto sig = sign_md5(keys->private_key, md5);
  REQUIRE(sig);
  auto private_as_public = verify_md5(keys->private_key, md5, *sig);
  REQUIRE(private_as_public);
  CHECK(message_of(private_as_public).find("this is a private key") != std::string::npos);
  // A modulus of zeros is no RSA key.
  auto zeros = lines_of(keys->public_key);
  std::string zero_key = "1024\n";
  for (std::size_t i = 1; i + 1 < zeros.size(); ++i)
    zero_key += std::string(64, '0') + "\n";
  zero_key += ".\n";
  CHECK(verify_md5(zero_key, md5, *sig));
}
