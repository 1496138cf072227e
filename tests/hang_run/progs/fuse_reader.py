"""Steps twice, then opens and reads a file of a FUSE mount that stops answering (its opens
or its reads never answer). Prints its pid (JSON) first."""
import json
import os
import sys

import colabtrace


def read_stuck(path):
    with open(path, "rb", buffering=0) as f:  # OPEN_STUCK: the mount's opens never answer
        return f.read(4096)  # READ_STUCK: the mount's reads never answer


colabtrace.step(0)
colabtrace.step(1)
print(json.dumps({"pid": os.getpid()}), flush=True)
read_stuck(sys.argv[1])  # CALL_READ
