// Which app version a host runs: plan classes and the choice by projected FLOPS
// (actors/version_choice.cpp), without actors.

#include "actors/version_choice.hpp"

#include <catch2/catch.hpp>

using namespace cobble;

namespace {

constexpr auto linux64 = "x86_64-pc-linux-gnu";
constexpr auto linux32 = "i686-pc-linux-gnu";

app_version_rec version(std::uint32_t id, const std::string& platform, int num,
                        const std::string& plan_class = {}, resource_type t = resource_type::cpu) {
  app_version_rec v;
  v.id = id;
  v.platform = platform;
  v.version_num = num;
  v.plan_class = plan_class;
  v.resource = static_cast<std::uint8_t>(t);
  v.coproc_count = t == resource_type::cpu ? 0 : 1;
  return v;
}

/// A 4-CPU x86_64 Linux host at 1 GFLOPS per CPU running BOINC 7.20.5, with one NVIDIA GPU
/// (driver 535.23, CUDA 12.2, 8 GiB, OpenCL) at 10 TFLOPS peak.
job_request host() {
  job_request r;
  r.platform = linux64;
  r.alt_platforms = {linux32};
  r.client_version = 72005;
  r.info.p_ncpus = 4;
  r.info.p_fpops = 1e9;
  r.info.coprocs = {{static_cast<std::uint8_t>(resource_type::nvidia), 1}};
  r.info.coproc_peak_flops = {1e13};
  coproc_description gpu;
  gpu.type = resource_type::nvidia;
  gpu.count = 1;
  gpu.driver_version = 53523;
  gpu.cuda_version = 12020;
  gpu.have_cuda = true;
  gpu.have_opencl = true;
  gpu.total_ram = 8.0 * 1024 * 1024 * 1024;
  r.coprocs = {gpu};
  return r;
}

config::plan_class_config mt(int max_threads) {
  config::plan_class_config c;
  c.name = "mt";
  c.max_threads = max_threads;
  c.nthreads_cmdline = true;
  return c;
}

config::plan_class_config cuda(const std::string& name, int min_cuda, double min_ram_mb = 0) {
  config::plan_class_config c;
  c.name = name;
  c.gpu_type = "nvidia";
  c.cuda = true;
  c.min_cuda_version = min_cuda;
  c.min_gpu_ram_mb = min_ram_mb;
  c.cpu_frac = 0.2;
  return c;
}

} // namespace

TEST_CASE("the newest version of a platform is chosen, deprecated ones never", "[version_choice]") {
  app_rec app;
  app.name = "fold";
  app.versions = {version(1, linux64, 100), version(2, linux64, 102), version(3, linux64, 101)};
  auto p = choose_app_version(app, host(), resource_type::cpu, {});
  REQUIRE(p);
  CHECK(p->version->version_num == 102);
  CHECK(p->avg_ncpus == 1);
  CHECK(p->flops == Approx(1e9));
  CHECK(p->cmdline.empty());
  app.versions[1].deprecated = true;
  p = choose_app_version(app, host(), resource_type::cpu, {});
  REQUIRE(p);
  CHECK(p->version->version_num == 101);
  // No version for the GPU: nothing, and nothing to tell (the app does not run there).
  CHECK_FALSE(choose_app_version(app, host(), resource_type::nvidia, {}));
  CHECK(no_version_message(app, host(), resource_type::nvidia, {}).empty());
}

TEST_CASE("alternate platforms are used, the primary preferred at equal speed",
          "[version_choice]") {
  app_rec app;
  app.name = "fold";
  app.versions = {version(1, linux32, 200)};
  auto r = host();
  auto p = choose_app_version(app, r, resource_type::cpu, {});
  REQUIRE(p);
  CHECK(p->version->platform == linux32);
  app.versions.push_back(version(2, linux64, 100));
  p = choose_app_version(app, r, resource_type::cpu, {});
  REQUIRE(p);
  CHECK(p->version->platform == linux64); // same FLOPS: the primary platform, not the newer
  r.alt_platforms.clear();
  app.versions.erase(app.versions.begin() + 1);
  CHECK_FALSE(choose_app_version(app, r, resource_type::cpu, {}));
  CHECK(no_version_message(app, r, resource_type::cpu, {})
        == "This project has no version of fold for your computer's CPUs "
           "(x86_64-pc-linux-gnu).");
}

TEST_CASE("a multi-threaded class uses the host's CPUs up to its thread count",
          "[version_choice]") {
  app_rec app;
  app.name = "fold";
  app.versions = {version(1, linux64, 100), version(2, linux64, 100, "mt")};
  std::vector<config::plan_class_config> classes{mt(8)};
  auto r = host();
  auto p = choose_app_version(app, r, resource_type::cpu, classes);
  REQUIRE(p);
  CHECK(p->version->plan_class == "mt"); // 4 threads: four times the single-threaded FLOPS
  CHECK(p->avg_ncpus == 4);
  CHECK(p->flops == Approx(4e9));
  CHECK(p->cmdline == "--nthreads 4");
  classes[0].max_threads = 2;
  p = choose_app_version(app, r, resource_type::cpu, classes);
  REQUIRE(p);
  CHECK(p->avg_ncpus == 2);
  CHECK(p->cmdline == "--nthreads 2");
  // A host with too few CPUs for min_ncpus runs the plain version.
  classes[0].min_ncpus = 8;
  p = choose_app_version(app, r, resource_type::cpu, classes);
  REQUIRE(p);
  CHECK(p->version->plan_class.empty());
  CHECK(plan_class_refusal(classes[0], r, resource_type::cpu)
        == "plan class mt needs 8 CPUs (this computer has 4)");
  // projected_flops_scale can make a class lose or win.
  classes[0].min_ncpus = 0;
  classes[0].projected_flops_scale = 0.4;
  p = choose_app_version(app, r, resource_type::cpu, classes);
  REQUIRE(p);
  CHECK(p->version->plan_class.empty()); // 2 threads × 0.4 = 0.8 of the plain version
}

