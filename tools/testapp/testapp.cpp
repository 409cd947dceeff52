// testapp: the app Cobble's end-to-end test runs under a real BOINC client (anonymous
// platform, docs/real-clients.md). A plain program: no BOINC library.
//
// The client starts it in <data dir>/slots/N/ with the workunit's command line. The server
// sends every input and output file_ref with <copy_file/>, so the slot holds real files:
//
//   in.txt               read if present (absent: empty input)
//   out.txt              written: the deterministic result
//   boinc_finish_called  written last, "0\n": tells the client the job succeeded
//   boinc_mmap_file, init_data.xml  the client's shared memory, if any (see --wall-seconds)
//
// Usage: testapp [--iterations N | --seconds S] [--wall-seconds S] [--output-bytes N]
//                [--input NAME] [--output NAME] [--fail CODE]
//
// --iterations N  rounds of the hash chain (default 100000).
// --seconds S     nominal CPU seconds: N = S * 200,000,000 rounds (a fixed rate, roughly one
//                 second of one modern core). It is never measured, so the result depends on
//                 the arguments and the input only, never on the host's speed or load.
// --wall-seconds S  after the work, stay (idle) until S seconds of wall-clock time have
//                 passed since the start, then finish as usual: a job of a known elapsed time
//                 (a BOINC client measures elapsed time on the wall clock), e.g. one that runs
//                 past its elapsed-time limit. While waiting the app honours the client's
//                 <quit/> and <abort/> requests like a BOINC-API app: it exits (code 1, no
//                 output, no finish file) instead of making the client wait a minute before
//                 it kills it. The requests come on the first message channel of the client's
//                 shared memory (a flag byte, then the message text): the slot's
//                 boinc_mmap_file, or the System V segment of ftok("init_data.xml", 1) that
//                 the client creates for apps without an <api_version>; without either the
//                 app just waits. out.txt does not depend on S.
// --output-bytes N  pad out.txt with deterministic filler lines to exactly N bytes (if N is
//                 larger than the result text; at most 64 MiB), e.g. to exercise uploads of
//                 8192 bytes or more, which start with a size query.
// --input NAME, --output NAME  other file names than in.txt and out.txt.
// --fail CODE     exit with CODE at once, without out.txt or the finish file (error tests).
//
// out.txt is bit-identical on every host: only fixed-width unsigned 64-bit integer arithmetic,
// no floating point, no time, no addresses. Its text:
//
//   cobble-testapp 1
//   input_bytes <size of in.txt>
//   input_fnv1a64 <16 hex digits: FNV-1a 64 of in.txt>
//   iterations <N>
//   result <16 hex digits: the chain after N rounds>
//   [filler lines "pad <16 hex digits>", the last one cut to length, with --output-bytes]
//
// Exit codes: 0 success; CODE for --fail; 1 quit or aborted by the client (--wall-seconds);
// 2 bad arguments; 3 cannot read or write a file.

#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <system_error>

#include <fcntl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

constexpr std::uint64_t iterations_per_second = 200'000'000;
constexpr std::uint64_t max_iterations = 1'000'000'000'000ULL;
constexpr std::uint64_t max_output_bytes = 64ULL << 20;

std::uint64_t fnv1a64(const std::string& data) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

/// One SplitMix64 round: a cheap, well-mixed, fully specified 64-bit step.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

bool parse_u64(const char* s, std::uint64_t& out) {
  if (s == nullptr || *s == '\0' || *s == '-')
    return false;
  errno = 0;
  char* end = nullptr;
  auto v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  out = v;
  return true;
}

