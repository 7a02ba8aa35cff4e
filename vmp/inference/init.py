"""Initial q: each node at its prior message, then seeded symmetry breaking.

A mixture started at its prior is a symmetric saddle: every component gets the same update.
By default the means of Gaussian components gated by a Categorical start at data points chosen
k-means++-style (Arthur & Vassilvitskii 2007); other components that are an observed child's
only random parent, gated over i.i.d. points (mixtures of counts, categories, bits), start each
at its prior updated by one point, the points drawn by k-means++ in the model's divergence
(``seeding.py``); other gated Dirichlet rows get random pseudo-counts (as scikit-learn's LDA;
larger ones under a Markov chain, as hmmlearn draws a random emission matrix), gated Gammas a
random offset; each gate's selector is then updated from them (an E-step). Gaussians in an inner
product start at a draw from their prior and Gammas in one (Poisson factorization) at their prior
plus a random offset. ``init={name: value}``
is applied last: a mean for Gaussian/Normal nodes, probabilities for Categorical nodes (marginals
for a CategoricalMarkovChain: independent steps), a path for a GaussianMarkovChain
(``Family.start_at``). ``init=State`` is a warm start: the stepped nodes' q taken from it as
they are (a stream's next chunk starts at the globals of the last one).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DataError, GraphError, ShapeError
from ..factors.terms import MAX_INTERMEDIATE
from ..graph.expressions import Diagonal, Dot, Gate, random_nodes
from ..graph.leaves import Context
from .seeding import assigned, seed_components, seedable
from .state import LoopState, State


def initialize(engine, rng: np.random.Generator, init: Any = None, plan=None) -> State:
    """The initial State: every hidden node at its prior message (parents first), then the
    symmetry breaking and ``init``'s means.

    For a plan with a local step (Minibatch) only the global nodes get a q (the locals are
    computed per minibatch and never over the whole plate) and the symmetry breaking reads the
    plan's evaluation subsample."""
    local = plan is not None and plan.local_step
    if isinstance(init, State):
        return _given(engine, init, plan.stepped if local else engine.hidden)
    state = State()
    for node in plan.stepped if local else engine.hidden:
        state = _set(state, node, engine.factors[node.name].messages(node, ctx=Context(state=state)))
    if init == "prior":
        return state
    if init is not None and not isinstance(init, dict):
        raise GraphError("init= takes 'prior' or a dict from node names to initial means/probabilities")
    state = _break_symmetry(engine, state, rng, plan.evaluation if local else None)
    for name, value in (init or {}).items():
        if engine.model[name].name not in state.natural and not engine.model[name].observed:
            raise GraphError(f"init: node '{name}' is local to the minibatch plate; its q is computed per minibatch")
        state = _set_mean(state, engine.model[name], np.asarray(value, float))
    return state


def _given(engine, init: State, nodes) -> State:
    """A warm start: ``nodes``' q as ``init`` has them (its step counter and its schedules'
    states kept, so a schedule continues: a stream's chunks are one stochastic run), their
    moments formed again; a GraphError names a node it lacks."""
    missing = [n.name for n in nodes if n.name not in init.natural]
    if missing:
        raise GraphError(f"init: the State given has no q for {missing}")
    natural = {n.name: tuple(init.natural[n.name]) for n in nodes}
    return State(natural, {n.name: engine.moments(n, natural[n.name]) for n in nodes}, init.step,
                 loop=LoopState(schedules=dict(init.loop.schedules)))


def _rows(data, rows):
    """Rows of observed data (all of them when ``rows`` is None); reads only those rows."""
    from ..graph.data import take_rows

    return np.asarray(data) if rows is None else take_rows(data, rows)


def _points(child, rows, event: tuple):
    """The observed points of ``child`` (at ``rows``) as rows of ``event``-shaped values; data out
    of core and not subsampled stay where they are (k-means++ streams them)."""
    from ..graph.data import is_lazy

    if rows is None and is_lazy(child.data) and child.data.ndim == 1 + len(event):
        return child.data
    data = np.asarray(_rows(child.data, rows), float).reshape((-1,) + event)
    return data if child.mask is None else data[_rows(child.complete, rows).reshape(-1)]


