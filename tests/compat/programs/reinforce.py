"""A REINFORCE agent in the style of PyTorch's reinforcement-learning example: a policy
network, Categorical over its softmax, log-probabilities saved per step, discounted and
normalised returns, and -log_prob * return as the loss. The environment is a small
deterministic corridor; actions are drawn with numpy from the policy's probabilities, so
both engines see the same episodes."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

RESULTS = {"losses": [], "grad_norms": {}}
GAMMA = 0.95
EPS = np.finfo(np.float32).eps.item()


class Corridor:
    """Walk left or right on 7 cells; reward 1 for reaching the right end."""

    def reset(self):
        self.position = 3
        return self.state()

    def state(self):
        one_hot = np.zeros(7, dtype=np.float32)
        one_hot[self.position] = 1.0
        return one_hot

    def step(self, action):
        self.position += 1 if action == 1 else -1
        done = self.position in (0, 6)
        reward = 1.0 if self.position == 6 else -0.05
        return self.state(), reward, done


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(7, 16)
        self.affine2 = nn.Linear(16, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        return F.softmax(self.affine2(x), dim=1)


def select_action(policy, state, rng):
    state = torch.from_numpy(state).float().unsqueeze(0)
    probs = policy(state)
    m = Categorical(probs)
    p = probs.detach().numpy()[0].astype(np.float64)
    action = int(rng.random() < p[1] / p.sum())
    policy.saved_log_probs.append(m.log_prob(torch.tensor([action])))
    RESULTS.setdefault("entropy", []).append(m.entropy().item())
    return action


def finish_episode(policy, optimizer, first):
    R, returns = 0.0, []
    for r in policy.rewards[::-1]:
        R = r + GAMMA * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + EPS)
    policy_loss = [-log_prob * R for log_prob, R in zip(policy.saved_log_probs, returns,
                                                         strict=True)]
    optimizer.zero_grad()
    loss = torch.cat(policy_loss).sum()
    loss.backward()
    if first:
        RESULTS["grad_norms"] = {n: p.grad.norm().item() for n, p in policy.named_parameters()}
    optimizer.step()
    RESULTS["losses"].append(loss.item())
    del policy.rewards[:]
    del policy.saved_log_probs[:]


def main():
    rng = np.random.default_rng(0)
    policy = Policy()
    init = np.random.default_rng(1)
    with torch.no_grad():
        for p in policy.parameters():
            values = 0.3 * init.standard_normal(tuple(p.shape))
            p.copy_(torch.from_numpy(values.astype(np.float32)))
    optimizer = optim.Adam(policy.parameters(), lr=1e-2)
    env = Corridor()
    for episode in range(12):
        state = env.reset()
        for _ in range(30):
            action = select_action(policy, state, rng)
            state, reward, done = env.step(action)
            policy.rewards.append(reward)
            if done:
                break
        if len(policy.rewards) > 1:
            finish_episode(policy, optimizer, episode == 0)


if __name__ == "__main__":
    main()
