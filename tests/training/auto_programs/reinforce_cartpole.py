"""Policy-gradient reinforcement learning, no trainscope in it, in the style of pytorch/examples'
reinforcement_learning/reinforce.py: REINFORCE on the classic cart-pole (its equations written out
here, so no gym is needed), a 4-128-2 policy with dropout, Adam, one episode a training step. The
loss is sum(-log p(action) * normalised return): centred on zero by the normalisation, its spread
growing with the episodes' length while the policy improves. With --critic, an actor-critic in
the style of reinforcement_learning/actor_critic.py: a value head beside the policy's, the loss
sum(-log p(action) * (return - value)) + sum(smooth_l1(value, return)), mostly positive, falling
while the critic learns and then growing with the episodes. Prints the running reward every 10
episodes. Arguments: --episodes (default 150), --seed (default 543), --critic."""

import argparse
import math
import random

import torch
from torch import nn
from torch.distributions import Categorical

parser = argparse.ArgumentParser()
parser.add_argument("--episodes", type=int, default=150)
parser.add_argument("--seed", type=int, default=543)
parser.add_argument("--gamma", type=float, default=0.99)
parser.add_argument("--critic", action="store_true")
args = parser.parse_args()


class CartPole:
    """The cart-pole of Barto, Sutton and Anderson (1983), as gym's CartPole-v1 integrates it:
    Euler steps of 20 ms, reward 1 a step, the episode over when the pole leans more than 12
    degrees, the cart leaves +-2.4, or 500 steps pass."""

    def __init__(self, rng):
        self.rng = rng

    def reset(self):
        self.state = [self.rng.uniform(-0.05, 0.05) for _ in range(4)]
        self.t = 0
        return list(self.state)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        cos, sin = math.cos(theta), math.sin(theta)
        total_mass, pole_mass_length, half_length = 1.1, 0.05, 0.5
        temp = (force + pole_mass_length * theta_dot ** 2 * sin) / total_mass
        theta_acc = (9.8 * sin - cos * temp) / (
            half_length * (4.0 / 3.0 - 0.1 * cos ** 2 / total_mass))
        x_acc = temp - pole_mass_length * theta_acc * cos / total_mass
        x, x_dot = x + 0.02 * x_dot, x_dot + 0.02 * x_acc
        theta, theta_dot = theta + 0.02 * theta_dot, theta_dot + 0.02 * theta_acc
        self.state = [x, x_dot, theta, theta_dot]
        self.t += 1
        done = abs(x) > 2.4 or abs(theta) > 12 * 2 * math.pi / 360 or self.t >= 500
        return list(self.state), 1.0, done


class Policy(nn.Module):
    def __init__(self, critic):
        super().__init__()
        self.affine1 = nn.Linear(4, 128)
        self.dropout = nn.Dropout(p=0.0 if critic else 0.6)
        self.affine2 = nn.Linear(128, 2)
        self.value_head = nn.Linear(128, 1) if critic else None

    def forward(self, x):
        x = torch.relu(self.dropout(self.affine1(x)))
        probs = torch.softmax(self.affine2(x), dim=1)
        return probs if self.value_head is None else (probs, self.value_head(x))


torch.manual_seed(args.seed)
torch.set_num_threads(1)
env = CartPole(random.Random(args.seed))
policy = Policy(args.critic)
optimizer = torch.optim.Adam(policy.parameters(), lr=3e-2 if args.critic else 1e-2)
eps = torch.finfo(torch.float32).eps

running_reward = 10.0
for episode in range(1, args.episodes + 1):
    state, log_probs, values, rewards = env.reset(), [], [], []
    done = False
    while not done:
        probs = policy(torch.tensor(state).unsqueeze(0))
        if args.critic:
            probs, value = probs
            values.append(value.squeeze())
        m = Categorical(probs)
        action = m.sample()
        log_probs.append(m.log_prob(action))
        state, reward, done = env.step(action.item())
        rewards.append(reward)
    running_reward = 0.05 * len(rewards) + 0.95 * running_reward
    returns, r = [], 0.0
    for reward in reversed(rewards):
        r = reward + args.gamma * r
        returns.insert(0, r)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    if args.critic:
        advantages = [g - v.item() for g, v in zip(returns, values)]
        loss = (torch.cat([-lp * a for lp, a in zip(log_probs, advantages)]).sum()
                + sum(nn.functional.smooth_l1_loss(v, g) for v, g in zip(values, returns)))
    else:
        loss = torch.cat([-lp * g for lp, g in zip(log_probs, returns)]).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if episode % 10 == 0:
        print(f"episode {episode} last length {len(rewards)} running reward {running_reward:.1f}",
              flush=True)
