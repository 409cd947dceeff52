// Fuzz tests of the parsers that read what strangers send: the scheduler request
// (parse_sched_request), the upload header (parse_upload_header) and the admin API's JSON
// bodies (parse_json_body and the parse_* of net/admin_json.hpp).
//
// Each target mutates the checked-in corpus under tests/fuzz/corpus/TARGET/ with
// tests/support/mutator.hpp for a fixed number of iterations (COBBLE_FUZZ_ITERATIONS raises
// it; COBBLE_FUZZ_SEED=S replays the one input a failure names) and asserts what the server
// relies on: no exception escapes, a refusal carries a short UTF-8 message, and an accepted
// input keeps the limits the edge promises (docs/security.md, "Limits a client cannot
// widen"). The ASan/UBSan build runs the same iterations and catches memory errors.

#include "../support/mutator.hpp"
#include "net/admin_json.hpp"
#include "net/app_json.hpp"
#include "net/boinc_xml.hpp"
#include "storage/file_store.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>
#include <typeinfo>

using namespace cobble;
using namespace cobble::net;
using cobble::test::syntax;

namespace {

/// Longest error message the parsers may produce (it is logged and sent back).
constexpr std::size_t max_error_bytes = 1024;

std::filesystem::path corpus_dir(const std::string& target) {
  return std::filesystem::path(COBBLE_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / target;
}

/// Collects the broken properties of one parse.
class problems {
public:
  std::string text;

  void add(const std::string& what) {
    if (!text.empty())
      text += "; ";
    text += what;
  }

  /// A refusal must say why, briefly and in UTF-8.
  void error_message(const std::string& e) {
    if (e.empty())
      add("refused without a message");
    else if (e.size() > max_error_bytes)
      add("error message of " + std::to_string(e.size()) + " bytes");
    else if (!test::is_utf8(e))
      add("error message is not UTF-8: " + test::printable(e, 200));
  }

  /// A text value of a scheduler request: at most `max` bytes of UTF-8.
  void
  text_value(const char* what, const std::string& s, std::size_t max = max_request_text_bytes) {
    if (s.size() > max)
      add(std::string(what) + " has " + std::to_string(s.size()) + " bytes");
    if (!test::is_utf8(s))
      add(std::string(what) + " is not UTF-8");
  }

  /// A number the edge promises finite, and at least `min`.
  void number(const char* what, double v, double min = -HUGE_VAL, double max = HUGE_VAL) {
    if (!std::isfinite(v))
      add(std::string(what) + " is not finite");
    else if (v < min || v > max)
      add(std::string(what) + " is out of range");
  }
};

// -- the scheduler request ---------------------------------------------------------------

void check_request(problems& p, const sched_request& q) {
  if (q.authenticator.empty())
    p.add("accepted without an authenticator");
  p.text_value("authenticator", q.authenticator);
  p.text_value("platform_name", q.platform_name);
  for (double v : {q.resource_share_fraction, q.duration_correction_factor, q.work_req_seconds,
                   q.cpu.req_secs, q.cpu.req_instances, q.cpu.estimated_delay})
    p.number("a request figure", v);
  const auto& h = q.host;
  for (const auto* s :
       {&h.host_cpid, &h.domain_name, &h.p_vendor, &h.p_model, &h.os_name, &h.os_version})
    p.text_value("a host_info text", *s);
  p.number("p_ncpus", h.p_ncpus, 0);
  for (double v : {h.p_fpops, h.p_iops, h.p_membw, h.m_nbytes, h.m_swap, h.d_total, h.d_free})
    p.number("a host_info size", v, 0);
  for (double v : {h.on_frac, h.active_frac, h.gpu_active_frac})
    p.number("a time_stats fraction", v, -1, 1);
  for (const auto& c : q.coprocs) {
    p.number("coproc count", c.count, 0);
    p.number("coproc peak_flops", c.peak_flops, 0);
    for (double v : {c.request.req_secs, c.request.req_instances, c.request.estimated_delay})
      p.number("a coproc request figure", v);
  }
  for (const auto& r : q.results) {
    for (const auto* s : {&r.name, &r.platform, &r.plan_class})
      p.text_value("a result text", *s);
    p.text_value("stderr_out", r.stderr_out, max_stderr_bytes);
    p.number("final_cpu_time", r.final_cpu_time);
    p.number("final_elapsed_time", r.final_elapsed_time);
    p.number("app_units", r.app_units, 0);
    p.number("raw_flops_per_au", r.raw_flops_per_au, 0);
    for (const auto& f : r.files) {
      p.text_value("a file name", f.name);
      p.text_value("a file md5", f.md5_cksum);
      p.number("a file nbytes", f.nbytes);
    }
  }
  for (const auto& av : q.app_versions) {
    for (const auto* s : {&av.app_name, &av.platform, &av.plan_class})
      p.text_value("an app_version text", *s);
    for (double v : {av.avg_ncpus, av.flops, av.coproc_count})
      p.number("an app_version figure", v);
  }
  for (const auto& o : q.other_results) {
    p.text_value("an other_result name", o.name);
    p.text_value("an other_result plan_class", o.plan_class);
  }
  for (const auto& s : q.sequences_held)
    p.text_value("a work sequence name", s);
  for (const auto& u : q.app_unit_versions) {
    p.text_value("an app_unit_version name", u.app_name);
    p.text_value("an app_unit_version plan_class", u.plan_class);
    p.number("seconds_per_app_unit", u.seconds_per_app_unit);
    p.number("raw_flops_per_sec", u.raw_flops_per_sec);
  }
}

/// The properties of parse_sched_request(input); sets `accepted`.
std::string sched_request_problems(std::string_view input, bool& accepted) {
  problems p;
  auto r = parse_sched_request(input);
  accepted = r.ok();
  if (r.ok())
    check_request(p, *r.value);
  else
    p.error_message(r.error);
  return p.text;
}

// -- the upload header -------------------------------------------------------------------

/// The properties of parse_upload_header(input); sets `accepted`.
std::string upload_header_problems(std::string_view input, bool& accepted) {
  problems p;
  auto r = parse_upload_header(input);
  accepted = r.ok();
  if (!r.ok()) {
    p.error_message(r.error);
    return p.text;
  }
  const auto& h = *r.value;
  if (!storage::safe_file_name(h.name))
    p.add("accepted the unsafe name '" + test::printable(h.name, 300) + "'");
  if (h.kind == upload_header::kind_t::get_file_size)
    return p.text;
  if (h.nbytes < 0 || h.offset < 0 || h.max_nbytes < 0)
    p.add("negative nbytes, offset or max_nbytes");
  if (h.offset > h.nbytes)
    p.add("offset beyond nbytes");
  // The data start right after a line that is "<data>" (white space around it): after
  // its '\n', or at the end of a body whose last line it is.
  bool at_end = h.data_offset == input.size() && !input.ends_with('\n');
  if (h.data_offset == 0 || h.data_offset > input.size()
      || (!at_end && input[h.data_offset - 1] != '\n')) {
    p.add("data_offset " + std::to_string(h.data_offset) + " does not follow a line end");
  } else {
    auto head = input.substr(0, at_end ? h.data_offset : h.data_offset - 1);
    auto begin = head.rfind('\n');
    auto line = head.substr(begin == std::string_view::npos ? 0 : begin + 1);
    auto first = line.find_first_not_of(" \t\r\f\v");
    auto last = line.find_last_not_of(" \t\r\f\v");
    if (first == std::string_view::npos || line.substr(first, last - first + 1) != "<data>")
      p.add("data_offset does not follow a <data> line");
  }
  return p.text;
}

// -- the admin API's JSON ----------------------------------------------------------------

template <class T>
void check_parsed(problems& p, const parsed<T>& x) {
  if (!x.value)
    p.error_message(x.error);
}

void check_batch(problems& p, const work_batch& b) {
  if (b.items.empty())
    p.add("accepted an empty batch");
  for (const auto& w : b.items) {
    if (w.app.empty())
      p.add("accepted a spec without an app");
    for (const auto& x : {w.rsc_fpops_est, w.rsc_fpops_bound, w.rsc_memory_bound, w.rsc_disk_bound,
                          w.delay_bound, w.predicted_app_units})
      if (x)
        p.number("a work spec figure", *x);
    for (const auto& in : w.inputs)
      p.number("an input's nbytes", in.nbytes);
  }
}

void check_sequence(problems& p, const sequence_spec& s) {
  if (s.count > 100000 || s.state_every > (1u << 20) || s.replicas > 2)
    p.add("accepted a sequence over its limits");
  if (s.by.empty())
    p.add("accepted a sequence without 'by'");
  p.number("max_result_time", s.max_result_time);
  for (const auto& x :
       {s.rsc_fpops_est, s.rsc_fpops_bound, s.rsc_memory_bound, s.rsc_disk_bound, s.delay_bound})
    if (x)
      p.number("a sequence figure", *x);
}

/// Every admin parser on the JSON of `input`; `accepted` when the text was JSON.
std::string admin_json_problems(std::string_view input, bool& accepted) {
  problems p;
  auto body = parse_json_body(input);
  accepted = body.value.has_value();
  if (!body.value) {
    p.error_message(body.error);
    return p.text;
  }
  const auto& j = *body.value;
  auto batch = parse_work_batch(j);
  check_parsed(p, batch);
  if (batch.value)
    check_batch(p, *batch.value);
  auto seq = parse_sequence_spec(j);
  check_parsed(p, seq);
  if (seq.value)
    check_sequence(p, *seq.value);
  for (auto op : {seq_command::op::extend, seq_command::op::end, seq_command::op::reassign}) {
    auto c = parse_seq_command(j, op);
    check_parsed(p, c);
    if (c.value && (c.value->count > 100000 || c.value->replica > 1 || c.value->by.empty()))
      p.add("accepted a sequence command over its limits");
  }
  check_parsed(p, parse_new_user(j));
  auto app = parse_new_app(j);
  check_parsed(p, app);
  if (app.value && (app.value->app.empty() || app.value->what != app_change::op::add_app))
    p.add("accepted an app without a name");
  auto version = parse_new_version(j, "testapp");
  check_parsed(p, version);
  if (version.value && version.value->version.files.empty())
    p.add("accepted a version without files");
  check_parsed(p, parse_deprecation(j, "testapp", 2));
  auto key = parse_new_key(j);
  check_parsed(p, key);
  if (key.value && key.value->public_key.empty())
    p.add("accepted a key without a public_key");
  auto credit = parse_credit_import(j);
  check_parsed(p, credit);
  if (credit.value)
    for (const auto& r : credit.value->records)
      if (r.app.empty() || !std::isfinite(r.scale) || !std::isfinite(r.expavg_credit))
        p.add("accepted a credit record without an app or with a non-finite figure");
  return p.text;
}

// -- the loop ----------------------------------------------------------------------------

using target_fn = std::function<std::string(std::string_view, bool&)>;

/// Runs `check` on the mutations of the corpus of `target`: `iterations` of them (see
/// fuzz_iterations()), the seed of iteration i being `base_seed + i`.
void fuzz(const std::string& target, syntax kind, std::uint64_t base_seed, std::uint64_t iterations,
          const target_fn& check) {
  auto corpus = test::load_corpus(corpus_dir(target));
  auto replay = test::fuzz_replay_seed();
  auto n = replay != 0 ? 1 : test::fuzz_iterations(iterations);
  std::uint64_t accepted = 0;
  int failures = 0;
  for (std::uint64_t i = 0; i < n && failures < 5; ++i) {
    auto seed = replay != 0 ? replay : base_seed + i;
    test::mutator m(seed, kind);
    const auto& a = corpus[m.below(corpus.size())];
    const auto& b = corpus[m.below(corpus.size())];
    auto input = m.mutate(a.text, b.text);
    if (replay != 0) // the one input, for a debugger or a new corpus entry
      std::ofstream(target + "-" + std::to_string(seed) + ".bin", std::ios::binary) << input;
    std::string broken;
    bool ok = false;
    try {
      broken = check(input, ok);
    } catch (const std::exception& e) {
      broken = std::string("exception escaped (") + typeid(e).name() + "): " + e.what();
    } catch (...) {
      broken = "an exception of unknown type escaped";
    }
    accepted += ok ? 1 : 0;
    if (!broken.empty()) {
      ++failures;
      FAIL_CHECK(target << ", seed " << seed << " (replay with COBBLE_FUZZ_SEED=" << seed
                        << "), mutated from " << a.name << ": " << broken << "\ninput:\n"
                        << test::printable(input));
    }
  }
  // A mutator whose every output is refused (or accepted) tests nothing past the first check.
  if (replay == 0 && failures == 0) {
    INFO(target << ": " << accepted << " of " << n << " mutated inputs accepted");
    CHECK(accepted * 100 >= n);
    CHECK((n - accepted) * 100 >= n);
  }
}

/// The unmutated corpus of `target`: every entry must be accepted (so the corpus cannot rot).
void corpus_accepted(const std::string& target, const target_fn& check) {
  for (const auto& e : test::load_corpus(corpus_dir(target))) {
    INFO(target << "/" << e.name);
    bool ok = false;
    CHECK(check(e.text, ok).empty());
    CHECK(ok);
  }
}

} // namespace

TEST_CASE("fuzz corpus: every entry parses", "[fuzz]") {
  corpus_accepted("sched_request", sched_request_problems);
  corpus_accepted("upload_header", upload_header_problems);
  corpus_accepted("admin_json", admin_json_problems);

  // And each admin entry is accepted by the parser its name starts with.
  for (const auto& e : test::load_corpus(corpus_dir("admin_json"))) {
    INFO(e.name);
    auto j = parse_json_body(e.text);
    REQUIRE(j.value);
    auto starts = [&](std::string_view p) { return e.name.starts_with(p); };
    if (starts("work_"))
      CHECK(parse_work_batch(*j.value).value);
    else if (starts("sequence_"))
      CHECK(parse_sequence_spec(*j.value).value);
    else if (starts("seq_extend"))
      CHECK(parse_seq_command(*j.value, seq_command::op::extend).value);
    else if (starts("seq_end"))
      CHECK(parse_seq_command(*j.value, seq_command::op::end).value);
    else if (starts("seq_reassign") || starts("seq_unassign"))
      CHECK(parse_seq_command(*j.value, seq_command::op::reassign).value);
    else if (starts("new_user"))
      CHECK(parse_new_user(*j.value).value);
    else if (starts("new_app"))
      CHECK(parse_new_app(*j.value).value);
    else if (starts("new_version"))
      CHECK(parse_new_version(*j.value, "testapp").value);
    else if (starts("deprecation"))
      CHECK(parse_deprecation(*j.value, "testapp", 2).value);
    else if (starts("new_key"))
      CHECK(parse_new_key(*j.value).value);
    else if (starts("credit_"))
      CHECK(parse_credit_import(*j.value).value);
    else
      FAIL("admin_json corpus entry names no parser: " << e.name);
  }
}

TEST_CASE("fuzz: scheduler request parser", "[fuzz]") {
  fuzz("sched_request", syntax::xml, 1'000'000, 30000, sched_request_problems);
}

TEST_CASE("fuzz: upload header parser", "[fuzz]") {
  fuzz("upload_header", syntax::xml, 2'000'000, 40000, upload_header_problems);
}

TEST_CASE("fuzz: admin JSON parsers", "[fuzz]") {
  fuzz("admin_json", syntax::json, 3'000'000, 20000, admin_json_problems);
}

// Found by the admin target: nlohmann reports a number beyond a double as out_of_range, which
// is no parse_error; the admin handlers caught only parse_error and answered 500.
TEST_CASE("a JSON body with a number beyond a double is refused as not JSON", "[fuzz]") {
  const std::string body = R"({"app": "testapp", "rsc_fpops_est": 1e400})";
  CHECK_THROWS_AS(nlohmann::json::parse(body), nlohmann::json::out_of_range);
  auto j = parse_json_body(body);
  REQUIRE_FALSE(j.value);
  CHECK_THAT(j.error, Catch::Matchers::StartsWith("the body is not valid JSON: "));
  CHECK_THAT(j.error, Catch::Matchers::Contains("1e400"));
  CHECK_FALSE(parse_json_body("{\"app\": ").value);
  REQUIRE(parse_json_body(R"({"app": "testapp", "rsc_fpops_est": 1e300})").value);
}

// Found by the upload target: the bad number was quoted by its first 40 bytes, which could
// end inside a UTF-8 character or hold invalid bytes, and went so into the reply's <message>.
TEST_CASE("an upload header's bad number is quoted as UTF-8", "[fuzz]") {
  auto body = std::string("<file_upload>\n<file_info>\n<name>f</name>\n</file_info>\n")
              + "<nbytes>1\xf8\x88\x80\x80\x80" + std::string(50, '0') + "</nbytes>\n<data>\nx";
  auto r = parse_upload_header(body);
  REQUIRE_FALSE(r.ok());
  CHECK(test::is_utf8(r.error));
  CHECK_THAT(r.error,
             Catch::Matchers::StartsWith("bad <nbytes> in upload request: '1\xef\xbf\xbd"));
  auto cut = std::string("<file_upload>\n<file_info>\n<name>f</name>\n</file_info>\n<nbytes>")
             + std::string(39, '9') + "\xc3\xa9</nbytes>\n<data>\nx";
  auto r2 = parse_upload_header(cut);
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.error == "bad <nbytes> in upload request: '" + std::string(39, '9') + "'");
}

// Found by the admin target: an unknown key was echoed whole (70 kB keys made 70 kB answers),
// and nlohmann's message quoted invalid UTF-8.
TEST_CASE("admin errors name a long key or bad bytes briefly, in UTF-8", "[fuzz]") {
  nlohmann::json body = {{"app", "testapp"}, {std::string(5000, 'k'), 1}};
  auto batch = parse_work_batch(body);
  REQUIRE_FALSE(batch.value);
  CHECK(batch.error == "unknown field '" + std::string(64, 'k') + "...'");
  auto bad = parse_json_body("{\"app\": \"a\xff" + std::string(5000, 'b') + "\"}");
  REQUIRE_FALSE(bad.value);
  CHECK(test::is_utf8(bad.error));
  CHECK(bad.error.size() <= 512);
}
