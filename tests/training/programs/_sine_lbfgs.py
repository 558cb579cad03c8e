"""The model and data of the LBFGS programs (healthy_lbfgs_sine_lstm.py,
diverging_lbfgs_lr_no_line_search.py): pytorch/examples' time_sequence_prediction scaled down.

Two stacked LSTMCells (hidden 16) and a linear head predict the next value of shifted sine waves
(16 training waves and 8 test waves of 40 points), in float64 as the example does, trained with
``optim.LBFGS`` and a closure (zero_grad, forward, MSE loss, backward). LBFGS calls the closure up
to max_iter = 20 times per optimizer step, each time at new parameters.

Steps are marked with ``hook.step()`` (one training step per optimizer step, then one evaluation
step), as the automatic mode of ``trainscope run`` marks them for the example itself: each step's
20 closure evaluations save ``MSELoss_output_0`` ... ``MSELoss_output_19``.
"""

import os

import torch
from torch import nn

import trainscope.pytorch as ts


class Sequence(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.hidden = hidden
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, x):
        n = x.size(0)
        h1 = c1 = h2 = c2 = torch.zeros(n, self.hidden, dtype=x.dtype)
        outputs = []
        for t in range(x.size(1)):
            h1, c1 = self.lstm1(x[:, t:t + 1], (h1, c1))
            h2, c2 = self.lstm2(h1, (h2, c2))
            outputs.append(self.linear(h2))
        return torch.cat(outputs, 1)


def sine_waves(n, length=40, seed=0):
    """(inputs, next values) of n sine waves of period 16 pi, randomly shifted."""
    g = torch.Generator().manual_seed(seed)
    shift = torch.randint(-40, 40, (n, 1), generator=g).double()
    t = torch.arange(length + 1).double()
    x = torch.sin((t + shift) / 8.0)
    return x[:, :-1], x[:, 1:]


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(out_dir=out_dir, save_config=ts.SaveConfig(save_interval=1),
                   include_collections=["weights", "biases", "gradients", "losses"])


def train(out_dir, steps, lr, seed=0):
    """Trains with LBFGS at `lr` (no line search, as the example) for `steps` optimizer steps;
    prints every closure evaluation's loss and the test loss after each step."""
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    model = Sequence().double()
    criterion = nn.MSELoss()
    x, y = sine_waves(16, seed=seed)
    test_x, test_y = sine_waves(8, seed=seed + 1)
    optimizer = torch.optim.LBFGS(model.parameters(), lr=lr)
    hook = make_hook(out_dir)
    hook.register_module(model)
    hook.register_loss(criterion)
    for step in range(steps):
        hook.set_mode(ts.modes.TRAIN)
        hook.step()
        evaluations = []

        def closure():
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            evaluations.append(loss.item())
            return loss

        optimizer.step(closure)
        hook.set_mode(ts.modes.EVAL)
        hook.step()
        with torch.no_grad():
            test_loss = criterion(model(test_x), test_y).item()
        print(f"step {step}: {len(evaluations)} evaluations, loss "
              + " ".join(f"{v:.3g}" for v in evaluations) + f"; test loss {test_loss:.3g}")
    hook.close()
