"""Deep Q-learning on gymnasium's CartPole-v1, no trainscope in it, in the style of PyTorch's
tutorial "Reinforcement Learning (DQN)": a 4-128-128-2 Q-network, a target network updated softly
(tau 0.005), a replay memory, epsilon-greedy actions chosen under no_grad, AdamW (amsgrad) on the
Huber loss of a batch of 128 transitions after each environment step, gradients clipped at 100.
Its TD loss falls while the Q-values are small, then rises with them as the episodes lengthen
(the returns it regresses on grow toward 1 / (1 - gamma)): a healthy run whose loss rises.
Prints each 10th episode's duration. Arguments: --episodes (default 40), --seed (default 0)."""

import argparse
import math
import random
from collections import deque, namedtuple

import gymnasium as gym
import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--episodes", type=int, default=40)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

BATCH_SIZE, GAMMA, TAU, LR = 128, 0.99, 0.005, 1e-4
EPS_START, EPS_END, EPS_DECAY = 0.9, 0.05, 1000
Transition = namedtuple("Transition", ("state", "action", "next_state", "reward"))


class QNetwork(nn.Module):
    def __init__(self, n_observations, n_actions):
        super().__init__()
        self.layer1 = nn.Linear(n_observations, 128)
        self.layer2 = nn.Linear(128, 128)
        self.layer3 = nn.Linear(128, n_actions)

    def forward(self, x):
        x = torch.relu(self.layer1(x))
        x = torch.relu(self.layer2(x))
        return self.layer3(x)


random.seed(args.seed)
torch.manual_seed(args.seed)
torch.set_num_threads(1)
env = gym.make("CartPole-v1")
env.action_space.seed(args.seed)
policy_net = QNetwork(4, 2)
target_net = QNetwork(4, 2)
target_net.load_state_dict(policy_net.state_dict())
optimizer = torch.optim.AdamW(policy_net.parameters(), lr=LR, amsgrad=True)
memory = deque(maxlen=10000)
steps_done = 0


def select_action(state):
    global steps_done
    eps = EPS_END + (EPS_START - EPS_END) * math.exp(-steps_done / EPS_DECAY)
    steps_done += 1
    if random.random() > eps:
        with torch.no_grad():
            return policy_net(state).max(1).indices.view(1, 1)
    return torch.tensor([[env.action_space.sample()]], dtype=torch.long)


def optimize_model():
    if len(memory) < BATCH_SIZE:
        return
    batch = Transition(*zip(*random.sample(memory, BATCH_SIZE)))
    non_final = torch.tensor([s is not None for s in batch.next_state], dtype=torch.bool)
    next_states = torch.cat([s for s in batch.next_state if s is not None])
    q = policy_net(torch.cat(batch.state)).gather(1, torch.cat(batch.action))
    next_values = torch.zeros(BATCH_SIZE)
    with torch.no_grad():
        next_values[non_final] = target_net(next_states).max(1).values
    expected = next_values * GAMMA + torch.cat(batch.reward)
    loss = nn.SmoothL1Loss()(q, expected.unsqueeze(1))
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100)
    optimizer.step()


for episode in range(args.episodes):
    observation, _ = env.reset(seed=args.seed + episode)
    state = torch.tensor(observation, dtype=torch.float32).unsqueeze(0)
    duration = 0
    while True:
        action = select_action(state)
        observation, reward, terminated, truncated, _ = env.step(action.item())
        duration += 1
        next_state = None if terminated else torch.tensor(
            observation, dtype=torch.float32).unsqueeze(0)
        memory.append(Transition(state, action, next_state, torch.tensor([reward])))
        state = next_state
        optimize_model()
        target, policy = target_net.state_dict(), policy_net.state_dict()
        for key in policy:
            target[key] = policy[key] * TAU + target[key] * (1 - TAU)
        target_net.load_state_dict(target)
        if terminated or truncated:
            break
    if episode % 10 == 9:
        print(f"episode {episode + 1} duration {duration}", flush=True)
