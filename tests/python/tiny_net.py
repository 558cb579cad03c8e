"""The small model several hook tests train: Linear(4, 6), ReLU, Linear(6, 2), named so that
its tensors are Net_fc1.weight, relu_output_0, ... as smdebug names them."""

import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(6, 2)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))
