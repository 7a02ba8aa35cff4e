# %% [markdown]
# # Annealing and tempering
#
# SVI on a Gaussian mixture with more components (8) than clusters (4, two close pairs) can stop
# at a poor local optimum. Deterministic annealing (Mandt et al.'s AVI) starts at a temperature
# T > 1, flattening the bound, and lowers it to 1; global variational tempering makes T a latent
# variable whose q(T) the data move. Both are policies: weights on the data plate's messages.

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

import vmp
from vmp.models import gaussian_mixture

rng = np.random.default_rng(0)
centers = np.array([[0.0, 0.0], [1.8, 0.0], [6.0, 6.0], [6.0, 7.8]])
x = centers[rng.choice(4, size=500, p=[0.4, 0.3, 0.2, 0.1])] + 0.5 * rng.normal(size=(500, 2))

steps = 400
methods = {
    "SVI": [],
    "annealing, T: 5 -> 1": [vmp.Annealing.linear(5.0, 100)],
    "global tempering": [vmp.Tempering(np.geomspace(1.0, 10.0, 20), samples=50)],
}
results = {}
for label, policies in methods.items():
    model = gaussian_mixture(x, 8)
    results[label] = model.fit(
        method="stochastic", subsample=vmp.Minibatch("data", 25), step=vmp.RobbinsMonro(tau=1.0, kappa=0.7),
        iterations=steps, evaluate_every=20, seed=0, policies=policies, progress=False)
    used = int(np.sum(model["pi"].mean > 0.01))
    print(f"{label:22s} final ELBO {results[label].final_elbo:9.1f}, components with E[pi_k] > 0.01: {used}")

# %% [markdown]
# The evaluated bound at T = 1 along each run, and the temperature each policy set (for global
# tempering, E[1/T]^-1 under q(T)). Compare where each run ends and how many components it keeps.

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
for label, r in results.items():
    ev = r.history["evaluations"]
    axes[0].plot(ev["iteration"], ev["elbo"], label=label)
    if "temperature" in r.history:
        axes[1].plot(r.history["iteration"], r.history["temperature"], label=label)
axes[0].set_xlabel("step")
axes[0].set_ylabel("ELBO (T = 1)")
axes[0].set_ylim(np.percentile(np.concatenate([r.history["evaluations"]["elbo"] for r in results.values()]), 5), None)
axes[0].legend()
axes[1].set_xlabel("step")
axes[1].set_ylabel("temperature")
axes[1].legend()
plt.tight_layout()
plt.show()
