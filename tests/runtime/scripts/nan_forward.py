"""log of a negative number makes the first NaN; the ops after it only carry it along."""
import dyngraph as torch

x = torch.tensor([1.0, -1.0, 2.0], requires_grad=True)
a = x * 2  # @scale
b = torch.log(a)  # @log
c = b * 3  # @after
loss = c.sum()  # @loss
loss.backward()
print("loss", float(loss))
