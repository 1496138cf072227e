#include "model/proc_stat.h"

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

namespace colabtrace::analyzer {

std::string ReadSmall(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out;
  char buf[8192];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[1024];
  const ssize_t n = read(fd, buf, sizeof(buf));
  close(fd);
  if (n <= 0) return std::nullopt;
  const std::string stat(buf, static_cast<size_t>(n));
  // "pid (comm) state ppid ..." where comm may hold spaces and parentheses.
  const size_t open_paren = stat.find('('), close_paren = stat.rfind(')');
  if (open_paren == std::string::npos || close_paren == std::string::npos || close_paren < open_paren) {
    return std::nullopt;
  }
  std::istringstream rest(stat.substr(close_paren + 1));
  std::vector<std::string> f;
  for (std::string field; f.size() < 22 && rest >> field;) f.push_back(field);
  if (f.size() < 22) return std::nullopt;
  // After ")": state(0) ppid(1) ... flags(6) ... utime(11) stime(12) ... num_threads(17)
  // ... starttime(19) ... rss(21).
  ProcStat p;
  p.pid = pid;
  p.comm = stat.substr(open_paren + 1, close_paren - open_paren - 1);
  p.state = f[0][0];
  p.ppid = static_cast<pid_t>(std::strtol(f[1].c_str(), nullptr, 10));
  p.flags = std::strtoull(f[6].c_str(), nullptr, 10);
  p.threads = std::strtoull(f[17].c_str(), nullptr, 10);
  p.start_ticks = std::strtoull(f[19].c_str(), nullptr, 10);
  p.rss_pages = std::strtoull(f[21].c_str(), nullptr, 10);
  p.utime_ticks = std::strtoull(f[11].c_str(), nullptr, 10);
  p.stime_ticks = std::strtoull(f[12].c_str(), nullptr, 10);
  return p;
}

bool SigkillPending(pid_t pid) {
  const std::string status = ReadSmall("/proc/" + std::to_string(pid) + "/status");
  // "SigPnd:\t0000000000000100\n": a hex mask, bit N-1 for signal N.
  constexpr uint64_t kSigkillBit = uint64_t{1} << (SIGKILL - 1);
  for (const char* key : {"\nSigPnd:", "\nShdPnd:"}) {
    const size_t at = status.find(key);
    if (at == std::string::npos) continue;
    const uint64_t mask = std::strtoull(status.c_str() + at + std::strlen(key), nullptr, 16);
    if ((mask & kSigkillBit) != 0) return true;
  }
  return false;
}

}  // namespace colabtrace::analyzer