TEST_CASE("GPU classes test the device, its driver, CUDA and memory", "[version_choice]") {
  app_rec app;
  app.name = "fold";
  app.user_friendly_name = "Protein folding";
  app.versions = {version(1, linux64, 100, "cuda118", resource_type::nvidia)};
  std::vector<config::plan_class_config> classes{cuda("cuda118", 11080, 2048)};
  classes[0].gpu_ram_used_mb = 1024;
  auto r = host();
  auto p = choose_app_version(app, r, resource_type::nvidia, classes);
  REQUIRE(p);
  CHECK(p->coproc_count == 1);
  CHECK(p->avg_ncpus == Approx(0.2));
  CHECK(p->gpu_ram == Approx(1024.0 * 1024 * 1024));
  CHECK(p->flops == Approx(1e13));

  auto refused = [&](const job_request& req) {
    CHECK_FALSE(choose_app_version(app, req, resource_type::nvidia, classes));
    return no_version_message(app, req, resource_type::nvidia, classes);
  };
  auto old_cuda = r;
  old_cuda.coprocs[0].cuda_version = 10020;
  CHECK(refused(old_cuda)
        == "No tasks of Protein folding for this computer: plan class cuda118 needs CUDA 11.8 "
           "or later (this computer has 10.2).");
  auto small = r;
  small.coprocs[0].total_ram = 1024.0 * 1024 * 1024;
  CHECK_THAT(refused(small), Catch::Contains("needs 2048 MB of GPU memory"));
  auto no_cuda = r;
  no_cuda.coprocs[0].have_cuda = false;
  no_cuda.coprocs[0].cuda_version = 0;
  CHECK_THAT(refused(no_cuda), Catch::Contains("needs CUDA"));
  auto no_gpu = r;
  no_gpu.info.coprocs.clear();
  no_gpu.coprocs.clear();
  CHECK_THAT(refused(no_gpu), Catch::Contains("needs an NVIDIA GPU"));
  classes[0].min_driver_version = 54000;
  CHECK_THAT(refused(r), Catch::Contains("needs GPU driver version 54000 or later (this "
                                         "computer has 53523)"));
  // A figure the client did not report is not tested (as BOINC's plan classes do).
  auto unreported = r;
  unreported.coprocs[0].driver_version = 0;
  CHECK(choose_app_version(app, unreported, resource_type::nvidia, classes));
  classes[0].min_driver_version = 0;
  classes[0].min_core_client_version = 72200;
  CHECK_THAT(refused(r), Catch::Contains("needs BOINC 7.22.0 or later (this computer runs "
                                         "7.20.5)"));
}

TEST_CASE("among GPU classes the fastest the host can run is chosen", "[version_choice]") {
  app_rec app;
  app.name = "fold";
  app.versions = {version(1, linux64, 100, "cuda118", resource_type::nvidia),
                  version(2, linux64, 100, "opencl_nvidia", resource_type::nvidia)};
  auto opencl = cuda("opencl_nvidia", 0);
  opencl.cuda = false;
  opencl.opencl = true;
  opencl.projected_flops_scale = 0.8;
  std::vector<config::plan_class_config> classes{cuda("cuda118", 11080), opencl};
  auto r = host();
  auto p = choose_app_version(app, r, resource_type::nvidia, classes);
  REQUIRE(p);
  CHECK(p->version->plan_class == "cuda118");
  r.coprocs[0].cuda_version = 10020; // too old for CUDA: OpenCL it is
  p = choose_app_version(app, r, resource_type::nvidia, classes);
  REQUIRE(p);
  CHECK(p->version->plan_class == "opencl_nvidia");
  CHECK(p->flops == Approx(0.8e13));
  // Both refused: both reasons, in one message.
  r.coprocs[0].have_opencl = false;
  auto text = no_version_message(app, r, resource_type::nvidia, classes);
  CHECK_THAT(text, Catch::Contains("cuda118 needs CUDA 11.8"));
  CHECK_THAT(text, Catch::Contains("opencl_nvidia needs OpenCL"));
}

TEST_CASE("a class for another resource and an undefined class", "[version_choice]") {
  app_rec app;
  app.name = "fold";
  app.versions = {version(1, linux64, 100, "mt", resource_type::nvidia)};
  // The version is a GPU version, the class a CPU class: never a fit.
  CHECK_FALSE(choose_app_version(app, host(), resource_type::nvidia, {mt(4)}));
  CHECK_THAT(plan_class_refusal(mt(4), host(), resource_type::nvidia),
             Catch::Contains("is for CPUs"));
  // A class the project does not define asks nothing beyond the resource.
  auto p = choose_app_version(app, host(), resource_type::nvidia, {});
  REQUIRE(p);
  CHECK(p->coproc_count == 1);
  CHECK(p->flops == Approx(1e13));
}
