"""Diabetes progression regression (sklearn's load_diabetes, raw units) with a tanh MLP.

Planted problem: saturated activations. The script loads the data set unscaled
(scaled=False: ages around 50, blood pressure around 95, serum values in the hundreds) and feeds
it straight into Linear + Tanh layers. The pre-activations are in the tens to hundreds, so
nearly every tanh unit sits at -1 or +1 where its derivative is ~0, and the first layer cannot
learn.

Expected rule: SaturatedActivation (defaults: tanh inputs outside (-9.4999, 9.4999) count as
saturated, a unit is saturated if active in < 1 % of samples, fires when > 50 % of a layer is
saturated; the tanh module is named "tanh" so its inputs are "tanh_input_0"), by step 3 at the
latest (batches of 32, tanh inputs saved every step: 128 >= 100 samples at step 3).

Measured with plain PyTorch (tests/training/plain_measure.py, 40 steps): the input features
have mean 61.5; in every window of >= 100 samples 73 % to 81 % of the 64 tanh units have their
input outside (-9.5, 9.5) in more than 99 % of the samples (75 % in the first window, step 3).
The loss stays near the target's variance (1.04 -> 0.95).
"""

import argparse
import os

import torch
from sklearn.datasets import load_diabetes
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


class Regressor(nn.Module):
    def __init__(self, n_in):
        super().__init__()
        self.linear1 = nn.Linear(n_in, 64)
        self.tanh = nn.Tanh()
        self.linear2 = nn.Linear(64, 1)

    def forward(self, x):
        return self.linear2(self.tanh(self.linear1(x))).squeeze(-1)


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    hook = ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=1),
        include_collections=["tanh_inputs", "losses"],
    )
    hook.get_collection("tanh_inputs").include("tanh_input")
    return hook


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)

    data = load_diabetes(scaled=False)
    x = torch.tensor(data.data, dtype=torch.float32)
    y = torch.tensor(data.target, dtype=torch.float32)
    y = (y - y.mean()) / y.std()  # the target is standardised, the features are not
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)

    model = Regressor(x.shape[1])
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)

    step = 0
    model.train()
    while step < args.steps:
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            step += 1
            if step >= args.steps:
                break
        print(f"step {step} loss {loss.item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
