# %% [markdown]
# # A Gaussian mixture
#
# Three clusters in two dimensions, a mixture of five components from `vmp.models`, fitted by
# batch VMP: the unneeded components empty out (their weights fall towards zero), the bound rises
# at every sweep, and the dashboard shows the convergence.

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

import vmp
from vmp.models import gaussian_mixture

rng = np.random.default_rng(0)
centers = np.array([[0.0, 0.0], [4.0, 1.0], [1.0, 4.5]])
x = np.concatenate([rng.multivariate_normal(c, 0.5 * np.eye(2), size=200) for c in centers])

model = gaussian_mixture(x, 5)
result = model.fit(iterations=1000, tol=1e-8, seed=0)
print(result)

# %% [markdown]
# The posterior: E[pi] (the weights); the joint q(mu_k, Lambda_k) of node `theta` gives E[mu_k]
# and E[Lambda_k], whose inverse draws the ellipses; each point's most probable component from q(z).

# %%
weights = model["pi"].mean
means = model["theta"].mean
covariances = np.linalg.inv(model["theta"].parameters["precision"])
labels = model["z"].mean.argmax(axis=1)
print("E[pi] =", np.round(weights, 3))

fig, ax = plt.subplots(figsize=(5, 5))
ax.scatter(x[:, 0], x[:, 1], c=labels, s=6, cmap="tab10", vmin=0, vmax=9)
t = np.linspace(0, 2 * np.pi, 100)
for k in np.flatnonzero(weights > 0.01):
    vals, vecs = np.linalg.eigh(covariances[k])
    ellipse = means[k][:, None] + vecs @ (2 * np.sqrt(vals)[:, None] * np.array([np.cos(t), np.sin(t)]))
    ax.plot(*ellipse, color="k")
ax.set_title("components with E[pi_k] > 0.01, two standard deviations")
plt.show()

# %% [markdown]
# The dashboard: the bound per sweep, its change and each node's relative change.

# %%
result.plot()  # a matplotlib Figure, shown as the cell's value
