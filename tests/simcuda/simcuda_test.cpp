// Tests of the simulated CUDA libraries. Every scenario runs in a fresh child process (the sim
// reads its SIMCUDA_* configuration once per process); this process never loads the sim itself.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

extern char **environ;

namespace {

const std::string kSimDir = SIMCUDA_DIR;
const std::string kScenarioDir = SIMCUDA_SCENARIO_DIR;
const std::string kSourceDir = SIMCUDA_SOURCE_DIR;
const std::string kRealCudart = SIMCUDA_REAL_CUDART;
const std::string kRealStub = SIMCUDA_REAL_STUB;

struct Result {
  int exit_code = -1;  // -1: killed by a signal
  std::string output;  // stdout and stderr, interleaved
};

// Runs argv with this process's environment minus SIMCUDA_*/LD_DEBUG*, with LD_LIBRARY_PATH set to
// the sim dir (or removed when sim_path is false), plus `extra` ("NAME=value").
Result RunProgram(const std::vector<std::string> &argv, const std::vector<std::string> &extra = {},
           bool sim_path = true) {
  std::vector<std::string> env;
  for (char **e = environ; *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("SIMCUDA_", 0) == 0 || kv.rfind("LD_DEBUG", 0) == 0 || kv.rfind("LD_LIBRARY_PATH=", 0) == 0)
      continue;
    env.push_back(kv);
  }
  if (sim_path) env.push_back("LD_LIBRARY_PATH=" + kSimDir);
  env.insert(env.end(), extra.begin(), extra.end());
  std::vector<char *> cargv, cenv;
  for (auto &s : argv) cargv.push_back(const_cast<char *>(s.c_str()));
  for (auto &s : env) cenv.push_back(const_cast<char *>(s.c_str()));
  cargv.push_back(nullptr);
  cenv.push_back(nullptr);

