# %% [markdown]
# # Logistic regression by Polya-gamma VMP
#
# Bayesian logistic regression on scikit-learn's breast-cancer data (569 tumours, 30 features,
# standardized): `vmp.models.logistic_regression` declares `vmp.Bernoulli("y", logit=...)`; the
# engine adds one Polya-gamma auxiliary per observation, so q(w) is Gaussian and the bound is
# exact. The predictive probability integrates the logit over q(w).

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from vmp.models import logistic_regression

x, y = load_breast_cancer(return_X_y=True)
x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.3, random_state=0)
scaler = StandardScaler().fit(x_train)
x_train, x_test = scaler.transform(x_train), scaler.transform(x_test)

model = logistic_regression(x_train, y_train.astype(float))
result = model.fit(iterations=1000, seed=0)
print(result)
model.set_data("X", x_test)  # the held-out rows: their classes are unknown to the model
p_vmp = model.predict("y").mean
p_sklearn = LogisticRegression(C=1.0).fit(x_train, y_train).predict_proba(x_test)[:, 1]
print("held-out accuracy: vmp", np.mean((p_vmp > 0.5) == y_test), "scikit-learn", np.mean((p_sklearn > 0.5) == y_test))

# %% [markdown]
# The weights' posterior means with 95% intervals, and the two libraries' probabilities on the
# held-out rows: the posterior predictive is less confident than the point estimate where the
# weights are uncertain.

# %%
w = model["w"]
sd = np.sqrt(np.diag(w.parameters["covariance"]))
order = np.argsort(w.mean)
fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
axes[0].errorbar(w.mean[order], np.arange(len(order)), xerr=1.96 * sd[order], fmt="o", ms=3)
axes[0].set_yticks(np.arange(len(order)), load_breast_cancer().feature_names[order], fontsize=6)
axes[0].axvline(0, color="0.6", lw=0.8)
axes[0].set_xlabel("E[w_d] and 95% interval")
axes[1].scatter(p_sklearn, p_vmp, s=8, c=y_test, cmap="coolwarm")
axes[1].plot([0, 1], [0, 1], "k", lw=0.8)
axes[1].set_xlabel("scikit-learn P(benign)")
axes[1].set_ylabel("vmp P(benign), integrated over q(w)")
fig.tight_layout()
plt.show()
