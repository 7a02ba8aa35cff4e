# %% [markdown]
# # A local-level model: Kalman smoothing inside VMP
#
# A random walk observed with noise, with a gap of 15 missing steps. `vmp.models.local_level`
# declares the level as one `GaussianMarkovChain` (its q from a Kalman/RTS smoother at every
# sweep) and learns both noise precisions as Gamma nodes; the forecast runs the chain forward
# under q.

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

from vmp.models import local_level

rng = np.random.default_rng(0)
steps, ahead = 200, 40
truth = np.cumsum(rng.normal(0.0, 0.3, steps + ahead))
y = truth[:steps] + rng.normal(0.0, 1.0, steps)
y[120:135] = np.nan  # missing: the smoother fills the gap

model = local_level(y)
result = model.fit(iterations=2000)
print(result)
print("level sd", 1 / np.sqrt(model["level_precision"].mean[0]), "(simulated 0.3)")
print("noise sd", 1 / np.sqrt(model["noise_precision"].mean), "(simulated 1.0)")

# %% [markdown]
# The smoothed level with its 95% interval (wider across the gap), the filtered level (the
# forward pass alone) and the forecast of the level and of new observations.

# %%
smooth, filtered = model["level"].smoothed(), model["level"].filtered()
future = model.forecast(ahead, draws=4000, seed=0)
t, h = np.arange(steps), np.arange(steps, steps + ahead)
fig, ax = plt.subplots(figsize=(9, 4))
ax.plot(t, y, ".", color="0.55", ms=3, label="y")
ax.plot(np.r_[t, h], truth, color="k", lw=0.8, label="simulated level")
ax.plot(t, filtered.mean[0, :, 0], color="tab:orange", lw=1, label="filtered")
ax.plot(t, smooth.mean[0, :, 0], color="tab:blue", lw=1.5, label="smoothed, 95%")
ax.fill_between(t, smooth.lower[0, :, 0], smooth.upper[0, :, 0], color="tab:blue", alpha=0.2)
low, high = future.state_interval()
ax.plot(h, future.state_mean[0, :, 0], color="tab:green", lw=1.5, label="forecast, 95%")
ax.fill_between(h, low[0, :, 0], high[0, :, 0], color="tab:green", alpha=0.2)
ax.legend(loc="upper left", fontsize=8, ncol=2)
plt.show()

# %% [markdown]
# The dashboard: the bound per sweep and each node's relative change.

# %%
result.plot()
