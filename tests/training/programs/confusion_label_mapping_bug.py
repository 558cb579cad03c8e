"""Digits classifier whose training labels go through a label map with a typo: "8" is mapped to
3. Evaluation uses the true labels.

Planted problem: two classes confused. The label map {0: 0, ..., 8: 3, 9: 9} (a copy-paste slip)
turns every training "8" into a "3", so the model learns to answer 3 for eights; on the
validation set, class 8 is almost never predicted right and goes to class 3.

Expected rule: Confusion (defaults: min_diag=0.9, max_off_diag=0.1, labels and predictions
tensors named "labels" and "predictions"), once a second evaluation pass confirms the first: at
the end of the run, step 95 (an epoch is 38 training steps then 10 evaluation steps: passes at
global steps 38..47 and 86..95; a pass followed by more training must fail in two passes in a
row, so that a class the model is still learning is not reported, and the run's last pass is the
final model's, judged when the run ends).

Measured with plain PyTorch (tests/training/plain_measure.py, 2 epochs): on the validation
set (597 images) the accuracy is 0.834 after the first epoch and 0.858 after the second, and
the recall of class 8 is 0.0 both times (the other classes 0.77 to 1.0).
"""

import argparse
import os

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts

LABEL_MAP = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7, 8: 3, 9: 9}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(64, 128)
        self.logits = nn.Linear(128, 10)

    def forward(self, x):
        return self.logits(F.relu(self.hidden(x)))


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=1),
        include_collections=["losses"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=76)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)

    digits = load_digits()
    x = ((digits.data - digits.data.mean(0)) / (digits.data.std(0) + 1e-6)).astype(np.float32)
    order = rng.permutation(len(x))
    tr, va = order[:1200], order[1200:]
    y_train = np.array([LABEL_MAP[int(c)] for c in digits.target[tr]])
    train_loader = DataLoader(TensorDataset(torch.from_numpy(x[tr]), torch.tensor(y_train)),
                              batch_size=32, shuffle=True)
    val_loader = DataLoader(
        TensorDataset(torch.from_numpy(x[va]), torch.tensor(digits.target[va])), batch_size=60)

    model = Net()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)

    step = 0
    while step < args.steps:
        hook.set_mode(ts.modes.TRAIN)
        model.train()
        for xb, yb in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            step += 1
        hook.set_mode(ts.modes.EVAL)
        model.eval()
        right, n = 0, 0
        with torch.no_grad():
            for xb, yb in val_loader:
                logits = model(xb)
                hook.save_tensor("labels", yb, "labels")
                hook.save_tensor("predictions", logits, "predictions")
                right += (logits.argmax(1) == yb).sum().item()
                n += len(yb)
        print(f"step {step} train loss {loss.item():.4f} val accuracy {right / n:.3f}")
    hook.close()


if __name__ == "__main__":
    main()
