#pragma once

/// Code signing as BOINC clients check it: RSA keys in BOINC's text form, and signatures of
/// a file's MD5. Pure functions (no files, no actors): the server verifies with them, the
/// `cobble key` commands generate keys and sign with them on the operator's machine.
///
/// BOINC's text form of a key: a line with the modulus size in bits (1024), then the key's
/// numbers as big-endian bytes, each zero-padded to its field, in lowercase hex, 32 bytes per
/// line, then a line `.`. A public key is the modulus and the public exponent, 128 bytes
/// each (8 lines); a private key is the modulus, the public and private exponents (128 bytes
/// each), the two primes, the two prime exponents and the coefficient (64 bytes each): 22
/// lines. A signature is the PKCS#1 v1.5 (type 1) private-key transform of the 32 ASCII hex
/// digits of the MD5, with no DigestInfo, written as hex in the same way (4 lines and `.`).
/// BOINC's key structures hold at most 1024 bits, so every key is 1024 bits: a weakness of
/// the protocol that Cobble cannot fix alone (docs/security.md).

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include <string>
#include <string_view>

namespace cobble {

/// A key pair in BOINC's text form (the files `code_sign_private` and `code_sign_public`).
struct code_sign_key_pair {
  std::string private_key;
  std::string public_key;
};

/// Generates a 1024-bit RSA key pair (public exponent 65537).
caf::expected<code_sign_key_pair> generate_code_sign_keys();

/// The public key of a private key, both in BOINC's text form.
caf::expected<std::string> public_code_sign_key(std::string_view private_key);

/// The signature text of a file whose MD5 is `md5_hex` (32 hex digits), with `private_key`.
caf::expected<std::string> sign_md5(std::string_view private_key, std::string_view md5_hex);

/// The signature text of a text (BOINC signs a new public key so, with the previous private
/// key: over the MD5 of the text with surrounding whitespace stripped).
caf::expected<std::string> sign_text(std::string_view private_key, std::string_view text);

/// No error when `signature` is `public_key`'s signature of `md5_hex`; otherwise an
/// invalid_argument error that says whether the key, the signature or the match failed.
caf::error
verify_md5(std::string_view public_key, std::string_view md5_hex, std::string_view signature);

/// verify_md5() for a text signed with sign_text().
caf::error
verify_text(std::string_view public_key, std::string_view text, std::string_view signature);

/// A public key in BOINC's text form, written as `cobble key generate` writes it (lower-case
/// hex, 32 bytes a line, nothing after the closing `.`), so that one key has one text; an
/// invalid_argument error that says what is wrong when it is no such key.
caf::expected<std::string> canonical_public_key(std::string_view public_key);

/// A signature in BOINC's text form, written the same way.
caf::expected<std::string> canonical_signature(std::string_view signature);

/// `text` without the whitespace around it (how BOINC compares and signs keys).
std::string_view strip_key_text(std::string_view text);

/// A short name of a key for logs and pages: the first 16 hex digits of the MD5 of its
/// stripped text (equal for equal keys, whatever whitespace surrounds them).
std::string key_fingerprint(std::string_view key_text);

} // namespace cobble
