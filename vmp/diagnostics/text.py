"""A plain-text summary of a fit: convergence state and, given the model, the posterior."""
from __future__ import annotations

import math

import numpy as np

from ..inference.batch import decrease_text

__all__ = ["summary", "describe_posterior"]

_SMALL = 12  # posterior means with at most this many numbers are printed in full


def _number(x: float) -> str:
    return f"{x:.6g}" if math.isfinite(x) else str(x)


def _convergence(result) -> list[str]:
    extra = getattr(result, "extra", None) or {}
    method = str(extra.get("method", "batch"))
    it = int(result.iterations)
    steps = f"{it} iteration{'s' if it != 1 else ''}"
    diverged = bool(getattr(result, "diverged", False))
    if diverged:
        head = f"fit: DIVERGED after {steps}"
    elif method == "stochastic" and not result.converged:
        head = f"fit: ran {steps} of stochastic VMP"
    else:
        head = f"fit: {'converged' if result.converged else 'NOT converged'} after {steps}"
    lines = [f"{head} ({result.message})"]
    if method == "stochastic" and not diverged and not result.converged \
            and result.message == "reached the iteration limit":  # not a callback's or a monitor's stop
        tol = extra.get("tol")
        lines[0] += ("; stopped at the iteration limit (tol= ends a stochastic fit when its bound stops improving)"
                     if tol is None else f"; stopped at the iteration limit before tol={tol:g} was met")
    how = f"method: {method}"
    if extra.get("update"):
        how += f", update {extra['update']}"
    lines.append(f"{how}; diverged: {'yes' if diverged else 'no'}")
    elbo = np.asarray(result.elbo, dtype=float)
    bound = str(extra.get("bound", "exact"))
    line = f"final ELBO: {_number(result.final_elbo)}"
    if bound.startswith("estimate"):
        ev = (getattr(result, "history", None) or {}).get("evaluations", {})
        se = np.asarray(ev.get("stderr", [np.nan]), float)
        line = f"final ELBO ({bound}, standard error {_number(float(se[-1]) if se.size else float('nan'))})"
        line += f": {_number(result.final_elbo)}"
    elif method == "stochastic":
        line = f"final ELBO (exact): {_number(result.final_elbo)}"
    if elbo.size > 1:
        line += f" (initial {_number(float(elbo[0]))})"
        if np.isfinite(elbo[-1]) and elbo[-1] < elbo[0]:
            line += "; WORSE THAN IT STARTED"
    seconds = getattr(result, "seconds", None)
    if seconds is not None:
        line += f"; {seconds:.3g} s"
    lines.append(line)
    starts = extra.get("n_init_bounds")
    if starts is not None and len(starts) > 1:
        lines.append(f"kept the best of {len(starts)} starts (n_init); their final ELBOs: "
                     + ", ".join(_number(float(b)) for b in starts))
    history = getattr(result, "history", None) or {}
    accesses = np.asarray(history.get("accesses", []), dtype=float)
    if accesses.size and np.isfinite(accesses[-1]):
        lines.append(f"observed-node accesses: {accesses[-1]:.6g}")
    rho = history.get("rho") or {}
    if method == "stochastic" and rho:
        last = [f"{name} {float(np.asarray(v)[-1]):.4g}" for name, v in rho.items() if np.size(v)]
        if last:
            lines.append("last step size rho: " + ", ".join(last))
    decrease = getattr(result, "decrease", None)
    if decrease:
        lines.append(f"ELBO decrease: {decrease_text(decrease)}")
    return lines


def _array(a: np.ndarray) -> str:
    return np.array2string(np.asarray(a, float), precision=3, suppress_small=True, separator=" ",
                           max_line_width=10_000, threshold=_SMALL).replace("\n", " ")


def describe_posterior(node) -> str:
    """A one-line description of q(node): its mean, or the mean's shape and a few stats."""
    from ..errors import VMPError

    try:
        mean = np.asarray(node.mean, dtype=float)
    except VMPError:
        return "no posterior yet (not fitted)"
    if mean.size <= _SMALL:
        return f"mean {_array(mean)}"
    return node.describe(mean, _array)


def describe_spread(node, level: float = 0.95) -> tuple[str, str]:
    """Standard deviations and central credible intervals of q's elementwise marginals (the
    family's ``marginal``: Normal, Gamma, Beta marginals of a Dirichlet, Bernoulli indicators of a
    Categorical), for small posteriors; "-" where there is none (Wishart) or too many to print."""
    from ..errors import VMPError

    try:
        natural = node.natural
        dist = None if natural is None else node.family.marginal(natural)
    except VMPError:
        dist = None
    if dist is None or np.size(dist.mean()) > _SMALL:
        return "-", "-"
    lo, hi = dist.interval(level)
    return _array(np.asarray(dist.std())), f"[{_array(np.asarray(lo))}, {_array(np.asarray(hi))}]"


def _table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    fmt = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return [fmt(header), fmt(tuple("-" * w for w in widths))] + [fmt(r) for r in rows]


def _plates(node) -> str:
    return ", ".join(f"{p.name}={p.size}" for p in node.plates) or "-"


def summary(result, model=None) -> str:
    """Convergence state (converged or diverged, iterations, message, method, final ELBO,
    seconds, accesses; for stochastic VMP the last step size per node) and, with the model, a
    table of the latent nodes (name, family, plates, posterior mean, standard deviation and 95%
    credible interval of small posteriors) and the observed ones."""
    lines = _convergence(result)
    if model is not None:
        nodes = list(model)
        latent = [n for n in nodes if not n.observed]
        observed = [n for n in nodes if n.observed]
        partial = sum(n.has_data for n in latent)
        some = f" ({partial} of them partially observed: data with masked entries)" if partial else ""
        lines += ["", f"model '{model.name}': {len(latent)} latent{some}, {len(observed)} observed node(s)"]
        if latent:
            rows = [(n.name, n.family.name, _plates(n), describe_posterior(n), *describe_spread(n))
                    for n in latent]
            lines += [""] + _table(rows, ("node", "family", "plates", "posterior", "sd", "95% interval"))
        missing = model.missing()
        if missing:
            lines += ["", "missing data: " + "; ".join(missing)]
        if observed:
            lines += ["", "observed: " + "; ".join(
                f"{n.name} ({n.family.name}, {_plates(n)})" for n in observed)]
    return "\n".join(lines) + "\n"