/// A non-negative decimal with at most 6 fractional digits, as millionths (no floating point,
/// so "--seconds 0.5" gives the same count everywhere).
bool parse_micros(const char* s, std::uint64_t& out) {
  if (s == nullptr || *s == '\0')
    return false;
  std::uint64_t whole = 0, frac = 0;
  int frac_digits = 0;
  bool dot = false, any = false;
  for (const char* p = s; *p; ++p) {
    if (*p == '.' && !dot) {
      dot = true;
      continue;
    }
    if (*p < '0' || *p > '9')
      return false;
    any = true;
    if (dot) {
      if (frac_digits == 6)
        return false;
      frac = frac * 10 + static_cast<std::uint64_t>(*p - '0');
      ++frac_digits;
    } else {
      whole = whole * 10 + static_cast<std::uint64_t>(*p - '0');
      if (whole > 1'000'000'000ULL)
        return false;
    }
  }
  for (; frac_digits < 6; ++frac_digits)
    frac *= 10;
  out = whole * 1'000'000ULL + frac;
  return any;
}

bool read_all(const char* name, std::string& out) {
  FILE* f = std::fopen(name, "rb");
  if (f == nullptr)
    return errno == ENOENT; // absent: empty input
  char buf[65536];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    out.append(buf, n);
  bool ok = !std::ferror(f);
  std::fclose(f);
  return ok;
}

bool write_all(const char* name, const std::string& data) {
  FILE* f = std::fopen(name, "wb");
  if (f == nullptr)
    return false;
  bool ok = std::fwrite(data.data(), 1, data.size(), f) == data.size();
  ok = (std::fclose(f) == 0) && ok;
  return ok;
}

double monotonic_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// The client's requests to the app: the first message channel (process control) of the
/// shared memory a BOINC client gives a running app. A channel is 1024 bytes: byte 0 is
/// non-zero while a message waits, the NUL-terminated text follows; the reader takes a
/// message by clearing byte 0. The client maps the memory from the slot's boinc_mmap_file
/// for apps of BOINC API 6 or later (app_info.xml <api_version>), else it is a System V
/// segment whose key is ftok() of the slot's init_data.xml with id 1.
class control_channel {
public:
  static constexpr std::size_t size = 1024;

  /// Attaches to the client's shared memory if there is one; otherwise inactive.
  control_channel() {
    int fd = ::open("boinc_mmap_file", O_RDWR);
    if (fd >= 0) {
      struct stat st {};
      if (::fstat(fd, &st) == 0 && st.st_size >= static_cast<off_t>(size)) {
        void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p != MAP_FAILED) {
          mem_ = static_cast<volatile char*>(p);
          mapped_ = true;
        }
      }
      ::close(fd);
      return;
    }
    key_t key = ::ftok("init_data.xml", 1);
    if (key == -1)
      return;
    int id = ::shmget(key, 0, 0);
    if (id == -1)
      return;
    void* p = ::shmat(id, nullptr, 0);
    if (p != reinterpret_cast<void*>(-1))
      mem_ = static_cast<volatile char*>(p);
  }
  control_channel(const control_channel&) = delete;
  control_channel& operator=(const control_channel&) = delete;
  ~control_channel() {
    if (mem_ == nullptr)
      return;
    if (mapped_)
      ::munmap(const_cast<char*>(mem_), size);
    else
      ::shmdt(const_cast<char*>(mem_));
  }

  /// Takes the waiting message, if any: true when it asks the app to quit or abort.
  /// (Suspend and resume requests are taken and ignored: this app only waits.)
  bool stop_requested() {
    if (mem_ == nullptr || mem_[0] == 0)
      return false;
    std::string text;
    for (std::size_t i = 1; i < size && mem_[i] != 0; ++i)
      text.push_back(mem_[i]);
    mem_[0] = 0;
    return text.find("<quit/>") != std::string::npos || text.find("<abort/>") != std::string::npos;
  }

private:
  volatile char* mem_ = nullptr;
  bool mapped_ = false;
};

/// Waits until `seconds` after `start` (monotonic), checking the client's requests every
/// 50 ms; false when the client asked the app to quit or abort.
bool wait_until(double start, double seconds) {
  control_channel channel;
  for (;;) {
    if (channel.stop_requested())
      return false;
    double left = start + seconds - monotonic_seconds();
    if (left <= 0)
      return true;
    double step = left < 0.05 ? left : 0.05;
    timespec ts{};
    ts.tv_sec = 0;
    ts.tv_nsec = static_cast<long>(step * 1e9);
    ::nanosleep(&ts, nullptr);
  }
}

