"""A tanh MLP on standardised digits whose hidden weights are initialised with std 4 (meant:
Xavier, std about 0.2).

Planted problem: the pre-activations have a standard deviation of about 4 x sqrt(64) = 32, so most
tanh inputs lie far in the flat region (beyond +-9.5) for every unit: the layer is saturated
almost everywhere, although every unit is in its linear range for some samples.

Expected rule: SaturatedActivation, by step 1.

Measured with plain PyTorch: more than 70 % of the first tanh layer's inputs are beyond +-9.5 at
the first step (test_programs_plain.py).
"""

import argparse
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn

import trainscope.pytorch as ts


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    hook = ts.Hook(out_dir=out_dir, save_config=ts.SaveConfig(save_interval=1),
                   include_collections=["weights", "gradients", "losses",
                                        "saturated_activation_inputs"])
    # The hook adds the inputs of Tanh/Sigmoid modules to this collection by type (an
    # nn.Sequential's tanh is named "1"), once the collection exists.
    hook.get_collection("saturated_activation_inputs").include("tanh_input")
    return hook


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    torch.manual_seed(10)
    torch.set_num_threads(1)
    rng = np.random.default_rng(10)
    d = load_digits()
    x = ((d.data - d.data.mean(0)) / (d.data.std(0) + 1e-6)).astype(np.float32)
    y = d.target
    model = nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 10))
    nn.init.normal_(model[0].weight, std=4.0)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)
    for step in range(args.steps):
        idx = rng.choice(len(y), 32, replace=False)
        optimizer.zero_grad()
        loss = criterion(model(torch.from_numpy(x[idx])), torch.from_numpy(y[idx]))
        loss.backward()
        optimizer.step()
    print(f"final loss {loss.item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
