"""Hidden Markov models (Beal 2003 ch. 3; MacKay 1997) on sequences of different lengths.

Sequences are padded to the longest; the padded steps are masked with weight 0 (absent: no data,
no latent value, nothing to impute; ``vmp/graph/missing.py``). A new emission family is one
function ``(y, mask, z, plates, options) -> None`` in ``EMISSIONS`` that declares the parameters
in a "states" plate and the observed node in the (sequences, time) ``plates``, gated by z.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

import vmp

from . import _checks


def _pad(name: str, sequences, vector: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(data padded to (S, T) or (S, T, D), mask (S, T), lengths (S,))."""
    seqs = [np.asarray(s) for s in sequences]
    if not seqs:
        raise vmp.DataError(f"{name}: no sequences")
    if vector:
        seqs = [s[:, None] if s.ndim == 1 else s for s in seqs]
    want = 2 if vector else 1
    if any(s.ndim != want for s in seqs) or (vector and len({s.shape[1] for s in seqs}) != 1):
        raise vmp.ShapeError(f"{name}: each sequence must be a {'T x D (or T)' if vector else 'length-T'} "
                             f"array with one D for all, got shapes {sorted({s.shape for s in seqs})}")
    lengths = np.array([len(s) for s in seqs])
    if lengths.min() < 1:
        raise vmp.DataError(f"{name}: sequence {int(np.argmin(lengths))} is empty")
    steps = int(lengths.max())
    data = np.zeros((len(seqs), steps) + seqs[0].shape[1:], dtype=np.result_type(*seqs))
    for i, s in enumerate(seqs):  # once, at declaration
        data[i, :len(s)] = s
    return data, np.arange(steps) < lengths[:, None], lengths


def _padding(mask: np.ndarray) -> np.ndarray | None:
    """The emissions' weights: 0 at the padded steps (None without padding)."""
    return None if mask.all() else mask.astype(float)


def _gaussian(y, mask, z, plates, options) -> None:
    """NaN coordinates of a step are missing: latent, q(y_m | y_o) (a step with none observed
    drops out, as a padded step does; its z_t is still inferred through the chain)."""
    x, seen = _checks.missing(options["name"], "sequences", y[mask])
    d = x.shape[1]
    center, cov = _checks.moments(x, seen)
    prec = np.linalg.inv(cov)
    dof = float(d) if options.get("dof") is None else options["dof"]
    beta = options.get("mean_precision", 1e-2)
    covariance = options.get("covariance", "factorized")
    with vmp.Plate("states", z.event_shape[0]):
        if covariance == "joint":
            theta = vmp.GaussianWishart("theta", mean=center, beta=beta, dof=dof, scale=prec / dof)
        elif covariance == "factorized":
            mu = vmp.Gaussian("mu", mean=center, precision=beta * prec)
            lam = vmp.Wishart("Lambda", dof=dof, scale=prec / dof)
        else:
            raise vmp.OptionError(f"{options['name']}: covariance must be 'joint' or 'factorized', got {covariance!r}")
    weights = _padding(mask)
    if seen is not None:
        data, coordinates = np.zeros(y.shape), np.zeros(y.shape, bool)
        data[mask], coordinates[mask] = x, seen
        y, mask = data, coordinates
    parents = (theta[z],) if covariance == "joint" else (mu[z], lam[z])
    with plates[0], plates[1]:
        vmp.Gaussian("y", *parents, observed=np.asarray(y, float), mask=mask, weights=weights)


def _categorical(y, mask, z, plates, options) -> None:
    name = options["name"]
    symbols = _checks.indices(name, "sequences", y[mask])
    m = int(symbols.max()) + 1 if options.get("n_symbols") is None else \
        _checks.count(name, "n_symbols", options["n_symbols"], minimum=2)
    with vmp.Plate("states", z.event_shape[0]):
        b = vmp.Dirichlet("B", alpha=np.full(m, options.get("beta", 1.0)))
    with plates[0], plates[1]:
        vmp.Categorical("y", b[z], observed=np.where(mask, y, 0).astype(np.int64), mask=mask,
                        weights=_padding(mask))


