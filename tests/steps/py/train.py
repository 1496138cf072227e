"""A small training loop in one of several shapes (argv: MODE N), for the step tests.

  one        one SGD optimizer, N iterations
  two        a GAN's two optimizers per iteration (SGD for D, Adam for G), N iterations
  markers    colabtrace.step(i) at the top of each of N iterations, plus one optimizer
  per_epoch  3 epochs of N iterations, a new optimizer each epoch (the last one freed)
  per_epoch_kept  the same, every epoch's optimizer kept alive
  nested     an SGD subclass whose step calls super().step() (a plain SGD exists too)
  scheduler  Adam with a StepLR scheduler (which wraps the optimizer's step), N iterations

Prints what it computed (JSON): the same with and without colabtrace."""
import json
import sys

import torch


def batch(i):
    g = torch.Generator().manual_seed(i)
    return torch.randn(8, 4, generator=g), torch.randn(8, 1, generator=g)


def one(n, make=lambda params: torch.optim.SGD(params, lr=0.1), model=None, on_step=None):
    model = model or torch.nn.Linear(4, 1)
    opt = make(model.parameters())
    sched = on_step(opt) if on_step else None
    for i in range(n):
        x, y = batch(i)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
    return model


def two(n):
    d, g = torch.nn.Linear(4, 1), torch.nn.Linear(2, 4)
    opt_d = torch.optim.SGD(d.parameters(), lr=0.05)
    opt_g = torch.optim.Adam(g.parameters(), lr=0.01)
    for i in range(n):
        z = torch.randn(8, 2, generator=torch.Generator().manual_seed(i))
        fake = g(z)
        loss_d = d(fake.detach()).mean()
        opt_d.zero_grad()
        loss_d.backward()
        opt_d.step()
        loss_g = -d(fake).mean()
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
    return d


class MySGD(torch.optim.SGD):
    def step(self, closure=None):
        return super().step(closure)


def main():
    mode, n = sys.argv[1], int(sys.argv[2])
    torch.manual_seed(0)
    if mode == "one":
        model = one(n)
    elif mode == "two":
        model = two(n)
    elif mode == "markers":
        import colabtrace

        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(n):
            colabtrace.step(i)
            x, y = batch(i)
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    elif mode in ("per_epoch", "per_epoch_kept"):
        model, kept = torch.nn.Linear(4, 1), []
        for _ in range(3):
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for i in range(n):
                x, y = batch(i)
                loss = torch.nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            if mode == "per_epoch_kept":
                kept.append(opt)
            del opt
    elif mode == "nested":
        torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=0.1)  # SGD.step is wrapped too
        model = one(n, make=lambda params: MySGD(params, lr=0.1))
    elif mode == "scheduler":
        model = one(n, make=lambda params: torch.optim.Adam(params, lr=0.01),
                    on_step=lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=3))
    else:
        raise SystemExit("unknown mode " + mode)
    print(json.dumps({"mode": mode, "weights": [round(float(v), 6) for v in model.weight.flatten()]}))


if __name__ == "__main__":
    main()
