"""Optimizer steps through torch 2.x's global hooks (the fake torch in fake_torch2/):
argv N. One optimizer for N iterations, then two per iteration for N, then an SGD subclass
whose step calls super().step() for N, then N iterations of a step that raises (caught by
the program) and a step that works; each phase's optimizers are freed after it. Prints
the steps each optimizer took."""
import json
import sys

import torch


class MySGD(torch.optim.SGD):
    def step(self, closure=None):
        return super().step(closure)


class Failing(torch.optim.SGD):
    def step(self, closure=None):
        raise RuntimeError("no")


def main():
    n = int(sys.argv[1])
    took = []
    one = torch.optim.SGD(0.1)
    for _ in range(n):
        one.step()
    took.append(one.steps)
    del one  # each phase's optimizers are freed: the next phase's first one leads at once
    d, g = torch.optim.SGD(0.1), torch.optim.SGD(0.2)
    for _ in range(n):
        d.step()
        g.step()
    took += [d.steps, g.steps]
    del d, g
    nested = MySGD(0.1)
    for _ in range(n):
        nested.step()
    took.append(nested.steps)
    del nested
    failing, working = Failing(0.1), torch.optim.SGD(0.1)
    for _ in range(n):
        try:
            failing.step()
        except RuntimeError:
            pass
        working.step()
    took.append(working.steps)
    print(json.dumps(took))


if __name__ == "__main__":
    main()
