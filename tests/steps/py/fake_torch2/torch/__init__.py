"""A stand-in for torch >= 2.0's optimizer step hooks (torch/optim/optimizer.py): what the
start-up hook uses there, for a machine whose torch is 1.13."""
from . import optim  # noqa: F401
__version__ = "2.0.fake"