  int fds[2];
  if (pipe(fds) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  close(fds[1]);
  Result r;
  char buf[65536];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) r.output.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::vector<std::string> Lines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

bool Exists(const std::string &path) { return !path.empty() && access(path.c_str(), R_OK) == 0; }
// Why a comparison with the real library is skipped: built without the toolkit, or not there.
std::string Missing(const std::string &path) {
  return path.empty() ? "built without the CUDA Toolkit" : "no " + path;
}

void RunScenario(const std::string &program, const std::string &name, bool sim_path = true) {
  Result r = RunProgram({kScenarioDir + "/" + program, name}, {}, sim_path);
  if (r.exit_code == 77) GTEST_SKIP() << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

std::string TempPath(const char *tag) {
  char path[] = "/tmp/simcuda_testXXXXXX";
  int fd = mkstemp(path);
  if (fd >= 0) close(fd);
  return std::string(path) + "." + tag;
}

std::string ReadFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::set<std::string> DynamicSymbols(const std::string &lib) {
  std::set<std::string> out;
  FILE *p = popen(("nm -D --defined-only '" + lib + "' 2>/dev/null").c_str(), "r");
  if (!p) return out;
  char line[1024];
  while (fgets(line, sizeof line, p)) {
    std::istringstream in(line);
    std::string addr, type, name;
    if (in >> addr >> type >> name) out.insert(name.substr(0, name.find('@')));
  }
  pclose(p);
  return out;
}

}  // namespace

// ---- scenario programs ------------------------------------------------------------------------
#define DRIVER_SCENARIO(name) \
  TEST(SimDriver, name) { RunScenario("sim_driver_scenarios", #name); }
DRIVER_SCENARIO(init_and_context_errors)
DRIVER_SCENARIO(no_device)
DRIVER_SCENARIO(forced_init_error)
DRIVER_SCENARIO(device_info)
DRIVER_SCENARIO(meminfo_context_and_other)
DRIVER_SCENARIO(alloc_rounding_and_first_fit)
DRIVER_SCENARIO(fragmentation)
DRIVER_SCENARIO(error_codes)
DRIVER_SCENARIO(proc_address)
DRIVER_SCENARIO(pools)
DRIVER_SCENARIO(vmm)
DRIVER_SCENARIO(managed_and_host)
DRIVER_SCENARIO(copies)
DRIVER_SCENARIO(modules)
DRIVER_SCENARIO(threads)
DRIVER_SCENARIO(device_faults)
DRIVER_SCENARIO(device_fault_assert)
DRIVER_SCENARIO(hanging_kernel)

#define RUNTIME_SCENARIO(name) \
  TEST(SimRuntime, name) { RunScenario("sim_runtime_scenarios", #name); }
RUNTIME_SCENARIO(no_device)
RUNTIME_SCENARIO(old_driver)
RUNTIME_SCENARIO(basics)
RUNTIME_SCENARIO(pools)
RUNTIME_SCENARIO(proc_lookups)
TEST(SimRuntime, no_driver) { RunScenario("sim_runtime_scenarios", "no_driver", /*sim_path=*/false); }

TEST(SimScenarios, EveryScenarioHasATest) {
  // Keep the TEST lists above in sync with the programs' own lists.
  EXPECT_EQ(RunProgram({kScenarioDir + "/sim_driver_scenarios", "--list"}).output,
            "init_and_context_errors\nno_device\nforced_init_error\ndevice_info\nmeminfo_context_and_other\n"
            "alloc_rounding_and_first_fit\nfragmentation\nerror_codes\nproc_address\npools\nvmm\n"
            "managed_and_host\ncopies\nmodules\nthreads\ndevice_faults\ndevice_fault_assert\nhanging_kernel\n");
  EXPECT_EQ(RunProgram({kScenarioDir + "/sim_runtime_scenarios", "--list"}).output,
            "no_driver\nno_device\nold_driver\nbasics\npools\nproc_lookups\n");
}

// ---- the runtime reaches the driver only via dlopen + dlsym("cuGetProcAddress_v2") ----------
TEST(SimRuntime, OnlyBindsCuGetProcAddressV2) {
  Result r = RunProgram({kScenarioDir + "/sim_runtime_scenarios", "proc_lookups"}, {"LD_DEBUG=bindings"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::set<std::string> to_driver;  // "source -> symbol" for every binding resolved in libcuda.so.1
  for (const std::string &l : Lines(r.output)) {
    size_t file = l.find("binding file "), to = l.find(" to "), sym = l.find("symbol `");
    if (file == std::string::npos || to == std::string::npos || sym == std::string::npos) continue;
    std::string target = l.substr(to + 4, l.find(' ', to + 4) - to - 4);
    if (target.size() < 13 || target.compare(target.size() - 13, 13, "/libcuda.so.1") != 0) continue;
    std::string source = l.substr(file + 13, l.find(' ', file + 13) - file - 13);
    std::string name = l.substr(sym + 8, l.find('\'', sym + 8) - sym - 8);
    to_driver.insert(source.substr(source.rfind('/') + 1) + " -> " + name);
  }
  // dlsym() bindings are reported with the handle's object as "file"; with -Bsymbolic-functions
  // the driver binds nothing to itself, so these are exactly the dlsym() lookups.
  EXPECT_EQ(to_driver, (std::set<std::string>{"libcuda.so.1 -> cuGetProcAddress_v2",
                                              "libcuda.so.1 -> simcuda_debug_proc_lookups"}))
      << r.output.substr(0, 4000);
}

// ---- exported names match the real libraries -------------------------------------------------
TEST(SimExports, DriverNamesExistInRealStub) {
  if (!Exists(kRealStub)) GTEST_SKIP() << Missing(kRealStub);
  std::set<std::string> real = DynamicSymbols(kRealStub), sim = DynamicSymbols(kSimDir + "/libcuda.so.1");
  if (real.empty() || sim.empty()) GTEST_SKIP() << "nm unavailable";
  size_t checked = 0;
  for (const std::string &s : sim) {
    if (s.rfind("simcuda_debug_", 0) == 0) continue;
    EXPECT_TRUE(real.count(s)) << s << " is not exported by the real driver stub";
    ++checked;
  }
  EXPECT_EQ(checked, 104u);  // the entries of sim_driver_entries.h
}

TEST(SimExports, RuntimeNamesAndVersionNodeMatchRealCudart) {
  if (!Exists(kRealCudart)) GTEST_SKIP() << Missing(kRealCudart);
  std::set<std::string> real = DynamicSymbols(kRealCudart), sim = DynamicSymbols(kSimDir + "/libcudart.so.13");
  if (real.empty() || sim.empty()) GTEST_SKIP() << "nm unavailable";
  for (const std::string &s : sim) EXPECT_TRUE(real.count(s)) << s << " is not exported by the real libcudart";
  for (const char *s : {"cudaMalloc", "cudaGetDeviceProperties", "cudaMallocFromPoolAsync", "cudaMemcpy"})
    EXPECT_TRUE(sim.count(s)) << s;
  FILE *p = popen(("objdump -T '" + kSimDir + "/libcudart.so.13' 2>/dev/null").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char line[1024];
  while (fgets(line, sizeof line, p)) out += line;
  pclose(p);
  if (out.empty()) GTEST_SKIP() << "objdump unavailable";
  size_t versioned = 0;
  for (const std::string &l : Lines(out))
    if (l.find(" cuda") != std::string::npos && l.find(".text") != std::string::npos) {
      EXPECT_NE(l.find("libcudart.so.13"), std::string::npos) << l;
      ++versioned;
    }
  size_t functions = 0;
  for (const std::string &s : sim) functions += s.rfind("cuda", 0) == 0;  // nm also lists the node
  EXPECT_EQ(versioned, functions);
}

// What nvcc 13's host code calls (crt/host_runtime.h, crt/device_functions.h): the simulated runtime
// exports each of these under the real one's name and default version node
// (__cudaLaunchKernel@@libcudart.so.13), so a program nvcc built against the toolkit's runtime binds
// to the simulated one, and a shim that interposes them sees the same references.
TEST(SimExports, NvccEntryPointsMatchRealCudart) {
  if (!Exists(kRealCudart)) GTEST_SKIP() << Missing(kRealCudart);
  auto versions = [](const std::string &lib) {
    std::map<std::string, std::string> out;  // symbol -> its version column ("libcudart.so.13")
    FILE *p = popen(("objdump -T '" + lib + "' 2>/dev/null").c_str(), "r");
    if (p == nullptr) return out;
    char line[1024];
    while (fgets(line, sizeof line, p)) {
      std::istringstream in(line);
      std::vector<std::string> f;
      for (std::string w; in >> w;) f.push_back(w);
      if (f.size() < 3 || std::string(line).find(" .text") == std::string::npos) continue;  // defined functions
      if (f.back().rfind("__cuda", 0) == 0) out[f.back()] = f[f.size() - 2];
    }
    pclose(p);
    return out;
  };
  const auto real = versions(kRealCudart), sim = versions(kSimDir + "/libcudart.so.13");
  if (real.empty() || sim.empty()) GTEST_SKIP() << "objdump unavailable";
  const char *names[] = {"__cudaGetKernel", "__cudaLaunchKernel", "__cudaLaunchKernel_ptsz",
                         "__cudaPushCallConfiguration", "__cudaPopCallConfiguration",
                         "__cudaRegisterFatBinary", "__cudaRegisterFatBinaryEnd", "__cudaUnregisterFatBinary",
                         "__cudaRegisterFunction", "__cudaRegisterVar", "__cudaInitModule"};
  for (const char *n : names) {
    ASSERT_TRUE(real.count(n)) << n << " is not exported by the real libcudart";
    ASSERT_TRUE(sim.count(n)) << n << " is not exported by the simulated libcudart";
    EXPECT_EQ(sim.at(n), real.at(n)) << n;
    EXPECT_EQ(sim.at(n), "libcudart.so.13") << n;
  }
  for (const auto &[n, v] : sim) EXPECT_TRUE(real.count(n)) << n << " is not exported by the real libcudart";
}

// ---- the real libcudart.so.13 against the simulated driver -----------------------------------
namespace {
struct RealRun {
  Result result;
  std::vector<std::string> requests;  // "name version flags", in order
  std::vector<std::string> export_tables;
};
RealRun RunReal(std::vector<std::string> extra, bool sim_path = true) {
  std::string log = TempPath("log");
  extra.push_back("SIMCUDA_LOG_FILE=" + log);
  RealRun rr;
  rr.result = RunProgram({kScenarioDir + "/sim_real_cudart_probe", kRealCudart}, extra, sim_path);
  for (const std::string &l : Lines(ReadFile(log))) {
    std::istringstream in(l);
    std::string tag, what, name, version, flags;
    in >> tag >> what;
    if (what == "cuGetProcAddress") {
      if (l.find("cuGetProcAddress  version=") != std::string::npos) name = "\"\"";  // empty symbol
      else in >> name;
      in >> version >> flags;
      rr.requests.push_back(name + " " + version.substr(8) + " " + flags.substr(6));
    } else if (what == "cuGetExportTable") {
      in >> name;
      rr.export_tables.push_back(name.substr(5));
    }
  }
  unlink(log.c_str());
  return rr;
}
}  // namespace

TEST(RealCudart13, AgainstSimDriver) {
  if (!Exists(kRealCudart)) GTEST_SKIP() << Missing(kRealCudart);
  RealRun rr = RunReal({});
  ASSERT_EQ(rr.result.exit_code, 0) << rr.result.output;
  // It loads, resolves its entry points and calls cuInit, but needs the private export table
  // 6bd5fb6c-...: the sim answers CUDA_ERROR_NOT_SUPPORTED and the runtime returns that code.
  const std::string &out = rr.result.output;
  EXPECT_NE(out.find("cudaDriverGetVersion=0 value=13000"), std::string::npos) << out;
  EXPECT_NE(out.find("cudaGetDeviceCount=801 (cudaErrorNotSupported) count=-1"), std::string::npos) << out;
  EXPECT_NE(out.find("cudaMalloc=801 (cudaErrorNotSupported)"), std::string::npos) << out;
  EXPECT_EQ(rr.export_tables,
            (std::vector<std::string>{"f8cff95121468b4eb9e2fb469e7c0dd9", "6bd5fb6c5bf4e74a8987d93912fd9df9"}));
  // The exact request sequence is recorded in real_cudart13_requests.txt.
  std::vector<std::string> expected;
  for (const std::string &l : Lines(ReadFile(kSourceDir + "/real_cudart13_requests.txt")))
    if (!l.empty() && l[0] != '#') expected.push_back(l);
  EXPECT_EQ(rr.requests.size(), expected.size());
  EXPECT_EQ(rr.requests, expected);
}

TEST(RealCudart13, PropagatesDriverResults) {
  if (!Exists(kRealCudart)) GTEST_SKIP() << Missing(kRealCudart);
  RealRun no_dev = RunReal({"SIMCUDA_DEVICES=0"});
  EXPECT_NE(no_dev.result.output.find("cudaGetDeviceCount=100 (cudaErrorNoDevice) count=-1"), std::string::npos)
      << no_dev.result.output;
  RealRun old = RunReal({"SIMCUDA_DRIVER_VERSION=12080"});
  EXPECT_NE(old.result.output.find("cudaMalloc=35 (cudaErrorInsufficientDriver)"), std::string::npos)
      << old.result.output;
  EXPECT_EQ(old.export_tables.size(), 1u);  // stops before cuInit and the second table
  RealRun forced = RunReal({"SIMCUDA_EXPORT_TABLE_RESULT=999"});
  EXPECT_NE(forced.result.output.find("cudaMalloc=999 (cudaErrorUnknown)"), std::string::npos)
      << forced.result.output;
}

TEST(RealCudart13, WithoutAnyDriver) {
  if (!Exists(kRealCudart)) GTEST_SKIP() << Missing(kRealCudart);
  RealRun rr = RunReal({}, /*sim_path=*/false);
  if (rr.result.output.find("libcuda_loaded=1") != std::string::npos) GTEST_SKIP() << "a libcuda.so.1 is installed";
  EXPECT_NE(rr.result.output.find("cudaGetDeviceCount=35 (cudaErrorInsufficientDriver) count=-1"), std::string::npos)
      << rr.result.output;
  EXPECT_NE(rr.result.output.find("cudaMalloc=35 (cudaErrorInsufficientDriver)"), std::string::npos);
  EXPECT_NE(rr.result.output.find("cudaDriverGetVersion=0 value=0"), std::string::npos);
  EXPECT_NE(rr.result.output.find("cudaGetLastError=35"), std::string::npos);
}
