# %% [markdown]
# # LDA by stochastic VMP
#
# A corpus drawn from LDA itself (300 documents, 5 topics over 40 words), fitted by stochastic
# VMP with minibatches of 30 documents (Hoffman et al.'s SVI: each document's q(theta) and q(z)
# optimized on the minibatch, the topics stepped with rho_t = (tau + t)^-kappa). The dashboard
# shows the bound evaluated on a subsample with its standard error, and the step sizes.

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

import vmp
from vmp.models import lda

rng = np.random.default_rng(1)
n_docs, n_words, n_topics, length = 300, 40, 5, 60
topics = rng.dirichlet(np.full(n_words, 0.1), size=n_topics)
theta = rng.dirichlet(np.full(n_topics, 0.3), size=n_docs)
counts = np.array([rng.multinomial(length, theta[d] @ topics) for d in range(n_docs)])
documents, words = np.nonzero(counts)

model = lda(documents, words, counts[documents, words], n_topics, n_documents=n_docs, n_words=n_words)
result = model.fit(method="stochastic", subsample=vmp.Minibatch("documents", 30),
                   step=vmp.RobbinsMonro(tau=1.0, kappa=0.7), iterations=300, evaluate_every=10,
                   seed=0, progress=False)
print(result)

# %% [markdown]
# The dashboard of the stochastic fit:

# %%
result.plot()  # a matplotlib Figure, shown as the cell's value

# %% [markdown]
# The topics found against the true ones: each estimated topic E[beta_k] matched to the true
# topic it is closest to (the rows of both are word distributions).

# %%
found = model["beta"].mean
order = [int(np.argmin(np.abs(found - t).sum(axis=1))) for t in topics]
fig, axes = plt.subplots(1, 2, figsize=(9, 3), sharey=True)
for ax, matrix, title in ((axes[0], topics, "true topics"), (axes[1], found[order], "E[beta], matched")):
    ax.imshow(matrix, aspect="auto", cmap="viridis")
    ax.set_title(title)
    ax.set_xlabel("word")
axes[0].set_ylabel("topic")
plt.show()
print("L1 distance of each matched topic:", np.round(np.abs(found[order] - topics).sum(axis=1), 3))