int usage(const char* why) {
  std::fprintf(stderr,
               "testapp: %s\nusage: testapp [--iterations N | --seconds S] [--wall-seconds S] "
               "[--output-bytes N] [--input NAME] [--output NAME] [--fail CODE]\n",
               why);
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  const double start = monotonic_seconds();
  std::uint64_t iterations = 100'000;
  std::uint64_t wall_micros = 0;
  std::string input = "in.txt";
  std::string output = "out.txt";
  std::uint64_t output_bytes = 0;
  bool have_amount = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (arg == "--fail") {
      std::uint64_t code = 0;
      if (!parse_u64(value, code) || code == 0 || code > 255)
        return usage("--fail needs an exit code 1..255");
      std::fprintf(stderr, "testapp: failing with exit code %" PRIu64 " as asked\n", code);
      return static_cast<int>(code);
    } else if (arg == "--iterations" || arg == "--seconds") {
      if (have_amount)
        return usage("give --iterations or --seconds once");
      have_amount = true;
      if (arg == "--iterations") {
        if (!parse_u64(value, iterations) || iterations > max_iterations)
          return usage("--iterations needs an integer 0..1e12");
      } else {
        std::uint64_t micros = 0;
        if (!parse_micros(value, micros))
          return usage("--seconds needs a number like 2 or 0.25");
        // micros * 200 = seconds * 200e6; exact, no rounding.
        iterations = micros * (iterations_per_second / 1'000'000ULL);
      }
      ++i;
    } else if (arg == "--wall-seconds") {
      if (!parse_micros(value, wall_micros))
        return usage("--wall-seconds needs a number like 2 or 0.25");
      ++i;
    } else if (arg == "--output-bytes") {
      if (!parse_u64(value, output_bytes) || output_bytes > max_output_bytes)
        return usage("--output-bytes needs an integer 0..67108864");
      ++i;
    } else if (arg == "--input" || arg == "--output") {
      if (value == nullptr || *value == '\0')
        return usage("--input and --output need a file name");
      (arg == "--input" ? input : output) = value;
      ++i;
    } else {
      return usage(("unknown argument '" + arg + "'").c_str());
    }
  }

  std::string data;
  if (!read_all(input.c_str(), data)) {
    std::fprintf(stderr, "testapp: cannot read %s: %s\n", input.c_str(),
                 std::generic_category().message(errno).c_str());
    return 3;
  }
  const std::uint64_t input_hash = fnv1a64(data);
  std::uint64_t h = input_hash ^ static_cast<std::uint64_t>(data.size());
  for (std::uint64_t i = 0; i < iterations; ++i)
    h = mix(h ^ i);

  char text[256];
  std::snprintf(text, sizeof text,
                "cobble-testapp 1\ninput_bytes %zu\ninput_fnv1a64 %016" PRIx64
                "\niterations %" PRIu64 "\nresult %016" PRIx64 "\n",
                data.size(), input_hash, iterations, h);
  if (wall_micros > 0 && !wait_until(start, static_cast<double>(wall_micros) * 1e-6)) {
    std::fprintf(stderr, "testapp: the client asked the app to stop; exiting\n");
    return 1;
  }
  std::string result = text;
  if (result.size() < output_bytes) {
    for (std::uint64_t pad = h; result.size() < output_bytes;) {
      pad = mix(pad);
      char line[32];
      std::snprintf(line, sizeof line, "pad %016" PRIx64 "\n", pad);
      result += line;
    }
    result.resize(output_bytes);
  }
  if (!write_all(output.c_str(), result)) {
    std::fprintf(stderr, "testapp: cannot write %s: %s\n", output.c_str(),
                 std::generic_category().message(errno).c_str());
    return 3;
  }
  std::fprintf(stderr, "testapp: %zu input bytes, %" PRIu64 " iterations, result %016" PRIx64 "\n",
               data.size(), iterations, h);
  // Last: the client treats exit 0 without this file as a crash and restarts the job.
  if (!write_all("boinc_finish_called", "0\n")) {
    std::fprintf(stderr, "testapp: cannot write boinc_finish_called: %s\n",
                 std::generic_category().message(errno).c_str());
    return 3;
  }
  return 0;
}
