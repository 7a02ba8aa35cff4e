"""The model: a named DAG of nodes (networkx), entered with ``with``."""
from __future__ import annotations

from ..errors import GraphError, OptionError
from . import context
from .expressions import Expression
from .facades import facade


class Model:
    """A Bayesian network. Declare nodes inside ``with Model(name):``; ``model["x"]`` finds one."""

    #: the evaluator's strategies (``vmp/graph/strategies``): None all, () the reference alone
    _strategies: tuple | None = None

    def __init__(self, name: str = "model"):
        self.name = name
        self.nodes: dict = {}
        self.plates: dict = {}
        self.inputs: dict = {}  # name -> vmp.Data (named constant inputs that set_data replaces)
        self._compiled = None
        self._live = None  # per factor, the child elements with a live descendant (missing.resolve), when given
        self.state = None  # the State of the last fit (vmp.inference.State): every node's q

    def __getstate__(self) -> dict:
        out = dict(self.__dict__)
        out["_compiled"] = None  # bound factors and their memo caches are rebuilt on demand
        return out

    def current_state(self):
        """``self.state``, or an empty State before anything was set."""
        if self.state is None:
            self.state = facade("state")()
        return self.state

    def __enter__(self) -> "Model":
        context._MODELS.append(self)
        return self

    def __exit__(self, *exc) -> None:
        context._MODELS.remove(self)

    def _add(self, node) -> None:
        if node.name in self.nodes or node.name in self.inputs:
            raise GraphError(f"model '{self.name}': a node named '{node.name}' exists already")
        self._check_same_model(node)
        self.nodes[node.name] = node
        self._compiled = None

    def _add_data(self, data) -> None:
        if data.name in self.nodes or data.name in self.inputs:
            raise GraphError(f"model '{self.name}': the name '{data.name}' is taken")
        self.inputs[data.name] = data

    def _check_same_model(self, node) -> None:
        """Refuse a parent declared in another model (its q would never be updated here)."""
        from .node import Node

        stack = [e for e in node.parents.values() if isinstance(e, Expression)]
        while stack:
            expr = stack.pop()
            if isinstance(expr, Node):
                if expr.model is not self:
                    raise GraphError(
                        f"model '{self.name}': node '{node.name}' has parent '{expr.name}' from model "
                        f"'{expr.model.name}'; declare '{expr.name}' inside this model's with-block")
            else:
                stack.extend(expr.inputs())

    def __getitem__(self, name: str):
        try:
            return self.nodes[name]
        except KeyError:
            known = ", ".join(self.nodes) or "none"
            raise GraphError(f"model '{self.name}': no node named '{name}' (nodes: {known})") from None

    def __contains__(self, name: str) -> bool:
        return name in self.nodes

    def __iter__(self):
        return iter(self.nodes.values())

    # ----- structure --------------------------------------------------------------------
    def _resolve(self) -> None:
        for node in self.nodes.values():
            for role, value in list(node.parents.items()):
                if isinstance(value, str):
                    if value not in self.nodes:
                        known = ", ".join(self.nodes) or "none"
                        raise GraphError(f"node '{node.name}': its {role} '{value}' names no node of model "
                                         f"'{self.name}' (nodes: {known}); give a number, an array or a node")
                    parent = self[value]
                    node.check_parent(role, parent)
                    node.parents[role] = parent

    @property
    def graph(self):
        """Random nodes and the deterministic expressions between them; edges parent -> child
        (a networkx.DiGraph)."""
        import networkx as nx  # imported on first use: it costs a tenth of a second at import vmp

        from .dag import structure

        self._resolve()
        nodes, edges = structure(self)
        g = nx.DiGraph()
        for name, attrs in nodes.items():
            g.add_node(name, **attrs)
        for parent, child, role in edges:
            g.add_edge(parent, child, role=role)
        return g

    @property
    def strategies(self) -> tuple[str, ...]:
        """The names of the strategies the factors' evaluator runs around the reference
        (``vmp/graph/strategies``; () is the reference alone)."""
        from .strategies import DEFAULT

        return DEFAULT if self._strategies is None else self._strategies

    def compile(self, strategies=None):
        """Check the graph (acyclic, conjugate, plates) and bind every factor. Cached.

        ``strategies``: the names of the evaluator's strategies from now on (``()``: the
        reference evaluator alone, every message and bound term by its definition); None keeps
        the model's choice (by default every strategy)."""
        if strategies is not None:
            from .strategies import checked

            if checked(strategies) != self.strategies:
                self._strategies, self._compiled = checked(strategies), None
        if self._compiled is None:
            from .dag import structure, topological_order

            self._resolve()
            full = topological_order(*structure(self))
            if full is None:
                import networkx as nx

                cycle = " -> ".join(u for u, _ in nx.find_cycle(self.graph))
                raise GraphError(f"model '{self.name}': the graph has a cycle: {cycle}")
            from .compiled import CompiledFactor

            from .missing import resolve

            order = [n for n in full if n in self.nodes]
            given = getattr(self, "_live", None)
            live = resolve(self, order) if given is None else given
            factors = {name: CompiledFactor(node) for name, node in self.nodes.items()}
            for name, alive in live.items():
                factors[name].live = alive
            self._compiled = (factors, order)
        return self._compiled

    def missing(self) -> list[str]:
        """Masked entries that are inferred and latent elements that are pruned as barren, one
        line per node (see ``vmp/graph/missing.py``)."""
        from .missing import describe

        return describe(self)

    # ----- inference (vmp.inference, through graph/facades.py) --------------------------
    #: a builder's starting point ({node name: initial mean}): the fits' ``init`` when none is given
    start: dict | None = None

    def _started(self, options: dict) -> dict:
        """``options`` with ``init=start`` when none is given (without the nodes local to a
        minibatch's plate: their q is computed per minibatch)."""
        if self.start is None or "init" in options:
            return options
        local = getattr(options.get("subsample"), "plate_name", None)
        start = {k: v for k, v in self.start.items() if all(p.name != local for p in self[k].plates)}
        return {**options, "init": start}

    def fit(self, **options):
        """Fit q by variational message passing; see :func:`vmp.inference.fit`."""
        return facade("fit")(self, **self._started(options))

    def batch(self, **options):
        """A batch VMP fit to step by hand (``.step()``, ``.run(n)``, ``.result()``)."""
        return facade("batch")(self, **self._started(options))

    def stochastic(self, **options):
        """A stochastic VMP fit to step by hand (``.step()``, ``.run(n)``, ``.result()``)."""
        return facade("stochastic")(self, **self._started(options))

    def stream(self, plate: str, forget: float = 1.0, population: float | None = None, **options):
        """A fit that follows a stream of chunks of ``plate``'s data: ``stream.update({"x": rows})``
        (streaming VB with ``forget``, or population VB with ``population=alpha``); see
        :mod:`vmp.inference.stream`."""
        return facade("stream")(self, plate, forget, population, **options)

    def infer_locals(self, iterations: int = 50, tol: float = 1e-4) -> "Model":
        """Give the hidden nodes that the fit's state lacks (the local nodes of a minibatch fit,
        whose q is computed per minibatch) their q on all data given the others: one pass over
        the data plate, O(N), done only when asked."""
        self.state = facade("infer_locals")(self, iterations, tol)
        return self

    def elbo(self) -> float:
        """The exact evidence lower bound of the current q."""
        return facade("elbo")(self)

    # ----- reading q: predictions (vmp.predictive, vmp.export, through graph/facades.py) ---
    def predict(self, name: str, draws: int = 1000, seed: int | None = 0, *, prior: bool = False):
        """The posterior predictive of node ``name`` under the current q (mean, variance,
        ``to_scipy()``, ``sample(n, rng)``); see :mod:`vmp.predictive`. With ``prior=True`` the
        prior predictive instead (no fit needed): its moments from ``draws`` draws of the prior
        (:func:`vmp.predictive.prior_predict`)."""
        return facade("predict")(self, name, draws, seed, prior)

    def sample_prior(self, n: int, seed=None) -> dict:
        """``n`` joint draws of every node from the prior (ancestral sampling through the glue;
        observed nodes drawn too: the prior predictive), {name: array (n,) + plates + event};
        see :mod:`vmp.graph.prior`. Needs no fit."""
        from .prior import sample_prior

        return sample_prior(self, n, seed)

    def impute(self, name: str, draws: int = 1000, seed: int | None = 0):
        """The posterior of the masked entries of node ``name``; see :func:`vmp.predictive.impute`."""
        return facade("impute")(self, name, draws, seed)

    def forecast(self, steps: int, name: str | None = None, **options):
        """``steps`` steps past the end of each sequence of the observed node ``name`` (default: the
        one that reads the model's Gaussian chain), by draws from q (``vmp.time_series.forecast``:
        ``inputs=``, ``draws=``, ``seed=``, ``level=``)."""
        return facade("forecast")(self, steps, name, **options)

    def to_arviz(self, draws: int = 1000, seed: int | None = 0, predictive: bool = True):
        """Draws from q (and from the predictive of the observed nodes) as ArviZ InferenceData;
        needs ArviZ. See :func:`vmp.export.to_arviz`."""
        return facade("to_arviz")(self, draws, seed, predictive)

    def set_data(self, name: str | dict, values=None, *, mask=None) -> "Model":
        """Replace the data of an observed node or a ``vmp.Data`` input (``set_data("X", X_new)``,
        or several at once: ``set_data({"X": X_new, "y": y_new})``); a data plate may change size.
        The fitted q of the global nodes is kept; the local nodes on the changed plates are
        inferred again; observed nodes on a resized plate that get no new data are fully masked
        (held-out targets to predict). See :mod:`vmp.graph.replace`."""
        from .replace import set_data

        if isinstance(name, dict) and (values is not None or mask is not None):
            raise OptionError(f"model '{self.name}': set_data(dict) takes no values= or mask=; give one "
                              f"name with its mask, e.g. set_data('y', y_new, mask=observed)")
        changes = dict(name) if isinstance(name, dict) else {name: values}
        set_data(self, changes, {} if mask is None else {name: mask})
        return self

    def render(self, filename: str | None = None, **options):
        """The network diagram as a graphviz.Digraph; written to ``filename`` when given
        (``timeout=`` seconds for Graphviz's layout, see :func:`vmp.render.render`)."""
        return facade("render")(self, filename, **options)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self.render()._repr_mimebundle_(include=include, exclude=exclude)

    def __repr__(self) -> str:
        return f"<Model {self.name}: {len(self.nodes)} nodes>"
