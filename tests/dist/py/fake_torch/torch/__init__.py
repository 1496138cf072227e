"""A stand-in for PyTorch where it is not installed (tests/dist/test_entry.py): only the
torch.distributed calls the Python start-up hook wraps, on a process group of one that
counts what it issues as torch's does."""
from . import distributed  # noqa: F401

_C = None  # no CUDA build: the hook's CUDA part has nothing to attach to


class _DType:
    def __str__(self):
        return "torch.float32"


float32 = _DType()


class Tensor:
    def __init__(self, elements):
        self.elements = elements
        self.dtype = float32

    def numel(self):
        return self.elements