def _poisson(y, mask, z, plates, options) -> None:
    counts = _checks.indices(options["name"], "sequences", y[mask])
    shape = float(options.get("shape", 1.0))
    rate = float(options.get("rate", shape / max(counts.mean(), 1e-3)))
    with vmp.Plate("states", z.event_shape[0]):
        lam = vmp.Gamma("lam", shape=shape, rate=rate)
    with plates[0], plates[1]:
        vmp.Poisson("y", lam[z], observed=np.where(mask, y, 0).astype(float), mask=mask,
                    weights=_padding(mask))


#: emission families by name: each declares its parameters and the observed node
EMISSIONS: dict[str, Callable] = {"gaussian": _gaussian, "categorical": _categorical, "poisson": _poisson}


def hmm(sequences, n_states: int, *, emission: str = "gaussian", initial_alpha: float = 1.0,
        transition_alpha: float = 1.0, name: str = "hmm", **options) -> vmp.Model:
    """Build an HMM for ``sequences`` (a list of arrays of different lengths, or an S x T array):

        pi0 ~ Dir(initial_alpha),  A_j ~ Dir(transition_alpha)   for each state j = 1..K
        z_s ~ MarkovChain(pi0, A)   each sequence s: q(z_s) one chain, from forward-backward

    and emissions y_st given z_st, by ``emission``:

    - ``"gaussian"``: mu_k ~ N(m0, P0^-1), Lambda_k ~ W(nu0, W0), y_st ~ N(mu_{z_st}, Lambda_{z_st}^-1);
      with ``covariance="joint"``, (mu_k, Lambda_k) ~ N(m0, (beta Lambda_k)^-1) W(nu0, W0), one
      Normal-Wishart q per state (hmmlearn's VariationalGaussianHMM);
    - ``"categorical"``: B_k ~ Dir(beta), y_st ~ Cat(B_{z_st}) over ``n_symbols`` symbols;
    - ``"poisson"``: lam_k ~ Gamma(a, b), y_st ~ Poisson(lam_{z_st}) (counts).

    Nodes: ``pi0``, ``A`` (plate "states"), ``z`` (plates "sequences" x "time"), the emission's
    parameters (plate "states": ``mu`` and ``Lambda``, or ``theta`` with ``covariance="joint"``;
    ``B``; or ``lam``) and ``y`` (observed,
    "sequences" x "time").

    ``initial_alpha`` and ``transition_alpha`` are the Dirichlet concentrations of pi0 and of each
    row of A. Gaussian options: ``mean_precision`` (P0 = mean_precision * S^-1, m0 the data mean;
    beta = mean_precision for ``covariance="joint"``, the same prior precision of mu at
    E[Lambda_k]), ``dof`` (nu0, default D; W0 = S^-1 / nu0, so E[Lambda_k] = S^-1),
    ``covariance`` ("factorized": q(mu_k) q(Lambda_k), the default; "joint": q(mu_k, Lambda_k)). Categorical options:
    ``n_symbols`` (default: the largest symbol + 1), ``beta`` (the Dirichlet concentration of B_k).
    Poisson options: ``shape`` a (default 1) and ``rate`` b (default a / the mean count, so that
    E[lam_k] is the mean count).

    Gaussian emissions may have missing coordinates: NaN entries of a step are latent
    (docs/reference.md, "Missing data").
    """
    if emission not in EMISSIONS:
        raise vmp.GraphError(f"{name}: emission must be one of {sorted(EMISSIONS)}, got {emission!r}")
    k = _checks.count(name, "n_states", n_states, minimum=2)
    y, mask, lengths = _pad(name, sequences, vector=emission == "gaussian")
    s, steps = mask.shape
    with vmp.Model(name) as model:
        pi0 = vmp.Dirichlet("pi0", alpha=np.full(k, initial_alpha))
        with vmp.Plate("states", k):
            a = vmp.Dirichlet("A", alpha=np.full(k, transition_alpha))
        plates = vmp.Plate("sequences", s), vmp.Plate("time", steps)
        with plates[0], plates[1]:
            z = vmp.CategoricalMarkovChain("z", initial=pi0, transition=a, lengths=lengths)
        EMISSIONS[emission](y, mask, z, plates, dict(options, name=name))
    return model
