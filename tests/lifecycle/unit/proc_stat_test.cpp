// /proc/PID/stat and status as the analyzer reads them to tell a running process from one
// that is dying (model/proc_stat.h): a report made just after a kill must not call the
// killed process running.
#include "model/proc_stat.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace colabtrace::analyzer {
namespace {

TEST(ProcStat, ARunningProcessIsNeitherExitingNorKilled) {
  const std::optional<ProcStat> self = ReadProcStat(getpid());
  ASSERT_TRUE(self.has_value());
  EXPECT_FALSE(self->ended());
  EXPECT_FALSE(self->exiting());
  EXPECT_FALSE(SigkillPending(getpid()));
}

TEST(ProcStat, AProcessKilledAndNotYetReapedIsDyingWithSigkillPending) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  ASSERT_EQ(kill(child, SIGKILL), 0);
  // Wait until it is a zombie, without reaping it (WNOWAIT).
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  const std::optional<ProcStat> st = ReadProcStat(child);
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(st->ended()) << st->state;
  // The kernel keeps PF_EXITING and the pending SIGKILL until the process is reaped:
  // the two marks the analyzer reads before the zombie state (or the reap) comes.
  EXPECT_TRUE(st->exiting()) << st->flags;
  EXPECT_TRUE(SigkillPending(child));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_FALSE(ReadProcStat(child).has_value());
  EXPECT_FALSE(SigkillPending(child));
}

TEST(ProcStat, APendingSignalOtherThanSigkillIsNotAKill) {
  // SIGTERM blocked and pending in a child stays pending; the child lives on.
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, nullptr);
    (void)!write(ready[1], "r", 1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(kill(child, SIGTERM), 0);
  EXPECT_FALSE(SigkillPending(child));
  const std::optional<ProcStat> st = ReadProcStat(child);
  ASSERT_TRUE(st.has_value());
  EXPECT_FALSE(st->exiting());
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
}

}  // namespace
}  // namespace colabtrace::analyzer
