# %% [markdown]
# # Paquet's divergence and the monitors
#
# Stochastic VMP with option (b) ("global": every node steps from one snapshot of the others) is a
# Jacobi step across nodes. Where many nodes explain the same data it overshoots: here forty
# separate Normal nodes a_1..a_20 whose sum is the mean of 200 observations, stepped with
# PerNode(children=1) and rho_t = t^-0.6 from their prior, each absorbs the whole residual and the
# bound falls without bound (Paquet's pitfall; vmp's option (b) sweeps the slices of one coupled
# node, so Paquet's own factorized u_mk no longer show it, but separate nodes still do).
#
# The monitors watch each step and the bound: `ElboMonitor(action="stop")` ends the run at the
# first large fall with `result.diverged = True`; `action="backoff"` rejects the step, halves the
# step sizes and goes on, turning the divergence into a converging run.

# %%
# %matplotlib inline
import warnings

import matplotlib.pyplot as plt
import numpy as np

import vmp


def separate_nodes(k: int = 20, n: int = 200) -> vmp.Model:
    y = 3.5 + 0.5 * np.random.default_rng(0).normal(size=n)
    with vmp.Model("sum of nodes") as model:
        a = [vmp.Normal(f"a{i}", mean=0.0, precision=1.0) for i in range(k)]
        mean = a[0]
        for node in a[1:]:
            mean = mean + node
        with vmp.Plate("data", n):
            vmp.Normal("y", mean=mean, precision=1.0, observed=y)
    return model


runs = {
    "unmonitored": [],
    "ElboMonitor(stop)": [vmp.ElboMonitor(patience=1, action="stop")],
    "Domain + ElboMonitor(backoff)": [vmp.DomainMonitor(action="backoff"), vmp.ElboMonitor(patience=1, action="backoff")],
}
results = {}
for label, monitors in runs.items():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results[label] = separate_nodes().fit(
            method="stochastic", subsample=vmp.PerNode(children=1), update="global", init="prior",
            step=vmp.RobbinsMonro(tau=0.0, kappa=0.6, rho1=1.0), iterations=60, evaluate_every=1,
            monitors=monitors, progress=False)
    r = results[label]
    print(f"{label:30s} steps {r.iterations:3d}  diverged {r.diverged!s:5s}  final ELBO {r.elbo[-1]:.4g}  "
          f"events {len(r.history['events'])}")

# %% [markdown]
# The bound of each run (a symmetric log scale: the unmonitored run falls by orders of magnitude):

# %%
fig, ax = plt.subplots(figsize=(7, 4))
for label, r in results.items():
    ev = r.history["evaluations"]
    ax.plot(ev["iteration"], ev["elbo"], label=label, marker="." if r.iterations < 10 else None)
ax.set_yscale("symlog")
ax.set_xlabel("step")
ax.set_ylabel("ELBO")
ax.legend()
plt.show()

# %% [markdown]
# The monitor's verdicts are events in the history; the backed-off run's step sizes show each
# rejected step:

# %%
backoff = results["Domain + ElboMonitor(backoff)"]
for event in backoff.history["events"][:5]:
    print(event)
fig, ax = plt.subplots(figsize=(7, 3))
ax.semilogy(backoff.history["iteration"], backoff.history["rho"]["a0"], label="rho of a0 (backoff)")
ax.semilogy(backoff.history["iteration"], [vmp.RobbinsMonro(tau=0.0, kappa=0.6)(t) for t in backoff.history["iteration"]],
            "--", label="the schedule alone")
ax.set_xlabel("step")
ax.legend()
plt.show()
