"""A training script written for smdebug.pytorch. The tests run it twice, unchanged but for the
module it imports (argv[1]: smdebug.pytorch or trainscope.pytorch), and compare the trials.

    python train_smdebug_style.py <module> <out_dir> <scenario>

Scenarios:
  mlp         an MLP with weights, biases, gradients and losses every 2 steps, a custom collection
              of ReLU outputs with its own save config and reductions, save_scalar, 6 TRAIN then
              3 EVAL then 2 more TRAIN steps
  sequential  nn.Sequential (numbered layers), save_all every 3 steps, a frozen first layer
"""

import importlib
import sys

import torch
import torch.nn as nn

smd = importlib.import_module(sys.argv[1])  # the only line that differs between the two runs
out_dir, scenario = sys.argv[2], sys.argv[3]

torch.manual_seed(0)
torch.set_num_threads(1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def batches(n):
    g = torch.Generator().manual_seed(1)
    for _ in range(n):
        yield torch.randn(4, 6, generator=g), torch.randint(0, 3, (4,), generator=g)


def run_mlp():
    net = Net()
    criterion = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    hook = smd.Hook(
        out_dir=out_dir,
        save_config=smd.SaveConfig(save_interval=2),
        include_collections=["weights", "biases", "gradients", "losses", "relus"],
    )
    relus = hook.get_collection("relus")
    relus.include("relu_output")
    relus.save_config = smd.SaveConfig(mode_save_configs={
        smd.modes.TRAIN: smd.SaveConfigMode(save_interval=3),
        smd.modes.EVAL: smd.SaveConfigMode(save_steps=[1]),
    })
    relus.reduction_config = smd.ReductionConfig(reductions=["max", "mean"], norms=["l2"],
                                                 save_raw_tensor=True)
    hook.register_module(net)
    hook.register_loss(criterion)

    hook.set_mode(smd.modes.TRAIN)
    for x, y in batches(6):
        opt.zero_grad()
        loss = criterion(net(x), y)
        loss.backward()
        opt.step()
    hook.set_mode(smd.modes.EVAL)
    with torch.no_grad():
        for x, y in batches(3):
            criterion(net(x), y)
    hook.set_mode(smd.modes.TRAIN)
    for x, y in batches(2):
        opt.zero_grad()
        loss = criterion(net(x), y)
        hook.save_scalar("loss_value", loss.item())
        loss.backward()
        opt.step()
    hook.close()


def run_sequential():
    model = nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 2))
    for p in model[0].parameters():
        p.requires_grad = False  # a frozen layer
    criterion = nn.MSELoss()
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.01)
    hook = smd.Hook(out_dir=out_dir, save_all=True, save_config=smd.SaveConfig(save_interval=3))
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(smd.modes.TRAIN)
    for x, _ in batches(7):
        opt.zero_grad()
        loss = criterion(model(x), torch.zeros(4, 2))
        loss.backward()
        opt.step()
    hook.close()


{"mlp": run_mlp, "sequential": run_sequential}[scenario]()
