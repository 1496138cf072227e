"""torch 2.x's global optimizer step hooks, as its Optimizer runs them: each class's step is
wrapped once (marked `hooked`) by a wrapper that runs the pre hooks, the step, then the post
hooks."""
import functools
from itertools import chain

_global_optimizer_pre_hooks = {}
_global_optimizer_post_hooks = {}


def register_optimizer_step_pre_hook(hook):
    _global_optimizer_pre_hooks[len(_global_optimizer_pre_hooks)] = hook


def register_optimizer_step_post_hook(hook):
    _global_optimizer_post_hooks[len(_global_optimizer_post_hooks)] = hook


class Optimizer:
    def __init__(self, lr):
        self.lr = lr
        self.steps = 0
        self._patch_step_function()

    def _patch_step_function(self):
        hooked = getattr(self.__class__.step, "hooked", None)
        if not hooked:
            self.__class__.step = self.profile_hook_step(self.__class__.step)
            self.__class__.step.hooked = True

    @staticmethod
    def profile_hook_step(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            self, *_ = args
            for pre_hook in _global_optimizer_pre_hooks.values():
                pre_hook(self, args, kwargs)
            out = func(*args, **kwargs)
            for post_hook in chain(_global_optimizer_post_hooks.values()):
                post_hook(self, args, kwargs)
            return out

        return wrapper


class SGD(Optimizer):
    def step(self, closure=None):
        self.steps += 1
        return self.steps
