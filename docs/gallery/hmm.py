# %% [markdown]
# # A hidden Markov model
#
# Twenty sequences of different lengths from a three-state chain with Gaussian emissions,
# fitted with `vmp.models.hmm`: q(z) of each chain comes from forward-backward inside VMP, the
# transition matrix and the emission parameters are Dirichlet, Gaussian and Wishart nodes.

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

import vmp

rng = np.random.default_rng(0)
a = np.array([[0.95, 0.04, 0.01], [0.03, 0.95, 0.02], [0.02, 0.03, 0.95]])
levels = np.array([-2.0, 0.0, 2.5])
sequences, states = [], []
for length in rng.integers(80, 150, size=20):
    z = [rng.integers(3)]
    for _ in range(length - 1):
        z.append(rng.choice(3, p=a[z[-1]]))
    z = np.array(z)
    states.append(z)
    sequences.append((levels[z] + 0.6 * rng.normal(size=length))[:, None])

model = vmp.models.hmm(sequences, 3)
result = model.fit(iterations=200, tol=1e-8, seed=0)
print(result)

# %% [markdown]
# The learned transition matrix E[A] (rows ordered by the learned emission means) and the
# posterior state probabilities of the first sequence against the truth.

# %%
means = model["mu"].mean[:, 0]
order = np.argsort(means)
print("emission means:", np.round(means[order], 2))
print("E[A] =\n", np.round(model["A"].mean[np.ix_(order, order)], 3))

marginals = model["z"].mean[0][: len(sequences[0])][:, order]
fig, axes = plt.subplots(2, 1, figsize=(9, 4), sharex=True)
axes[0].plot(sequences[0][:, 0], lw=0.8)
axes[0].set_ylabel("x")
axes[1].stackplot(np.arange(len(marginals)), marginals.T, labels=["low", "middle", "high"])
axes[1].plot(np.argsort(order)[states[0]] / 2.0, "k", lw=0.8, label="true state / 2")
axes[1].set_ylabel("q(z_t)")
axes[1].legend(loc="upper right", fontsize=7)
plt.show()
