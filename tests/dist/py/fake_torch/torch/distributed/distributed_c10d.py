"""torch.distributed.distributed_c10d as the hook sees it: the same names and parameter
names, and the same call structure (a blocking collective calls Work.wait() itself, and
all_gather_object issues two all_gathers), with no communication."""


class Work:
    def wait(self, timeout=None):
        return True


class ProcessGroup:
    def __init__(self):
        self.issued = 0  # torch's sequence number: the collectives issued on the group

    def _get_sequence_number_for_group(self):
        return self.issued


class GroupMember:
    WORLD = None
    NON_GROUP_MEMBER = object()


def init_process_group(backend, rank=0, world_size=1):
    GroupMember.WORLD = ProcessGroup()


def destroy_process_group(group=None):
    GroupMember.WORLD = None


def new_group(ranks=None):
    return ProcessGroup()


def _get_default_group():
    return GroupMember.WORLD


def get_rank(group=None):
    return 0


def get_world_size(group=None):
    return 1


def get_backend(group=None):
    return "fake"


def _issue(tensor, group, async_op):
    if tensor is not None and tensor.numel() < 0:
        raise RuntimeError("a tensor of negative size")
    (group or GroupMember.WORLD).issued += 1
    work = Work()
    if async_op:
        return work
    work.wait()
    return None


def all_reduce(tensor, op=None, group=None, async_op=False):
    return _issue(tensor, group, async_op)


def broadcast(tensor, src, group=None, async_op=False):
    if src >= get_world_size(group):
        raise RuntimeError("ProcessGroupGloo::broadcast: invalid root rank: %d" % src)  # torch's, unissued
    return _issue(tensor, group, async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    return _issue(tensor, group, async_op)


def barrier(group=None, async_op=False, device_ids=None):
    return _issue(None, group, async_op)


def all_gather_object(object_list, obj, group=None):
    from torch import Tensor

    all_gather([], Tensor(1), group=group)  # the sizes, then the data
    all_gather([], Tensor(8), group=group)
    object_list[:] = [obj]