def _set(state: State, node, natural) -> State:
    natural = node.pinned(natural)
    return state.updated({node.name: (natural, node.family.moments(tuple(natural)))})


def _set_mean(state: State, node, value: np.ndarray) -> State:
    if node.observed:
        raise GraphError(f"init: node '{node.name}' is observed")
    natural = state.natural[node.name]
    want = np.shape(node.family.mean(natural, state.moments[node.name]))
    if not _broadcasts(value.shape, want):
        raise ShapeError(f"init: node '{node.name}': the mean given has shape {value.shape}, which does not "
                         f"broadcast to the node's mean, shape {want}")
    try:
        natural = node.family.start_at(natural, value)
    except NotImplementedError:
        raise GraphError(f"init: cannot set the mean of {node.family.name} node '{node.name}'; give a node of "
                         f"a family with a location (Gaussian, Normal) or over categories (Categorical, "
                         f"CategoricalMarkovChain)") from None
    with np.errstate(all="ignore"):
        if not np.all(node.family.valid(natural)):
            raise DataError(f"init: node '{node.name}': the mean given is outside the {node.family.name} "
                            f"domain (probabilities must be non-negative, values finite)")
    return _set(state, node, natural)


def _broadcasts(shape: tuple, to: tuple) -> bool:
    """Does an array of ``shape`` broadcast to ``to`` (and not beyond it)."""
    try:
        return np.broadcast_shapes(shape, to) == to
    except ValueError:
        return False


def _expressions(engine):
    """(child, expression, top) for every expression inside every parent role, reached
    through ``inputs()`` so that any kind of glue (gate, gather, dot, sum...) is traversed."""
    def walk(expr):
        yield expr
        for inner in expr.inputs():
            yield from walk(inner)

    for node in engine.model.nodes.values():
        for top in node.parents.values():
            for expr in walk(top):
                yield node, expr, top


def _break_symmetry(engine, state: State, rng, rows=None) -> State:
    """Break the symmetry of gated components, then set each gate's selector from them.

    Gaussian components that are the gated mean of observed data start at k-means++ centers (of
    the complete rows where single coordinates are missing);
    components of i.i.d. points that are their observed child's only random parent at seeds drawn
    by k-means++ in the model's divergence (:func:`seeding.seed_components`); other gated
    Gaussians, and the Gaussians of an inner product, start at a draw from their prior. The schedule runs parents before children, so the first sweep starts from these
    responsibilities (an E-step from k-means++ centers, as EM and scikit-learn do).
    """
    done, selectors = set(), []
    for child, expr, top in _expressions(engine):
        if isinstance(expr, Gate) and not expr.node.observed and expr.node.name not in done:
            p = expr.node
            direct = p.family.location and expr is top and (child.observed or child.partial) \
                and p.plates == (expr.gated_plate,)
            data = _points(child, rows, p.event_shape) if direct else None
            if direct and data.shape[0] >= expr.gated_plate.size:
                state = _set_mean(state, p, kmeanspp(data, expr.gated_plate.size, rng))
                done.add(p.name)
            elif _clustered(expr, child, top) and (clustered := kmeans_components(engine, state, rng, expr, child,
                                                                                  rows)) is not None:
                state = clustered
                done.add(p.name)
            elif seedable(expr, child, top) and _count(expr.selector, rows) >= expr.gated_plate.size:
                state = seed_components(engine, state, rng, expr, child, rows)
                done.add(p.name)
            else:
                moved = p.family.perturb(state.natural[p.name], rng, _concentration(expr.selector))
                if moved is not None:
                    state = _set(state, p, moved)
                    done.add(p.name)
        if isinstance(expr, Gate) and expr.node.name in done and not expr.selector.observed \
                and expr.selector not in selectors:
            selectors.append(expr.selector)
        if isinstance(expr, Dot):
            for n in random_nodes(expr):
                if (n.family.location or n.family.allocates) and n.name not in done and n.name in state.natural:
                    state = _set(state, n, n.family.perturb(state.natural[n.name], rng))
                    done.add(n.name)
    for z in sorted(selectors, key=engine.hidden.index, reverse=True):
        if z.name in state.natural:
            state = state.updated({z.name: engine.coordinate(state, z)})
    return state


