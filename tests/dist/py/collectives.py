"""Collectives through the Python start-up hook, for tests/dist/test_entry.py: on Debian's
torch (gloo, a group of one, a FileStore at argv[1]) or, where torch is the stand-in of
tests/dist/py/fake_torch, also a count past 2^31 and a fork child that all-reduces.
Prints which calls the hook makes into the shim ("module": the shim's built-in functions,
"ctypes") and, with the module, what its functions say to wrong arguments."""
import json
import os
import sys

import torch
import torch.distributed as dist

FAKE = not hasattr(torch, "zeros")
if FAKE:
    dist.init_process_group("fake")
    t = torch.Tensor(3)
else:
    dist.init_process_group("gloo", init_method="file://" + sys.argv[1], rank=0, world_size=1)
    t = torch.zeros(3)

dist.all_reduce(t)  # M_ALL_REDUCE
dist.broadcast(t, 0)  # M_BROADCAST
work = dist.all_reduce(t, async_op=True)  # M_ASYNC
work.wait()  # M_WAIT
dist.barrier()  # M_BARRIER
dist.all_gather_object([None], {"step": 1})  # M_OBJECT
group = dist.new_group([0])
dist.all_reduce(t, group=group)  # M_GROUP
try:
    dist.all_reduce("not a tensor")  # M_RAISES
except (AttributeError, RuntimeError, TypeError):
    pass
try:
    dist.broadcast(t, 5)  # M_BAD_ROOT: raises in torch's own call, after the hook entered it
except RuntimeError:
    pass
if FAKE:
    dist.all_reduce(torch.Tensor(2 ** 33 + 5))  # M_BIG
    pid = os.fork()
    if pid == 0:
        dist.all_reduce(t)  # M_CHILD
        dist.barrier()  # M_CHILD_BARRIER
        os._exit(0)
    os.waitpid(pid, 0)

# The shim's functions, as the hook's Python wrapper of all_reduce holds them; with the
# module, all_reduce is the shim's wrapper made in C (a partial of its built-in function)
# and the Python one is what it hands the cases it does not know.
wrapper = getattr(dist.all_reduce, "_colabtrace_slow", dist.all_reduce)
shim = dict(zip(wrapper.__code__.co_freevars, (c.cell_contents for c in wrapper.__closure__)))
path = "module" if type(shim["inside"]).__name__ == "builtin_function_or_method" else "ctypes"
made_in_c = wrapper is not dist.all_reduce and type(dist.all_reduce.func).__name__ == "builtin_function_or_method"
wait_in_c = type(dist.distributed_c10d.Work.__dict__["wait"]).__name__ == "instancemethod"
errors = []
if path == "module":
    module = wrapper.__globals__["_module"]
    for call in (lambda: shim["inside"](1), lambda: shim["enter"](1, 2, 3, 4),
                 lambda: shim["enter"](1, 2, 3, 4, "where"), lambda: shim["end"](2 ** 70, 0),
                 lambda: wrapper.__globals__["_intern"]("text"), lambda: module.wrap(print, print, 1),
                 lambda: module.wrap(print, print, 1, 0, "group", 0), lambda: module.group(1, 2, 3, 4),
                 lambda: module.dtype(1, "id"), lambda: module.wrap_wait(print)):
        try:
            call()
            errors.append(None)
        except (TypeError, OverflowError) as e:
            errors.append(type(e).__name__)
print(json.dumps({"path": path, "errors": errors, "inside": bool(shim["inside"]()), "c": [made_in_c, wait_in_c]}))
