"""REINFORCE: a policy network learns to walk a numpy gridworld to its goal.

The agent starts in one corner of a 5x5 grid with a wall in the middle and must reach the
opposite corner; an episode ends at the goal or after 30 moves. The policy runs once per
move, so an episode of 25 moves builds a graph five times longer than one of 5: the graph
follows the agent's behaviour, and shrinks as the agent learns. The number printed as the
loss is the episode's length in moves (lower is better; 8 is the shortest path).

    python demos/rl_policy.py --steps 300
"""

import argparse

import numpy as np

import dyngraph as torch
import dyngraph.nn as nn
import dyngraph.nn.functional as F
import dyngraph.optim as optim

SIZE = 5
WALL = {(1, 2), (2, 2), (3, 2)}  # a short wall the agent has to walk around
START, GOAL = (0, 0), (SIZE - 1, SIZE - 1)
MOVES = [(-1, 0), (1, 0), (0, -1), (0, 1)]  # up, down, left, right
MAX_MOVES = 30
GAMMA = 0.95


class GridWorld:
    """A tiny environment in plain numpy: reset() and step(action) as in Gym."""

    def reset(self) -> np.ndarray:
        self.position = START
        return self.observe()

    def observe(self) -> np.ndarray:
        cells = np.zeros(SIZE * SIZE, np.float32)
        cells[self.position[0] * SIZE + self.position[1]] = 1
        return cells

    def step(self, action: int) -> tuple[np.ndarray, float, bool]:
        row, col = self.position[0] + MOVES[action][0], self.position[1] + MOVES[action][1]
        if 0 <= row < SIZE and 0 <= col < SIZE and (row, col) not in WALL:
            self.position = (row, col)
        done = self.position == GOAL
        return self.observe(), (1.0 if done else 0.0), done


class Policy(nn.Module):
    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        self.hidden = nn.Linear(SIZE * SIZE, hidden)
        self.action_head = nn.Linear(hidden, len(MOVES))

    def forward(self, observation):
        return F.log_softmax(self.action_head(torch.tanh(self.hidden(observation))), dim=0)


def main(steps: int = 300, seed: int = 0) -> list[float]:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    env, policy = GridWorld(), Policy()
    optimizer = optim.Adam(policy.parameters(), lr=0.01)
    lengths: list[float] = []
    every = max(1, steps // 10)
    for episode in range(1, steps + 1):
        observation, log_probs, rewards, done = env.reset(), [], [], False
        while not done and len(rewards) < MAX_MOVES:  # episode length depends on the agent
            log_prob = policy(torch.from_numpy(observation))
            probs = np.exp(log_prob.detach().numpy().astype(np.float64))
            action = int(rng.choice(len(MOVES), p=probs / probs.sum()))
            observation, reward, done = env.step(action)
            log_probs.append(log_prob[action])
            rewards.append(reward)

        # Discounted return from each move on; reaching the goal sooner is worth more.
        returns = np.zeros(len(rewards), np.float32)
        running = 0.0
        for t in reversed(range(len(rewards))):
            running = rewards[t] + GAMMA * running
            returns[t] = running
        advantage = returns - returns.mean()  # a simple baseline reduces the variance
        loss = -(torch.stack(log_probs) * torch.from_numpy(advantage)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        lengths.append(float(len(rewards)))
        if episode % every == 0:
            print(f"episode {episode:4d}  loss (moves to goal) {np.mean(lengths[-every:]):.1f}")
    return lengths


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="episodes (default 300)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.steps, args.seed)
