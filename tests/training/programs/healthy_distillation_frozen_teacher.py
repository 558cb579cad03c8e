"""Healthy run: knowledge distillation. A teacher MLP is trained first (plain PyTorch, no hook),
then frozen (`requires_grad_(False)`, `eval()`) inside a `Distiller` module that also holds a
smaller student; only the student's parameters go to the optimizer; the loss mixes the
temperature-softened KL divergence to the teacher with the cross-entropy to the labels. The hook
is registered on the `Distiller`, as with a training module that holds both networks.

No planted problem: the teacher's weights never change and get no gradient, by design.

Expected rules: none.

Measured with plain PyTorch (tests/training/plain_measure.py): see test_programs_plain.py's
check: the teacher's parameters never change, the student's do, the student's validation accuracy
is at least 0.93.
"""

import argparse
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts

T = 4.0


class Distiller(nn.Module):
    def __init__(self, teacher, student):
        super().__init__()
        self.teacher = teacher
        self.student = student

    def forward(self, x):
        with torch.no_grad():
            soft = self.teacher(x)
        return self.student(x), soft


def distill_loss(logits, soft, labels):
    kd = F.kl_div(F.log_softmax(logits / T, 1), F.softmax(soft / T, 1),
                  reduction="batchmean") * T * T
    return 0.7 * kd + 0.3 * F.cross_entropy(logits, labels)


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=3),
        include_collections=["weights", "biases", "gradients", "losses"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    digits = load_digits()
    order = rng.permutation(len(digits.target))
    tr, va = order[:1437], order[1437:]
    x = torch.from_numpy((digits.data.astype(np.float32) / 16.0 - 0.3) / 0.4)
    y = torch.from_numpy(digits.target)
    loader = DataLoader(TensorDataset(x[tr], y[tr]), batch_size=64, shuffle=True)

    teacher = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    opt_t = torch.optim.Adam(teacher.parameters(), lr=1e-3)
    for _ in range(5):
        for xb, yb in loader:
            opt_t.zero_grad()
            F.cross_entropy(teacher(xb), yb).backward()
            opt_t.step()
    teacher.requires_grad_(False)
    teacher.eval()

    student = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    model = Distiller(teacher, student)
    optimizer = torch.optim.Adam(student.parameters(), lr=3e-3)
    hook = make_hook(args.out)
    hook.register_module(model)

    for epoch in range(args.epochs):
        hook.set_mode(ts.modes.TRAIN)
        student.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            logits, soft = model(xb)
            loss = distill_loss(logits, soft, yb)
            hook.record_tensor_value("distill_loss", loss)
            loss.backward()
            optimizer.step()
        hook.set_mode(ts.modes.EVAL)
        student.eval()
        with torch.no_grad():
            logits, soft = model(x[va])
            val = distill_loss(logits, soft, y[va])
            hook.record_tensor_value("distill_loss", val)
            hook.save_tensor("labels", y[va])
            hook.save_tensor("predictions", logits)
        acc = (logits.argmax(1) == y[va]).float().mean().item()
        print(f"epoch {epoch + 1} loss {loss.item():.4f} val loss {val.item():.4f} "
              f"accuracy {acc:.4f}")
    hook.close()


if __name__ == "__main__":
    main()