def _clustered(gate, child, top) -> bool:
    """Components of a family that ``clusters`` (a Gaussian's mean and precision together) that
    are the whole role of an observed child over the selector's plates (a mixture's points, an
    HMM's steps): they start from k-means responsibilities (:func:`kmeans_components`)."""
    z = gate.selector
    whole = gate is top or (isinstance(top, Diagonal) and top.node is gate)
    return (gate.node.family.clusters and whole and (child.observed or child.partial) and not z.observed
            and z.family.one_hot and (len(z.plates) == 1 or z.family.joint_plates > 0)
            and child.plates[:len(z.plates)] == z.plates)


def _count(selector, rows) -> int:
    return selector.plates[0].size if rows is None else len(rows)


POOLED, UNPOOLED = 100.0, 1.0


def _concentration(selector) -> float:
    """How far a gated component's start moves (``Family.perturb``): Gamma(100, 0.01) noise, as
    scikit-learn and gensim start LDA's topics, where each element's choice is pooled with its
    group's at the first sweep (a document's theta); Gamma(1, 1) noise, as hmmlearn draws a
    random emission matrix, where the selector has joint plates (a Markov chain), whose
    transition matrix starts at its symmetric prior: a 10% move then leaves the E-step at the
    symmetric saddle, and the fit stops there."""
    return UNPOOLED if selector.family.joint_plates else POOLED


