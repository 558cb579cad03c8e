"""Small CNN on the 8x8 digit images, fed raw pixel intensities (0..16).

Planted problem: unnormalised input images. The script reshapes sklearn's digits to (N, 1, 8, 8)
but forgets to scale and centre them: the single channel has mean about 4.9 and values up to 16,
instead of mean 0 and unit variance.

Expected rule: CheckInputImages (defaults: threshold_mean=0.2, threshold_samples=500, channel=1,
regex matching the model's input "DigitCNN_input_0"), by step 7 at the latest: the model input is
saved every step in batches of 64, so 512 >= 500 images are seen at step 7.

Measured with plain PyTorch (tests/training/plain_measure.py, 40 steps): the input batches
(64, 1, 8, 8) have channel mean 4.89 on average over the 40 steps (4.96 at step 0), 48 % of the
pixels are exactly 0 and the maximum is 16. (The CNN still learns, loss 2.05 -> 0.25; the
problem is the input scaling, which makes the training fragile, not a crash.)
"""

import argparse
import os

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


class DigitCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    hook = ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=1),
        include_collections=["input_image", "losses"],
    )
    hook.get_collection("input_image").include("DigitCNN_input_0")
    return hook


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)

    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1)  # (N, 1, 8, 8), 0..16
    loader = DataLoader(TensorDataset(images, torch.tensor(digits.target)),
                        batch_size=64, shuffle=True)

    model = DigitCNN()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

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
