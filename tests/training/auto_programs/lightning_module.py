"""A PyTorch Lightning training, with no trainscope in it: a LightningModule (an MLP classifier on
a synthetic task) trained by `pl.Trainer` on the CPU, which steps the optimizer with a closure
(forward and backward run inside `optimizer.step(closure)`), accumulates 2 batches per step and
validates every 10 batches. Arguments: --steps (optimizer steps), --out (the Trainer's folder)."""

import argparse

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--out", required=True)
args = parser.parse_args()

torch.set_num_threads(1)
pl.seed_everything(0, verbose=False)


class Classifier(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, x):
        return self.body(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self(x), y))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=3e-3)


def loader(n, seed, shuffle):
    g = torch.Generator().manual_seed(seed)
    teacher = torch.randn(16, 4, generator=torch.Generator().manual_seed(99))
    x = torch.randn(n, 16, generator=g)
    data = torch.utils.data.TensorDataset(x, (x @ teacher).argmax(1))
    return torch.utils.data.DataLoader(data, batch_size=32, shuffle=shuffle)


trainer = pl.Trainer(max_steps=args.steps, accelerator="cpu", devices=1,
                     accumulate_grad_batches=2, val_check_interval=10, limit_val_batches=2,
                     enable_checkpointing=False, logger=False, enable_progress_bar=False,
                     enable_model_summary=False, default_root_dir=args.out)
trainer.fit(Classifier(), loader(4096, 1, True), loader(256, 2, False))
print("done", flush=True)