def kmeanspp(x, k: int, rng: np.random.Generator) -> np.ndarray:
    """k rows of x, the first uniform and each next with probability proportional to D(x)^2.
    ``x`` may be out of core: the distances are computed a block of rows at a time (each row's
    distance does not depend on the blocks, so the draws are those of x in memory)."""
    n = x.shape[0]
    event = tuple(x.shape[1:])
    block = max(1, MAX_INTERMEDIATE // 4 // max(int(np.prod(event)), 1))

    def row(i):
        return np.asarray(x[int(i)], float).reshape(-1)

    def blocks():
        for lo in range(0, n, block):
            yield lo, np.asarray(x[lo:lo + block], float).reshape(-1, int(np.prod(event)))

    squares = np.empty(n)
    for lo, xb in blocks():
        squares[lo:lo + block] = np.einsum("ij,ij->i", xb, xb)

    def distances(center):
        """||x_n - c||^2 = ||x_n||^2 - 2 x_n.c + ||c||^2 (one matrix-vector product per block),
        at least 0."""
        out = np.empty(n)
        for lo, xb in blocks():
            np.matmul(xb, -2.0 * center, out=out[lo:lo + block])
        out += squares
        out += center @ center
        return np.maximum(out, 0.0, out=out)

    centers = [row(rng.integers(n))]
    d2 = distances(centers[0])
    for _ in range(1, k):
        total = d2.sum()
        i = weighted_index(rng, d2 / total) if total > 0 else rng.integers(n)
        centers.append(row(i))
        d2 = np.minimum(d2, distances(centers[-1]))
    return np.stack(centers).reshape((k,) + event)


#: k-means starts read at most this many points (drawn at random), keep the best (least
#: within-cluster sum of squares) of this many runs (scikit-learn KMeans' classic n_init), each
#: at most this many of Lloyd's iterations (one run lands in poorer k-means optima, and the
#: mixture's adjusted Rand index with it: docs/reference.md, "Mixtures on real data")
KMEANS_ROWS, KMEANS_STARTS, KMEANS_ITERATIONS = 20_000, 10, 100


def kmeans_components(engine, state: State, rng: np.random.Generator, gate, child, rows=None) -> State | None:
    """``state`` with the components of ``gate`` (a family that ``clusters``: a Gaussian's mean
    and precision together) and the selector's own parents (the weights; a chain's initial and
    transition probabilities) updated from the k-means responsibilities of ``child``'s complete
    points: an M step from one-hot labels, as scikit-learn's BayesianGaussianMixture and
    hmmlearn start. k-means reads at most KMEANS_ROWS points and keeps the best of KMEANS_STARTS
    runs of Lloyd's algorithm from k-means++ centers. ``rows``: the rows of a Categorical
    selector's plate to read (a minibatch fit's). None when fewer complete points than
    components, or for a minibatch of chains."""
    z, k = gate.selector, gate.gated_plate.size
    chain = z.family.joint_plates > 0
    if chain and rows is not None:
        return None
    size = int(np.prod(z.plate_shape))  # the points: one per element of z's plates
    where = np.arange(size) if rows is None else np.sort(np.asarray(rows))
    if child.complete is not None:
        where = where[np.asarray(child.complete).reshape(size, -1).all(-1)[where]]
    if where.size < k:
        return None
    overrides = {}
    if chain:
        x = np.asarray(child.data, float).reshape(size, -1)[where]
    else:
        rows_data = np.asarray(_rows(child.data, where), float)
        x = rows_data.reshape(where.size, -1)
        if not child.observed:  # partially observed: these complete rows are data (a minibatch's x has no q yet)
            overrides[child.name] = tuple(child.family.statistics(rows_data, child.event_shape))
    fit = x[np.sort(rng.choice(x.shape[0], KMEANS_ROWS, replace=False))] if x.shape[0] > KMEANS_ROWS else x
    centers = min((lloyd(fit, kmeanspp(fit, k, rng)) for _ in range(KMEANS_STARTS)), key=lambda run: run[1])[2]
    one_hot = np.eye(k)[nearest(x, centers)]
    if chain:
        marginals = np.full((size, k), 1.0 / k)
        marginals[where] = one_hot
        marginals = marginals.reshape(z.plate_shape + (k,))
        pairs = np.zeros(z.plate_shape + (k, k))
        pairs[..., :-1, :, :] = marginals[..., :-1, :, None] * marginals[..., 1:, None, :]
        where, assignment = None, (marginals, pairs)
    else:
        assignment = (one_hot,)
    state = assigned(engine, state, gate.node, child, z, where, assignment, overrides)
    for parent in {n.name: n for e in z.parents.values() for n in random_nodes(e)}.values():
        if parent.name in state.natural:
            state = assigned(engine, state, parent, z, z, where, assignment)
    return state


def nearest(x: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """Each point's nearest center (the first of equals)."""
    d2 = np.einsum("ij,ij->i", x, x)[:, None] - 2.0 * x @ centers.T + np.einsum("ij,ij->i", centers, centers)
    return np.argmin(d2, axis=1)


def lloyd(x: np.ndarray, centers: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """Lloyd's algorithm (k-means) from ``centers``: the labels, their within-cluster sum of
    squares and the centers. Each point goes to its nearest center (the first of equals), each
    center to its points' mean (kept where it has none), until no label changes or
    KMEANS_ITERATIONS."""
    squares = np.einsum("ij,ij->i", x, x)
    labels = None
    for _ in range(KMEANS_ITERATIONS):
        d2 = squares[:, None] - 2.0 * x @ centers.T + np.einsum("ij,ij->i", centers, centers)
        new = np.argmin(d2, axis=1)
        inertia = float(np.maximum(d2[np.arange(len(x)), new], 0.0).sum())
        if labels is not None and np.array_equal(new, labels):
            break
        labels = new
        members = np.arange(centers.shape[0])[:, None] == labels
        counts = members.sum(1)
        centers = np.where(counts[:, None] > 0, (members @ x) / np.maximum(counts, 1)[:, None], centers)
    return labels, inertia, centers


def weighted_index(rng: np.random.Generator, p: np.ndarray) -> int:
    """The index ``rng.choice(len(p), p=p)`` draws, and the same use of the generator: numpy's
    inverse CDF (the cumulative sum over its last element, one uniform searched from the right)
    without choice's checks of p (finite, non-negative, summing to 1: true of D(x)^2 over its
    sum), which cost k-means++ more than its distances."""
    cdf = p.cumsum()
    cdf /= cdf[-1]
    return int(cdf.searchsorted(rng.random(), side="right"))
