/* A broken stand-in for the shim, for the parity harness's own test: every fsync()
 * fails with EIO. CPython's test_os has exactly one test that notices
 * (TestInvalidFD.test_fsync expects EBADF for a bad descriptor), so parity.py must
 * report exactly that one difference. */
#include <errno.h>

int fsync(int fd) {
  (void)fd;
  errno = EIO;
  return -1;
}
