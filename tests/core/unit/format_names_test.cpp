// The analyzer's own errno and signal names (core/format.h) agree with glibc's
// strerrorname_np and sigabbrev_np (2.32+) on the build machine: the CLI carries its own
// tables because it runs on glibc 2.28, which has neither.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "core/format.h"

namespace {

using colabtrace::analyzer::ErrnoName;
using colabtrace::analyzer::SignalName;

TEST(FormatNames, ErrnoNamesAreGlibcs) {
  for (int e = 0; e < 256; ++e) {
    const char* glibc = strerrorname_np(e);
    EXPECT_EQ(ErrnoName(e), glibc != nullptr ? std::string(glibc) : "errno " + std::to_string(e)) << e;
  }
  EXPECT_EQ(ErrnoName(-1), "errno -1");
}

TEST(FormatNames, SignalNamesAreGlibcs) {
  for (int s = 0; s < 70; ++s) {
    const char* glibc = sigabbrev_np(s);
    EXPECT_EQ(SignalName(s), glibc != nullptr ? "SIG" + std::string(glibc) : "signal " + std::to_string(s)) << s;
  }
  EXPECT_EQ(SignalName(-3), "signal -3");
}

}  // namespace
