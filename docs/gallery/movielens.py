# %% [markdown]
# # Matrix factorization on MovieLens
#
# Bayesian matrix factorization r_mn ~ N(u_m . v_n, 1/tau) with K = 5 factors, fitted by batch VMP
# on MovieLens ml-latest-small (100,836 ratings). The ratings file is read from
# `../shared/data/movielens-small/ratings.csv` beside the repository (or `$VMP_MOVIELENS`);
# where it is missing, this page uses synthetic ratings of the same shape and says so below.

# %%
# %matplotlib inline
import os
import pathlib

import matplotlib.pyplot as plt
import numpy as np

from vmp.models import matrix_factorization


def ratings_file() -> pathlib.Path | None:
    here = pathlib.Path.cwd().resolve()
    candidates = [os.environ.get("VMP_MOVIELENS", "")] + [
        str(p / "shared" / "data" / "movielens-small" / "ratings.csv") for p in here.parents]
    return next((pathlib.Path(c) for c in candidates if c and pathlib.Path(c).is_file()), None)


path = ratings_file()
rng = np.random.default_rng(0)
if path is not None:
    raw = np.loadtxt(path, delimiter=",", skiprows=1, usecols=(0, 1, 2))
    users = np.unique(raw[:, 0], return_inverse=True)[1].ravel()
    items = np.unique(raw[:, 1], return_inverse=True)[1].ravel()
    ratings = raw[:, 2]
    print(f"MovieLens ml-latest-small from {path.name}: {ratings.size} ratings")
else:
    n_users, n_items, k = 610, 2000, 3
    users, items = rng.integers(n_users, size=30_000), rng.integers(n_items, size=30_000)
    u, v = rng.normal(size=(n_users, k)), rng.normal(size=(n_items, k))
    ratings = np.clip(np.round(2 * (3.5 + 0.4 * np.sum(u[users] * v[items], axis=1)
                                    + 0.5 * rng.normal(size=users.size))) / 2, 0.5, 5.0)
    print(f"NOTE: ratings.csv not found; synthetic ratings instead ({ratings.size} ratings)")
print(f"{users.max() + 1} users, {items.max() + 1} items")

# %% [markdown]
# A random tenth of the ratings is held out. The model sees the centred training ratings.

# %%
test = rng.random(ratings.size) < 0.1
centre = ratings[~test].mean()
model = matrix_factorization(users[~test], items[~test], ratings[~test] - centre, 5,
                             n_users=users.max() + 1, n_items=items.max() + 1)
result = model.fit(iterations=200, tol=1e-5, seed=0)
print(result)

predict = centre + np.sum(model["u"].mean[users] * model["v"].mean[items], axis=1)
for name, rows in (("training", ~test), ("held-out", test)):
    print(f"{name} RMSE {np.sqrt(np.mean((predict[rows] - ratings[rows]) ** 2)):.3f}")
print(f"noise sd 1/sqrt(E[tau]) = {1 / np.sqrt(model['tau'].mean):.3f}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
axes[0].plot(result.elbo[1:])
axes[0].set_xlabel("sweep")
axes[0].set_ylabel("ELBO")
axes[0].set_title("the bound never decreases")
axes[1].hist(predict[test] - ratings[test], bins=60)
axes[1].set_xlabel("held-out prediction - rating")
axes[1].set_title("held-out errors")
plt.tight_layout()
plt.show()
