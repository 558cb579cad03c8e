"""What the README's Python examples take as given: a model, a loss function, an optimizer and a
data loader, the names a training script has before it adds trainscope's lines (`model`,
`loss_fn`, `opt`, `loader`). tests/python/test_readme_examples.py runs each README example after
this file, in a fresh folder, as written.

A small MLP (its layers named fc1, relu, fc2: the README's `Net_fc1.weight`) on 30 batches of
random data, so the examples run in seconds with nothing downloaded.
"""

import torch
from torch import nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 32)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


model = Net()
loss_fn = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
loader = [(torch.randn(16, 20), torch.randint(0, 4, (16,))) for _ in range(30)]
