#include "core/format.h"

#include "core/json.h"  // Utf8SequenceLength

#include <cstdio>
#include <iterator>
#include <csignal>
#include <cstring>

namespace colabtrace::analyzer {

std::string FormatBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[u]);
  }
  return buf;
}

std::string FormatDurationNs(uint64_t ns) {
  char buf[32];
  if (ns < 1000) {
    std::snprintf(buf, sizeof(buf), "%llu ns", static_cast<unsigned long long>(ns));
  } else if (ns < 1000000) {
    std::snprintf(buf, sizeof(buf), "%.1f us", static_cast<double>(ns) / 1e3);
  } else if (ns < 1000000000) {
    std::snprintf(buf, sizeof(buf), "%.1f ms", static_cast<double>(ns) / 1e6);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f s", static_cast<double>(ns) / 1e9);
  }
  return buf;
}

namespace {

// Linux's errno names, as glibc's strerrorname_np gives them (one name per number: EAGAIN
// not EWOULDBLOCK, EDEADLK not EDEADLOCK, EOPNOTSUPP not ENOTSUP). Our own table: the CLI
// runs on glibc 2.28, which has no strerrorname_np (2.32).
constexpr const char* kErrnoNames[] = {
    "0", "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG",
    "ENOEXEC", "EBADF", "ECHILD", "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK",
    "EBUSY", "EEXIST", "EXDEV", "ENODEV", "ENOTDIR", "EISDIR", "EINVAL", "ENFILE",
    "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG", "ENOSPC", "ESPIPE", "EROFS", "EMLINK",
    "EPIPE", "EDOM", "ERANGE", "EDEADLK", "ENAMETOOLONG", "ENOLCK", "ENOSYS", "ENOTEMPTY",
    "ELOOP", nullptr, "ENOMSG", "EIDRM", "ECHRNG", "EL2NSYNC", "EL3HLT", "EL3RST",
    "ELNRNG", "EUNATCH", "ENOCSI", "EL2HLT", "EBADE", "EBADR", "EXFULL", "ENOANO",
    "EBADRQC", "EBADSLT", nullptr, "EBFONT", "ENOSTR", "ENODATA", "ETIME", "ENOSR",
    "ENONET", "ENOPKG", "EREMOTE", "ENOLINK", "EADV", "ESRMNT", "ECOMM", "EPROTO",
    "EMULTIHOP", "EDOTDOT", "EBADMSG", "EOVERFLOW", "ENOTUNIQ", "EBADFD", "EREMCHG", "ELIBACC",
    "ELIBBAD", "ELIBSCN", "ELIBMAX", "ELIBEXEC", "EILSEQ", "ERESTART", "ESTRPIPE", "EUSERS",
    "ENOTSOCK", "EDESTADDRREQ", "EMSGSIZE", "EPROTOTYPE", "ENOPROTOOPT", "EPROTONOSUPPORT", "ESOCKTNOSUPPORT",
    "EOPNOTSUPP", "EPFNOSUPPORT", "EAFNOSUPPORT", "EADDRINUSE", "EADDRNOTAVAIL", "ENETDOWN", "ENETUNREACH",
    "ENETRESET", "ECONNABORTED", "ECONNRESET", "ENOBUFS", "EISCONN", "ENOTCONN", "ESHUTDOWN", "ETOOMANYREFS",
    "ETIMEDOUT", "ECONNREFUSED", "EHOSTDOWN", "EHOSTUNREACH", "EALREADY", "EINPROGRESS", "ESTALE", "EUCLEAN",
    "ENOTNAM", "ENAVAIL", "EISNAM", "EREMOTEIO", "EDQUOT", "ENOMEDIUM", "EMEDIUMTYPE", "ECANCELED",
    "ENOKEY", "EKEYEXPIRED", "EKEYREVOKED", "EKEYREJECTED", "EOWNERDEAD", "ENOTRECOVERABLE", "ERFKILL",
    "EHWPOISON"};

// The signals' abbreviations, as glibc's sigabbrev_np (2.32) gives them.
constexpr const char* kSignalNames[] = {
    nullptr, "HUP",  "INT",  "QUIT", "ILL",  "TRAP", "ABRT",   "BUS",  "FPE",   "KILL", "USR1",
    "SEGV",  "USR2", "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP",   "TSTP", "TTIN",
    "TTOU",  "URG",  "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "POLL", "PWR",  "SYS"};

}  // namespace

std::string ErrnoName(int e) {
  if (e >= 0 && static_cast<size_t>(e) < std::size(kErrnoNames) && kErrnoNames[e] != nullptr) return kErrnoNames[e];
  return "errno " + std::to_string(e);
}

std::string_view Basename(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos || path.size() == 1 ? path : path.substr(slash + 1);
}

std::string FormatHex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

namespace {

// Appends a control or stray byte as \n, \r, \t or \xNN.
void AppendEscaped(std::string& out, unsigned char c) {
  switch (c) {
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    default: break;
  }
  static const char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

// EscapeForTerminal, keeping the newlines of preformatted multi-line text.
std::string EscapeBody(std::string_view s, bool keep_newlines) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n' && keep_newlines) {
      out += '\n';
    } else if (c < 0x20 || c == 0x7f) {
      AppendEscaped(out, c);
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (const size_t len = Utf8SequenceLength(s.substr(i)); len == 0) {
      AppendEscaped(out, c);
    } else if (c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0) {
      AppendEscaped(out, static_cast<unsigned char>(s[i + 1]));  // a C1 control (U+0080..U+009F)
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len - 1;
    }
  }
  return out;
}

}  // namespace

std::string EscapeForTerminal(std::string_view s) { return EscapeBody(s, /*keep_newlines=*/false); }

std::string EscapeForTerminalKeepingLines(std::string_view s) {
  return EscapeBody(s, /*keep_newlines=*/true);
}

std::string SignalName(int signo) {
  if (signo > 0 && static_cast<size_t>(signo) < std::size(kSignalNames)) return std::string("SIG") + kSignalNames[signo];
  return "signal " + std::to_string(signo);
}

FieldUnit UnitOfField(std::string_view name) {
  if (name.ends_with("_bytes_per_s")) return FieldUnit::kBytesPerSecond;
  if (name == "bytes" || name == "size" || name.ends_with("_bytes") || name.ends_with("_size")) {
    return FieldUnit::kBytes;
  }
  if (name.ends_with("_ns") && name != "mtime_ns") return FieldUnit::kNanoseconds;
  if (name == "address" || name == "addr" || name.ends_with("_address") || name.ends_with("_addr")) {
    return FieldUnit::kAddress;
  }
  return FieldUnit::kNone;
}

std::string FormatInUnit(FieldUnit unit, uint64_t v) {
  switch (unit) {
    case FieldUnit::kBytes: return FormatBytes(v);
    case FieldUnit::kBytesPerSecond: return FormatBytes(v) + "/s";
    case FieldUnit::kNanoseconds: return FormatDurationNs(v);
    case FieldUnit::kAddress: return FormatHex(v);
    case FieldUnit::kNone: break;
  }
  return std::to_string(v);
}

}  // namespace colabtrace::analyzer
