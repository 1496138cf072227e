"""A descriptor leak: with RLIMIT_NOFILE at LIMIT, opens the interpreter's own os.py
again and again without closing it until open() fails with EMFILE, tries EXTRA more
times, then closes everything. Prints JSON: opens that worked, opens that failed."""
import errno
import json
import os
import resource
import sys

limit, extra = int(sys.argv[1]), int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
leaked, failed = [], 0
while failed < 1 + extra:
    try:
        leaked.append(open(os.__file__, "rb"))
    except OSError as e:
        assert e.errno == errno.EMFILE, e
        failed += 1
for f in leaked:
    f.close()
print(json.dumps({"opened": len(leaked), "emfile": failed}))
