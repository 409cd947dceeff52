// tools/testapp as a child process: --wall-seconds gives a job of a known elapsed time with
// the same output, and the app obeys a BOINC client's quit and abort requests in the slot's
// boinc_mmap_file (the real client's side is tests/e2e/autoflops_e2e_test.cpp).

#include "../support/process.hpp"
#include "../support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/ipc.h>
#include <sys/shm.h>

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

struct run_result {
  int code = -1;
  std::string output;
  double seconds = 0;
};

run_result run_testapp(const fs::path& dir, std::vector<std::string> args) {
  std::vector<std::string> argv{cobble::test::program("tools/testapp/testapp")};
  argv.insert(argv.end(), args.begin(), args.end());
  cobble::test::spawn_options opts;
  opts.cwd = dir;
  auto start = steady::now();
  cobble::test::child_process p{argv, opts};
  run_result r;
  while (auto line = p.read_line(60s))
    r.output += *line + "\n";
  r.code = p.wait(60s).value_or(-1);
  r.seconds = std::chrono::duration<double>(steady::now() - start).count();
  return r;
}

std::string slurp(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A client's shared memory file as the app sees it: 8 channels of 1024 bytes, with `message`
/// waiting in the first one (process control) when it is not empty.
void write_shared_memory(const fs::path& file, const std::string& message) {
  std::string mem(std::size_t{8} * 1024, '\0');
  if (!message.empty()) {
    mem[0] = 1;
    mem.replace(1, message.size(), message);
  }
  std::ofstream out{file, std::ios::binary | std::ios::trunc};
  out << mem;
}

/// The System V segment a client creates for an app without <api_version>: key ftok() of the
/// slot's init_data.xml with id 1, 8 channels of 1024 bytes. Removed at the end.
struct sysv_shared_memory {
  int id = -1;
  char* mem = nullptr;
  explicit sysv_shared_memory(const fs::path& slot) {
    // ftok's key comes from the file's inode: a segment a killed BOINC client left behind
    // (the end-to-end tests' clients) may hold it. Then the file is made again, with another
    // inode, as a client would meet the same clash with a stale segment.
    for (int attempt = 0; attempt < 20 && id == -1; ++attempt) {
      auto file = slot / "init_data.xml";
      auto kept = slot / ("init_data.xml." + std::to_string(attempt));
      if (attempt > 0)
        fs::rename(file, kept); // keeps the old inode taken, so the next file gets another
      std::ofstream{file} << "<app_init_data/>\n";
      key_t key = ::ftok(file.c_str(), 1);
      REQUIRE(key != -1);
      id = ::shmget(key, std::size_t{8} * 1024, IPC_CREAT | IPC_EXCL | 0600);
      if (id == -1)
        REQUIRE(errno == EEXIST);
    }
    REQUIRE(id != -1);
    void* p = ::shmat(id, nullptr, 0);
    REQUIRE(p != reinterpret_cast<void*>(-1));
    mem = static_cast<char*>(p);
    std::memset(mem, 0, std::size_t{8} * 1024);
  }
  sysv_shared_memory(const sysv_shared_memory&) = delete;
  sysv_shared_memory& operator=(const sysv_shared_memory&) = delete;
  ~sysv_shared_memory() {
    if (mem != nullptr)
      ::shmdt(mem);
    if (id != -1)
      ::shmctl(id, IPC_RMID, nullptr);
  }
  void send(const std::string& message) {
    std::memcpy(mem + 1, message.c_str(), message.size() + 1);
    mem[0] = 1;
  }
};

} // namespace

TEST_CASE("testapp --wall-seconds runs that long and writes the plain run's output", "[testapp]") {
  cobble::test::temp_dir plain{"testapp"}, waited{"testapp"};
  auto a = run_testapp(plain.path(), {"--iterations", "5000"});
  REQUIRE(a.code == 0);
  auto b = run_testapp(waited.path(), {"--iterations", "5000", "--wall-seconds", "0.5"});
  INFO(b.output);
  REQUIRE(b.code == 0);
  CHECK(b.seconds >= 0.5);
  CHECK(slurp(waited.path() / "out.txt") == slurp(plain.path() / "out.txt"));
  CHECK(slurp(waited.path() / "boinc_finish_called") == "0\n");

  auto bad = run_testapp(waited.path(), {"--wall-seconds", "soon"});
  CHECK(bad.code == 2);
  CHECK(bad.output.find("--wall-seconds needs a number") != std::string::npos);
}

TEST_CASE("testapp stops waiting when the client asks it to abort or quit", "[testapp]") {
  for (const std::string request : {"<abort/>", "<quit/>"}) {
    INFO(request);
    cobble::test::temp_dir dir{"testapp"};
    write_shared_memory(dir.path() / "boinc_mmap_file", request);
    auto r = run_testapp(dir.path(), {"--iterations", "1000", "--wall-seconds", "60"});
    INFO(r.output);
    CHECK(r.code == 1);
    CHECK(r.seconds < 30); // not the 60 s it would wait otherwise
    CHECK(r.output.find("asked the app to stop") != std::string::npos);
    CHECK_FALSE(fs::exists(dir.path() / "out.txt"));
    CHECK_FALSE(fs::exists(dir.path() / "boinc_finish_called"));
    CHECK(slurp(dir.path() / "boinc_mmap_file")[0] == 0); // the message was taken
  }
}

TEST_CASE("testapp reads the client's System V shared memory too", "[testapp]") {
  cobble::test::temp_dir dir{"testapp"};
  sysv_shared_memory shm{dir.path()};
  shm.send("<abort/>");
  auto r = run_testapp(dir.path(), {"--iterations", "1000", "--wall-seconds", "60"});
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK(r.seconds < 30);
  CHECK_FALSE(fs::exists(dir.path() / "boinc_finish_called"));
  CHECK(shm.mem[0] == 0); // the message was taken
}

TEST_CASE("testapp takes a suspend request and keeps going", "[testapp]") {
  cobble::test::temp_dir dir{"testapp"};
  write_shared_memory(dir.path() / "boinc_mmap_file", "<suspend/>");
  auto r = run_testapp(dir.path(), {"--iterations", "1000", "--wall-seconds", "0.3"});
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(r.seconds >= 0.3);
  CHECK(slurp(dir.path() / "boinc_finish_called") == "0\n");
  CHECK(slurp(dir.path() / "boinc_mmap_file")[0] == 0);
}
