"""Attention masks hold -inf on purpose; an all-masked row still makes a real NaN."""
import sys

import dyngraph as torch
import dyngraph.nn.functional as F

scores = torch.randn(4, 4, requires_grad=True)
future = torch.ones(4, 4).triu(1).bool()
weights = F.softmax(scores.masked_fill(future, float("-inf")), dim=-1)  # @fill
additive = torch.zeros(4, 4).masked_fill(future, float("-inf"))  # data, not a parameter
weights2 = F.softmax(scores + additive, dim=-1)  # @add
loss = (weights * weights2).sum()
loss.backward()
print("masks ok")
if sys.argv[1:] == ["all-masked"]:
    everything = torch.ones(4, 4).bool()
    bad = F.softmax(scores.masked_fill(everything, float("-inf")), dim=-1)  # @allmasked
    print("after", bad.sum().item())
elif sys.argv[1:] == ["divide"]:
    ratio = scores / torch.zeros(4, 4)  # @divide
