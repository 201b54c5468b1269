"""Seeded generator of small, self-contained skippable programs for the differential oracle.

Each program is one Python module that imports torchgpipe or fairscale, defines its @skippable
classes, composes them in one `nn.Sequential` called `model` and builds a pipe called `pipe` over
one to three CPU partitions. Most programs are clean; the others carry one planted mistake of a
kind that shows at run time. Programs vary the way real code varies: how the API is imported,
how classes are made (decorator, `skippable(...)(Cls)`, factory functions, loops; `.isolate(ns,
only=[...])` on any of them), how the Sequential is filled (literal, list filled in a loop,
OrderedDict, add_module, a helper, stages, child Sequentials that the balance splits between),
balancers over it (balance_by_time over measured stash shapes, balance_by_size) and layers called
on their own inside a function, as the skip API's own test suites do.

The label of a program (`planted`) is what was planted, computed from the final layout: a
discarded pop is `discarded-pop-cross` only when the balance puts it in another partition than
its stash. Whether the program fails is decided by running it, never by this module.

    python benchmarks/oracle_programs.py --seed 3   # print one program
"""

from __future__ import annotations

import argparse
import random
import re
from dataclasses import dataclass, field
from typing import Callable, Optional

LIBRARIES = ("torchgpipe", "fairscale")
IMPORT_STYLES = ("from", "alias", "module", "submodule")
CLASS_STYLES = ("decorator", "call_form", "factory", "class_loop")
#: How often each class style is drawn: the plain decorator is what most real code writes.
CLASS_WEIGHTS = (4, 2, 2, 2)
COMPOSITION_STYLES = ("literal", "list_loop", "ordered_dict", "add_module", "helper", "stages", "children")
NAMES = ("skip0", "enc1", "down2", "feat", "residual", "hidden3", "shortcut", "u_skip")
WIDTH = 8


@dataclass(frozen=True)
class Program:
    ident: str
    seed: int
    library: str
    imports: str
    class_style: str
    composition: str
    partitions: int
    planted: str
    source: str
    #: 1-based line of the pipe construction (the last statement of the program).
    pipe_line: int

    @property
    def style(self) -> str:
        return f"{self.class_style}+{self.composition}"


@dataclass
class ClassSpec:
    """One skippable (or plain) module class and the text of its forward."""

    name: str
    stash: list[str]
    pop: list[str]
    #: Forward body lines; skip names are written as @@name@@ and spelt by the class style.
    body: list[str] = field(default_factory=list)
    #: "call" (@skippable(...)), "bare" (@skippable), "none" (not skippable at all).
    decorator: str = "call"
    #: Declaration argument texts that replace the rendered lists (e.g. a bare string).
    raw_stash: Optional[str] = None
    raw_pop: Optional[str] = None
    forward_params: str = "self, x"
    linear: bool = False
    #: The class reads a loop variable at call time (class_loop style only).
    late_binding: bool = False
    #: Lines of further methods (after forward), spelt as the body is.
    helpers: list[str] = field(default_factory=list)


@dataclass
class LayerSpec:
    cls: Optional[ClassSpec]  # None: a plain torch layer
    plain: str = ""
    ns: Optional[int] = None  # namespace index; None is the default namespace
    #: `.isolate(ns, only=[...])`: the names given (None: no only=).
    only: Optional[list[str]] = None
    #: For the nested mistake: layers wrapped in a child nn.Sequential.
    children: list["LayerSpec"] = field(default_factory=list)


@dataclass(frozen=True)
class Api:
    skippable: str
    stash: str
    pop: str
    namespace: str
    pipe: str
    header: tuple[str, ...]


_ROOTS = {"torchgpipe": "torchgpipe.skip", "fairscale": "fairscale.nn.pipe.skip"}
_PIPES = {"torchgpipe": ("torchgpipe", "GPipe", "torchgpipe.gpipe"),
          "fairscale": ("fairscale.nn", "Pipe", "fairscale.nn.pipe")}


_BALANCERS = {"torchgpipe": "torchgpipe.balance", "fairscale": "fairscale.nn.pipe.balance"}


def api_for(library: str, style: str) -> Api:
    root = _ROOTS[library]
    pipe_pkg, pipe_name, pipe_module = _PIPES[library]
    if style == "from":
        return Api("skippable", "stash", "pop", "Namespace", pipe_name,
                   (f"from {root} import Namespace, pop, skippable, stash", f"from {pipe_pkg} import {pipe_name}"))
    if style == "alias":
        return Api("skip_layer", "keep", "take", "Ns", "Pipeline",
                   (f"from {root} import Namespace as Ns, pop as take, skippable as skip_layer, stash as keep",
                    f"from {pipe_pkg} import {pipe_name} as Pipeline"))
    if style == "module":
        return Api("sk.skippable", "sk.stash", "sk.pop", "sk.Namespace", f"{pipe_pkg}.{pipe_name}",
                   (f"import {root} as sk", f"import {pipe_pkg}"))
    return Api("skippable", "stash", "pop", "Namespace", pipe_name,
               (f"from {root}.skippable import pop, skippable, stash", f"from {root}.namespace import Namespace",
                f"from {pipe_module} import {pipe_name}"))


# -- topologies ----------------------------------------------------------------------------------

class _Classes:
    """Makes uniquely named classes."""

    def __init__(self, linear: bool = True) -> None:
        self.count = 0
        self.linear = linear

    def make(self, stash: list[str], pop: list[str], rng: random.Random) -> ClassSpec:
        self.count += 1
        role = "Both" if stash and pop else "Stash" if stash else "Pop"
        linear = rng.random() < 0.4
        spec = ClassSpec(f"{role}{self.count}", list(stash), list(pop), linear=linear and self.linear)
        spec.body = standard_body(spec)
        return spec


def standard_body(spec: ClassSpec) -> list[str]:
    lines = []
    for i, name in enumerate(spec.pop):
        lines.append(f"skip_{i} = yield POP(@@{name}@@)")
        lines.append(f"x = x + skip_{i}")
    if spec.linear:
        lines.append("x = self.lin(x)")
    for name in spec.stash:
        lines.append(f"yield STASH(@@{name}@@, x)")
    lines.append("return x")
    return lines


_PLAIN = ("nn.ReLU()", f"nn.Linear({WIDTH}, {WIDTH})", "nn.Tanh()", "nn.Identity()",
          f"nn.Linear({WIDTH}, {WIDTH}).requires_grad_(False)")


def _plain(rng: random.Random) -> LayerSpec:
    return LayerSpec(None, rng.choice(_PLAIN))


def _fill(rng: random.Random, layers: list[LayerSpec]) -> list[LayerSpec]:
    """Plain layers between the skippable ones, zero to two per gap."""
    out: list[LayerSpec] = []
    for layer in layers:
        out.extend(_plain(rng) for _ in range(rng.choice((0, 0, 1, 2))))
        out.append(layer)
    out.extend(_plain(rng) for _ in range(rng.choice((0, 1))))
    return out


def clean_topology(rng: random.Random, classes: _Classes,
                   shape: Optional[str] = None) -> tuple[list[LayerSpec], int]:
    """Skippable layers (no plain ones yet) of a clean model, and how many namespaces it uses."""
    names = rng.sample(NAMES, 3)
    drawn = rng.choice(("chain", "nested", "sequential", "both", "isolated", "mixed"))
    shape = shape or drawn
    a, b, c = names
    S = lambda *n: classes.make(list(n), [], rng)  # noqa: E731
    P = lambda *n: classes.make([], list(n), rng)  # noqa: E731
    if shape == "chain":
        return [LayerSpec(S(a)), LayerSpec(P(a))], 0
    if shape == "nested":
        return [LayerSpec(S(a)), LayerSpec(S(b)), LayerSpec(P(b)), LayerSpec(P(a))], 0
    if shape == "sequential":
        return [LayerSpec(S(a)), LayerSpec(P(a)), LayerSpec(S(b)), LayerSpec(P(b))], 0
    if shape == "both":
        return [LayerSpec(S(a)), LayerSpec(classes.make([b], [a], rng)), LayerSpec(P(b))], 0
    if shape == "isolated":
        stasher, popper = S(a), P(a)
        return [LayerSpec(stasher, ns=0), LayerSpec(popper, ns=0),
                LayerSpec(stasher, ns=1), LayerSpec(popper, ns=1)], 2
    # mixed: one default-namespace skip and one isolated skip (routes checked later)
    return [LayerSpec(S(a)), LayerSpec(S(b), ns=0), LayerSpec(P(b), ns=0), LayerSpec(P(a))], 1


# -- planted mistakes ----------------------------------------------------------------------------

Topology = list[LayerSpec]
Mutator = Callable[[random.Random, Topology, _Classes], Optional[Topology]]


def _skippables(layers: Topology, role: str) -> list[ClassSpec]:
    seen: list[ClassSpec] = []
    for layer in layers:
        cls = layer.cls
        if cls is None or cls in seen:
            continue
        if (role == "stash" and cls.stash) or (role == "pop" and cls.pop) or role == "any":
            seen.append(cls)
    return seen


def _pick(rng: random.Random, layers: Topology, role: str) -> Optional[ClassSpec]:
    found = _skippables(layers, role)
    return rng.choice(found) if found else None


def _replace_line(cls: ClassSpec, pattern: str, new: Callable[[str], list[str]]) -> bool:
    for i, line in enumerate(cls.body):
        if re.search(pattern, line):
            cls.body[i:i + 1] = new(line)
            return True
    return False


def m_undeclared_stash(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    cls = _pick(rng, layers, "stash")
    if cls is None:
        return None
    name = cls.stash[0]
    _replace_line(cls, rf"STASH\(@@{name}@@", lambda line: [line.replace(f"@@{name}@@", f"@@{name}_out@@")])
    return layers


def m_undeclared_pop(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    cls = _pick(rng, layers, "pop")
    if cls is None:
        return None
    name = cls.pop[0]
    _replace_line(cls, rf"POP\(@@{name}@@", lambda line: [line.replace(f"@@{name}@@", f"@@{name}_in@@")])
    return layers


def m_unused_stash_decl(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    cls = _pick(rng, layers, "stash")
    if cls is None:
        return None
    name = cls.stash[0]
    _replace_line(cls, rf"STASH\(@@{name}@@", lambda line: [])
    return layers


def m_unused_pop_decl(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    cls = _pick(rng, layers, "pop")
    if cls is None:
        return None
    name = cls.pop[0]
    index = cls.pop.index(name)
    cls.body = [line for line in cls.body if f"@@{name}@@" not in line and f"skip_{index}" not in line]
    return layers


def m_stash_and_pop_decl(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    cls = _pick(rng, layers, "stash")
    if cls is None or cls.pop:
        return None
    cls.raw_pop = repr([cls.stash[0]])
    return layers


def m_bare_string(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    cls = _pick(rng, layers, "any")
    if cls is None:
        return None
    if cls.stash and len(cls.stash) == 1 and (not cls.pop or rng.random() < 0.5):
        cls.raw_stash = repr(cls.stash[0])
    elif len(cls.pop) == 1:
        cls.raw_pop = repr(cls.pop[0])
    else:
        return None
    return layers


def m_not_yielded(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    cls = _pick(rng, layers, "stash")
    if cls is None:
        return None
    name = cls.stash[0]
    _replace_line(cls, rf"STASH\(@@{name}@@", lambda line: [line.replace("yield ", "")])
    return layers


def m_non_command_yield(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    cls = _pick(rng, layers, "any")
    if cls is None:
        return None
    cls.body.insert(len(cls.body) - 1, rng.choice(("yield x * 2", "yield x.relu()", "yield 0")))
    return layers


def m_yield_input(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    cls = _pick(rng, layers, "stash")
    if cls is None:
        return None
    name = cls.stash[0]
    _replace_line(cls, rf"STASH\(@@{name}@@", lambda line: [line, "yield x"])
    return layers


def m_not_skippable(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    cls = _pick(rng, layers, "any")
    if cls is None:
        return None
    cls.decorator = "none"
    return layers


def m_pop_twice(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    cls = _pick(rng, layers, "pop")
    if cls is None:
        return None
    name = cls.pop[0]
    _replace_line(cls, rf"POP\(@@{name}@@", lambda line: [line, f"again = yield POP(@@{name}@@)", "x = x + again"])
    return layers


def m_conditional(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    cls = _pick(rng, layers, "stash")
    if cls is None:
        return None
    name = cls.stash[0]
    _replace_line(cls, rf"STASH\(@@{name}@@", lambda line: ["if self.training:", "    " + line])
    return layers


def m_stash_arity(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    cls = _pick(rng, layers, "stash")
    if cls is None:
        return None
    name = cls.stash[0]
    _replace_line(cls, rf"STASH\(@@{name}@@", lambda line: [line.replace(", x)", ")")])
    return layers


def m_bare_decorator(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    cls = _pick(rng, layers, "any")
    if cls is None:
        return None
    cls.decorator = "bare"
    return layers


def m_forward_arity(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    cls = _pick(rng, layers, "any")
    if cls is None:
        return None
    cls.forward_params = "self, x, scale"
    return layers


def _position(layers: Topology, cls: ClassSpec) -> int:
    return next(i for i, layer in enumerate(layers) if layer.cls is cls)


def m_pop_before_stash(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    if any(layer.ns is not None for layer in layers):
        return None
    stasher = _pick(rng, layers, "stash")
    if stasher is None or stasher.pop:
        return None
    poppers = [layer.cls for layer in layers if layer.cls is not None and stasher.stash[0] in layer.cls.pop]
    if not poppers or poppers[0] is None or poppers[0].stash:
        return None
    i, j = _position(layers, stasher), _position(layers, poppers[0])
    layers[i], layers[j] = layers[j], layers[i]
    return layers


def m_stash_never_popped(rng: random.Random, layers: Topology, classes: _Classes) -> Optional[Topology]:
    extra = classes.make([rng.choice(("orphan", "unused_skip"))], [], rng)
    layers.insert(rng.randrange(len(layers) + 1), LayerSpec(extra))
    return layers


def m_restash(rng: random.Random, layers: Topology, classes: _Classes) -> Optional[Topology]:
    if any(layer.ns is not None for layer in layers):
        return None
    stasher = _pick(rng, layers, "stash")
    if stasher is None:
        return None
    i = _position(layers, stasher)
    layers.insert(i + 1, LayerSpec(classes.make([stasher.stash[0]], [], rng)))
    return layers


def m_repop(rng: random.Random, layers: Topology, classes: _Classes) -> Optional[Topology]:
    if any(layer.ns is not None for layer in layers):
        return None
    popper = _pick(rng, layers, "pop")
    if popper is None:
        return None
    i = _position(layers, popper)
    layers.insert(i + 1, LayerSpec(classes.make([], [popper.pop[0]], rng)))
    return layers


def m_nested(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    """Wraps the first skippable layer in a child nn.Sequential (invisible to the pipe)."""
    for i, layer in enumerate(layers):
        if layer.cls is not None and layer.ns is None:
            layers[i] = LayerSpec(None, children=[layer, _plain(rng)])
            return layers
    return None


#: How a popper that gives its pop no gradient uses it, besides discarding it (`yield pop(...)` as a
#: statement): the lines that replace `x = x + skip_0`, the popped tensor named `held_0` (measured
#: like a discarded one: tests/runtime/test_oracle_conditions.py).
DETACHED_USES: dict[str, list[str]] = {
    "detach": ["x = x + held_0.detach()"],
    "rebound": ["held_0 = held_0.detach()", "x = x + held_0"],
    "rebound-in-training": ["if self.training:", "    held_0 = held_0.detach()", "x = x + held_0"],
    "no-grad": ["with torch.no_grad():", "    y_0 = held_0 * 2", "x = x + y_0"],
}


def m_discarded_pop(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    cls = _pick(rng, layers, "pop")
    if cls is None or cls.stash:
        return None
    name = cls.pop[0]
    use = rng.choice(["discard", *sorted(DETACHED_USES)])
    if use != "discard" and _replace_line(cls, "^x = x \\+ skip_0$", lambda _line: list(DETACHED_USES[use])):
        _replace_line(cls, rf"POP\(@@{name}@@", lambda line: [line.replace("skip_0 = ", "held_0 = ")])
        return layers
    cls.body = [line for line in cls.body if "x = x + skip_0" not in line]
    _replace_line(cls, rf"POP\(@@{name}@@", lambda line: [line.replace("skip_0 = ", "")])
    return layers


def m_mixed_namespaces(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    """A clean 'mixed' shape already has both kinds of namespace; the balance decides the label."""
    if not any(layer.ns is not None for layer in layers) or not any(
            layer.ns is None and layer.cls is not None for layer in layers):
        return None
    return layers


def m_isolate_unknown_name(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    """`.isolate(ns, only=[...])` naming a skip the class never declares: its own skip stays in
    the default namespace, so the isolated partner layer finds nothing."""
    isolated = [layer for layer in layers if layer.cls is not None and layer.ns is not None]
    if not isolated:
        return None
    layer = rng.choice(isolated)
    assert layer.cls is not None
    declared = layer.cls.stash + layer.cls.pop
    layer.only = [declared[0] + rng.choice(("_x", "s"))]
    return layers


#: Stashing forwards for profiled programs (the balancers), as measured: whether the stashed tensor
#: shares saved autograd history with the output (tests/profiling_shapes.py has the same shapes).
PROFILE_STASHES: dict[str, tuple[list[str], list[str]]] = {
    "encoder": (["h = self.lin(x)", "yield STASH(@@NAME@@, h)", "x = torch.relu(h)", "return x"], []),
    "view": (["x = self.lin(x)", "v = x[:]", "yield STASH(@@NAME@@, v)", "return x"], []),
    "attribute": (["self.h = self.lin(x)", "yield STASH(@@NAME@@, self.h)", "return self.h"], []),
    "yield-from": (["x = self.lin(x)", "yield from self.keep(x)", "return x"],
                   ["def keep(self, t):", "    yield STASH(@@NAME@@, t)"]),
    "same": (["x = self.lin(x)", "yield STASH(@@NAME@@, x)", "return x"], []),
    "detached": (["x = self.lin(x)", "yield STASH(@@NAME@@, x.detach())", "return x"], []),
    "no-grad": (["with torch.no_grad():", "    h = self.lin(x)", "yield STASH(@@NAME@@, h)", "return x + h"], []),
    "input": (["yield STASH(@@NAME@@, x)", "return self.lin(x)"], []),
    "times-two": (["h = x * 2", "yield STASH(@@NAME@@, h)", "return h"], []),
    "cat": (["h = self.lin(x)", f"yield STASH(@@NAME@@, torch.cat([h, h], 1)[:, :{WIDTH}])", "return h"], []),
    "tuple-assign": (["h, g = self.lin(x), x + 1", "yield STASH(@@NAME@@, h)", "return h + g"], []),
    "chunk": (["h = self.lin(x)", "a, b = h.chunk(2, dim=1)", "yield STASH(@@NAME@@, torch.cat((b, a), 1))",
               "return h"], []),
    "in-place": (["h = self.lin(x)", "out = x + 1", "out.add_(h)", "yield STASH(@@NAME@@, h)", "return out"], []),
    "method": (["h = self.twice(x)", "yield STASH(@@NAME@@, h)", "return h"],
               ["def twice(self, t):", "    return self.lin(self.lin(t))"]),
    "method-keyword": (["h = self.twice(t=x)", "yield STASH(@@NAME@@, h)", "return h"],
                       ["def twice(self, t):", "    return self.lin(self.lin(t))"]),
    "yield-from-keyword": (["x = self.lin(x)", "yield from self.keep(t=x)", "return x"],
                           ["def keep(self, t):", "    yield STASH(@@NAME@@, t)"]),
    "einsum": (["h = torch.einsum('ij,kj->ik', x, self.lin.weight)", "yield STASH(@@NAME@@, h)", "return h"], []),
    "training": (["h = self.lin(x)", "if self.training:", "    yield STASH(@@NAME@@, h)", "else:",
                  "    yield STASH(@@NAME@@, x)", "return h"], []),
}
#: How the popping layer of a profiled program uses the popped tensor (`skip_0`), each a shape
#: of tests/profiling_shapes.py: the lines that replace `x = x + skip_0`, and further methods.
#: (`detach_()` of a stashed or popped tensor is left out: in some layouts it fails otherwise,
#: "Can't detach views in-place", which no rule predicts.)
PROFILE_USES: dict[str, tuple[list[str], list[str]]] = {
    "plus": (["x = x + skip_0"], []),
    "detached": (["x = x + skip_0.detach()"], []),
    "cat": ([f"x = torch.cat([x, skip_0], 1)[:, :{WIDTH}]"], []),
    "stack": (["x = torch.stack((x, skip_0)).sum(0)"], []),
    "unpack": (["a, b = x, skip_0", "x = a + b"], []),
    "in-place": (["out = x * 1", "out.add_(skip_0)", "x = out"], []),
    "is-not-none": (["if skip_0 is not None:", "    x = x + skip_0"], []),
    "training": (["if self.training:", "    x = x + skip_0"], []),
    "method": (["x = self.merge(x, skip_0)"], ["def merge(self, a, b):", "    return a * 1 + b"]),
    "method-keywords": (["x = self.merge(b=skip_0, a=x)"], ["def merge(self, a, b):", "    return a * 1 + b"]),
    "comprehension": ([f"x = torch.cat([t * 1 for t in (x, skip_0)], 1)[:, :{WIDTH}]"], []),
}


def m_profiled(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    """A balancer over the model (added by generate()); one stashing class takes a measured shape and
    its popper uses the skip, or only its detached copy."""
    stashers = [c for c in _skippables(layers, "stash") if len(c.stash) == 1 and not c.pop]
    if stashers:
        cls = rng.choice(stashers)
        shape = rng.choice(sorted(PROFILE_STASHES))
        body, helpers = PROFILE_STASHES[shape]
        name = cls.stash[0]
        cls.body = [line.replace("@@NAME@@", f"@@{name}@@") for line in body]
        cls.helpers = [line.replace("@@NAME@@", f"@@{name}@@") for line in helpers]
        cls.linear = True
        poppers = [c for c in _skippables(layers, "pop") if c.pop == [name] and not c.stash]
        if poppers and not poppers[0].helpers:
            use, methods = PROFILE_USES[rng.choice(sorted(PROFILE_USES))]
            body = poppers[0].body
            if "x = x + skip_0" in body:
                at = body.index("x = x + skip_0")
                poppers[0].body = body[:at] + use + body[at + 1:]
                poppers[0].helpers = list(methods)
    return layers


def _direct_popper(classes: list[ClassSpec]) -> Optional[ClassSpec]:
    """A pop-only class that a function can call on its own."""
    for cls in classes:
        if (cls.pop and not cls.stash and cls.decorator == "call" and cls.raw_pop is None
                and cls.forward_params == "self, x"):
            return cls
    return None


def _direct_pair(classes: list[ClassSpec]) -> Optional[tuple[ClassSpec, ClassSpec]]:
    """A stash-only and a pop-only class of one name, called one after the other."""
    for popper in classes:
        if _direct_popper([popper]) is not popper or len(popper.pop) != 1:
            continue
        for stasher in classes:
            if (stasher.stash == popper.pop and not stasher.pop and stasher.decorator == "call"
                    and stasher.raw_stash is None and stasher.forward_params == "self, x"):
                return stasher, popper
    return None


def m_late_binding(rng: random.Random, layers: Topology, _c: _Classes) -> Optional[Topology]:
    stashers = [c for c in _skippables(layers, "stash") if _loop_made(c)]
    if len(stashers) < 2:
        return None
    for cls in stashers:
        cls.late_binding = True
    return layers


#: Planted mistake -> (mutator, the rule that predicts it).
MISTAKES: dict[str, tuple[Mutator, str]] = {
    "undeclared-stash": (m_undeclared_stash, "SKP101"),
    "undeclared-pop": (m_undeclared_pop, "SKP102"),
    "unused-stash-declaration": (m_unused_stash_decl, "SKP103"),
    "unused-pop-declaration": (m_unused_pop_decl, "SKP104"),
    "stash-and-pop-declaration": (m_stash_and_pop_decl, "SKP105"),
    "bare-string-declaration": (m_bare_string, "SKP106"),
    "command-not-yielded": (m_not_yielded, "SKP107"),
    "non-command-yield": (m_non_command_yield, "SKP108"),
    "yield-input": (m_yield_input, "SKP108"),
    "not-skippable": (m_not_skippable, "SKP109"),
    "pop-twice": (m_pop_twice, "SKP110"),
    "conditional-stash": (m_conditional, "SKP111"),
    "stash-arity": (m_stash_arity, "SKP112"),
    "bare-decorator": (m_bare_decorator, "SKP113"),
    "forward-arity": (m_forward_arity, "SKP114"),
    "pop-before-stash": (m_pop_before_stash, "SKP201"),
    "stash-never-popped": (m_stash_never_popped, "SKP202"),
    "restash-without-namespace": (m_restash, "SKP203"),
    "repop-without-namespace": (m_repop, "SKP204"),
    "nested-skippable": (m_nested, "SKP205"),
    "balance-mismatch": (lambda rng, layers, c: layers, "SKP301"),
    "discarded-pop": (m_discarded_pop, "SKP305"),
    "mixed-namespaces": (m_mixed_namespaces, "SKP306"),
    "late-binding": (m_late_binding, "SKP117"),
    "isolate-unknown-name": (m_isolate_unknown_name, "SKP115"),
    "removed-torch-import": (lambda rng, layers, c: layers, "SKP401"),
    "profiled-skippable": (lambda rng, layers, c: m_profiled(rng, layers, c), "SKP303"),
    "direct-pop": (lambda rng, layers, c: layers if _direct_popper(_skippables(layers, "pop")) else None, "SKP201"),
}


# -- partitions and labels -----------------------------------------------------------------------

def _balance(rng: random.Random, count: int, partitions: int) -> list[int]:
    partitions = max(1, min(partitions, count))
    cuts = sorted(rng.sample(range(1, count), partitions - 1))
    bounds = [0, *cuts, count]
    return [bounds[i + 1] - bounds[i] for i in range(partitions)]


def _partition_of(balance: list[int]) -> list[int]:
    return [j for j, size in enumerate(balance) for _ in range(size)]


def _routes(layers: Topology, balance: list[int]) -> dict[tuple[Optional[int], str], tuple[int, int]]:
    """(namespace, name) -> (stash partition, pop partition), as inspect_skip_layout computes it."""
    where = _partition_of(balance)
    stashed: dict[tuple[Optional[int], str], int] = {}
    routes: dict[tuple[Optional[int], str], tuple[int, int]] = {}
    for i, layer in enumerate(layers):
        if layer.cls is None or i >= len(where):
            continue
        def ns(name: str, layer: LayerSpec = layer) -> Optional[int]:
            return layer.ns if layer.only is None or name in layer.only else None

        for name in layer.cls.stash:
            stashed[(ns(name), name)] = where[i]
        for name in layer.cls.pop:
            if (ns(name), name) in stashed:
                routes[(ns(name), name)] = (stashed[(ns(name), name)], where[i])
    return routes


def _children_label(planted: str, layers: Topology, groups: list[int], balance: list[int]) -> str:
    """The label of a model whose layers are all inside child Sequentials: their skips never reach
    the pipe's layout and travel in each micro-batch's tracker, in the order the layers run. One
    popped in another partition than its stash fails once checkpointing recomputes the popping
    partition (chunks=2 with the default checkpoint='except_last' does)."""
    group_partition = _partition_of(balance)
    where = [group_partition[g] for g, size in enumerate(groups) for _ in range(size)]
    held: dict[tuple[Optional[int], str], int] = {}
    crossing = False
    for i, layer in enumerate(layers):
        for spec in (layer.children or [layer]):
            if spec.cls is None:
                continue

            def key(name: str, spec: LayerSpec = spec) -> tuple[Optional[int], str]:
                return (spec.ns if spec.only is None or name in spec.only else None), name

            for name in spec.cls.pop:
                source = held.pop(key(name), None)
                crossing = crossing or (source is not None and source != where[i])
            for name in spec.cls.stash:
                held[key(name)] = where[i]
    if planted in ("clean", "mixed-namespaces", "discarded-pop") and crossing:
        return "children-crossing"
    if planted == "discarded-pop":
        return "discarded-pop-same"
    if planted == "mixed-namespaces":
        return "clean-mixed-namespaces"
    return planted


def _refine_label(planted: str, layers: Topology, balance: list[int]) -> str:
    """The label from the final layout. A default and an isolated skip on one partition route
    crash the pipe constructor before anything else runs, so that label wins over the planted one."""
    routes = _routes(layers, balance)
    default = {route for (ns, _), route in routes.items() if ns is None}
    isolated = {route for (ns, _), route in routes.items() if ns is not None}
    if default & isolated:
        return "mixed-namespaces-same-route"
    if planted == "discarded-pop":
        crossing = [routes.get((layer.ns, layer.cls.pop[0]), (0, 0)) for layer in layers
                    if layer.cls is not None and layer.cls.pop
                    and not any("skip_0" in line for line in layer.cls.body)]
        return "discarded-pop-cross" if any(src != dst for src, dst in crossing) else "discarded-pop-same"
    if planted in ("clean", "mixed-namespaces"):
        return "clean-mixed-namespaces" if default and isolated else "clean"
    return planted


# -- rendering -----------------------------------------------------------------------------------

def _spell(line: str, api: Api, ref: Callable[[str], str]) -> str:
    line = line.replace("STASH(", f"{api.stash}(").replace("POP(", f"{api.pop}(")
    return re.sub(r"@@(\w+)@@", lambda m: ref(m.group(1)), line)


def _declarations(cls: ClassSpec, ref: Callable[[str], str]) -> str:
    parts = []
    stash = cls.raw_stash if cls.raw_stash is not None else (
        "[" + ", ".join(ref(n) for n in cls.stash) + "]" if cls.stash else None)
    pop = cls.raw_pop if cls.raw_pop is not None else (
        "[" + ", ".join(ref(n) for n in cls.pop) + "]" if cls.pop else None)
    if stash is not None:
        parts.append(f"stash={stash}")
    if pop is not None:
        parts.append(f"pop={pop}")
    return ", ".join(parts)


def _class_lines(cls: ClassSpec, api: Api, ref: Callable[[str], str], name: str,
                 decorate: bool, indent: str = "") -> list[str]:
    lines = []
    if decorate and cls.decorator == "call":
        lines.append(f"@{api.skippable}({_declarations(cls, ref)})")
    elif decorate and cls.decorator == "bare":
        lines.append(f"@{api.skippable}")
    lines.append(f"class {name}(nn.Module):")
    if cls.linear:
        lines += ["    def __init__(self):", "        super().__init__()",
                  f"        self.lin = nn.Linear({WIDTH}, {WIDTH})", ""]
    lines.append(f"    def forward({cls.forward_params}):")
    lines += ["        " + _spell(line, api, ref) for line in cls.body]
    if cls.helpers:
        lines.append("")
        lines += ["    " + _spell(line, api, ref) for line in cls.helpers]
    return [indent + line if line else line for line in lines]


def _literal(name: str) -> str:
    return repr(name)


def _loop_made(cls: ClassSpec) -> bool:
    """Whether the class_loop style makes this class in its loop: a plain one-name stasher."""
    return (cls.decorator == "call" and not cls.pop and len(cls.stash) == 1 and cls.raw_stash is None
            and cls.raw_pop is None and not cls.linear and cls.body == standard_body(cls)
            and cls.forward_params == "self, x")


def render_classes(classes: list[ClassSpec], api: Api, style: str) -> tuple[list[str], dict[int, str]]:
    """Class definitions, and the expression that names each class (by id) in the composition."""
    out: list[str] = []
    names: dict[int, str] = {}
    loop_classes = [c for c in classes if style == "class_loop" and _loop_made(c)]
    for cls in classes:
        if cls in loop_classes:
            continue
        if style == "call_form" and cls.decorator == "call":
            out += _class_lines(cls, api, _literal, f"{cls.name}Impl", decorate=False)
            out += ["", "", f"{cls.name} = {api.skippable}({_declarations(cls, _literal)})({cls.name}Impl)", "", ""]
        elif style == "factory" and cls.decorator == "call" and cls.raw_stash is None and cls.raw_pop is None:
            params = sorted(set(cls.stash) | set(cls.pop) | set(re.findall(r"@@(\w+)@@", " ".join(cls.body))))
            variables = {n: f"name{i}" for i, n in enumerate(params)}
            ref = lambda n, v=variables: v[n]  # noqa: E731
            out.append(f"def make_{cls.name.lower()}({', '.join(variables.values())}):")
            out += _class_lines(cls, api, ref, cls.name, decorate=True, indent="    ")
            out += ["", f"    return {cls.name}", "", ""]
            out += [f"{cls.name} = make_{cls.name.lower()}({', '.join(repr(n) for n in params)})", "", ""]
        else:
            out += _class_lines(cls, api, _literal, cls.name, decorate=True)
            out += ["", ""]
        names[id(cls)] = cls.name
    if loop_classes:
        out.append("STASHERS = {}")
        late = any(c.late_binding for c in loop_classes)
        out.append(f"for name in ({', '.join(repr(c.stash[0]) for c in loop_classes)},):")
        template = loop_classes[0]
        body_cls = ClassSpec("Stasher", template.stash, [], list(standard_body(
            ClassSpec("Stasher", ["NAME"], [], linear=False))), linear=False)
        ref_decl = lambda n: "name"  # noqa: E731
        ref_body = (lambda n: "name") if late else (lambda n: "self.skip_name")
        out.append(f"    @{api.skippable}({_declarations(body_cls, ref_decl)})")
        out.append("    class Stasher(nn.Module):")
        if not late:
            out.append("        skip_name = name")
            out.append("")
        out.append("        def forward(self, x):")
        out += ["            " + _spell(line, api, ref_body) for line in body_cls.body]
        out += ["", "    STASHERS[name] = Stasher", "", ""]
        for cls in loop_classes:
            names[id(cls)] = f"STASHERS[{cls.stash[0]!r}]"
    return out, names


def _layer_expr(layer: LayerSpec, names: dict[int, str], api: Api) -> str:
    if layer.children:
        return "nn.Sequential(" + ", ".join(_layer_expr(c, names, api) for c in layer.children) + ")"
    if layer.cls is None:
        return layer.plain
    expr = f"{names[id(layer.cls)]}()"
    if layer.ns is not None and layer.only is not None:
        expr += f".isolate(ns{layer.ns}, only={layer.only!r})"
    elif layer.ns is not None:
        expr += f".isolate(ns{layer.ns})"
    return expr


def render_composition(exprs: list[str], style: str, rng: random.Random,
                       groups: Optional[list[int]] = None) -> list[str]:
    if style == "children":  # each group of layers a child Sequential: the pipe's partitions split between them
        lines: list[str] = []
        start = 0
        for g, size in enumerate(groups or [len(exprs)]):
            lines += [f"s{g} = [", *[f"    {e}," for e in exprs[start:start + size]], "]"]
            start += size
        children = ", ".join(f"nn.Sequential(*s{g})" for g in range(len(groups or [0])))
        return lines + [f"model = nn.Sequential({children})"]
    if style == "literal":
        return ["model = nn.Sequential(", *[f"    {e}," for e in exprs], ")"]
    if style == "list_loop":
        lines = ["layers = []"]
        i = 0
        while i < len(exprs):
            j = i
            while j < len(exprs) and exprs[j] == exprs[i] and exprs[i].startswith("nn."):
                j += 1
            if j - i >= 2:
                lines += [f"for _ in range({j - i}):", f"    layers.append({exprs[i]})"]
                i = j
            else:
                lines.append(f"layers.append({exprs[i]})")
                i += 1
        return lines + ["model = nn.Sequential(*layers)"]
    if style == "ordered_dict":
        return ["model = nn.Sequential(OrderedDict([", *[f"    ('layer{i}', {e})," for i, e in enumerate(exprs)],
                "]))"]
    if style == "add_module":
        return ["model = nn.Sequential()", *[f"model.add_module('layer{i}', {e})" for i, e in enumerate(exprs)]]
    if style == "helper":
        return ["def build_layers():", "    return [", *[f"        {e}," for e in exprs], "    ]", "",
                "", "model = nn.Sequential(*build_layers())"]
    # stages: two parts joined into one model
    cut = rng.randrange(1, len(exprs)) if len(exprs) > 1 else 1
    return ["stage0 = nn.Sequential(", *[f"    {e}," for e in exprs[:cut]], ")",
            "stage1 = nn.Sequential(", *[f"    {e}," for e in exprs[cut:]], ")",
            "model = nn.Sequential(*stage0, *stage1)"]


# -- the program ---------------------------------------------------------------------------------

def generate(seed: int, mistake: Optional[str] = None, *, class_style: Optional[str] = None,
             composition: Optional[str] = None, library: Optional[str] = None,
             shape: Optional[str] = None, linear: bool = True, clean_share: float = 0.4) -> Program:
    """One program. `mistake` forces what is planted ("clean" or a key of MISTAKES), the styles
    force how it is written, `shape` the clean topology it starts from; `linear=False` keeps
    nn.Linear out of the skippable classes (each stashes what it received); None draws them."""
    rng = random.Random(seed)
    drawn_library = rng.choice(LIBRARIES)
    library = library or drawn_library
    imports = rng.choice(IMPORT_STYLES)
    drawn_class, drawn_composition = rng.choices(CLASS_STYLES, CLASS_WEIGHTS)[0], rng.choice(COMPOSITION_STYLES)
    class_style = class_style or ("class_loop" if mistake == "late-binding" else drawn_class)
    composition = composition or drawn_composition
    classes = _Classes(linear)
    planted = "clean"
    for _attempt in range(200):
        layers, _namespaces = clean_topology(rng, classes, shape)
        if mistake == "clean" or (mistake is None and rng.random() < clean_share):
            break
        candidate = mistake or rng.choice(sorted(MISTAKES))
        if candidate == "late-binding" and class_style != "class_loop":
            continue
        mutated = MISTAKES[candidate][0](rng, layers, classes)
        if mutated is not None:
            layers, planted = mutated, candidate
            break
        classes = _Classes(linear)
    else:
        layers, _namespaces = clean_topology(rng, classes, shape)
    for layer in layers:  # isolate(ns, only=[the names it declares]) now and then: the same as isolate(ns)
        if layer.cls is not None and layer.ns is not None and layer.only is None and rng.random() < 0.3:
            layer.only = sorted(layer.cls.stash + layer.cls.pop)
    layers = _fill(rng, layers)
    # A discarded pop fails only across partitions: draw two or three so that both labels occur.
    partitions = rng.choice((2, 3) if planted in ("discarded-pop", "profiled-skippable") else (1, 2, 2, 3, 3))
    groups: Optional[list[int]] = None
    if composition == "children":
        count = min(rng.choice((2, 3)), len(layers))
        groups = _balance(rng, len(layers), count)
        balance = _balance(rng, len(groups), partitions)
        planted = _children_label(planted, layers, groups, balance)
    else:
        balance = _balance(rng, len(layers), partitions)
        planted = _refine_label(planted, layers, balance)
    if planted == "balance-mismatch":
        balance[-1] += rng.choice((-1, 1)) if balance[-1] > 1 else 1
    api = api_for(library, imports)
    header = ['"""A generated skippable program."""', "", "from collections import OrderedDict", "",
              "import torch", "from torch import nn", ""]
    if planted == "removed-torch-import":
        header += ["from torch.distributed.pipeline.sync.skip import Namespace, pop, skippable, stash",
                   f"from {_PIPES[library][0]} import {_PIPES[library][1]}"]
        api = api_for(library, "from")
    else:
        header += list(api.header)
    by_size = planted == "profiled-skippable" and rng.random() < 0.25
    if planted == "profiled-skippable":
        header.append(f"from {_BALANCERS[library]} import balance_by_size, balance_by_time")
    all_classes = _skippables(layers, "any") + [c.cls for layer in layers for c in layer.children
                                                if c.cls is not None]
    unique: list[ClassSpec] = []
    for cls in all_classes:
        if cls not in unique:
            unique.append(cls)
    class_lines, names = render_classes(unique, api, class_style)
    lines = header + ["", ""] + class_lines
    ns_count = max((layer.ns for layer in layers if layer.ns is not None), default=-1) + 1
    lines += [f"ns{i} = {api.namespace}()" for i in range(ns_count)]
    if ns_count:
        lines.append("")
    exprs = [_layer_expr(layer, names, api) for layer in layers]
    lines += render_composition(exprs, composition, rng, groups)
    # A popping layer called on its own inside a function (SKP201), or a stash and its pop called one
    # after the other (clean): the shapes of the skip API's own test suites.
    popper = _direct_popper(unique) if planted == "direct-pop" else None
    pair = _direct_pair(unique) if planted == "clean" and rng.random() < 0.3 else None
    if popper is not None:
        lines += ["", "", "def check_alone():", f"    layer = {names[id(popper)]}()",
                  f"    return layer(torch.randn(4, {WIDTH}))", "", "", "check_alone()"]
    elif pair is not None:
        lines += ["", "", "def check_pair():", f"    x = torch.randn(4, {WIDTH})",
                  f"    return {names[id(pair[1])]}()({names[id(pair[0])]}()(x))", "", "", "check_pair()"]
    devices = ", ".join(['"cpu"'] * len(balance))
    balance_text = str(balance)
    if planted == "profiled-skippable" and by_size:
        # balance_by_size profiles CUDA memory: on a machine without CUDA the fixed balance is used.
        lines.append(f"profiled = balance_by_size({len(balance)}, model, torch.randn(4, {WIDTH}), "
                     f"device=torch.device('cuda')) if torch.cuda.is_available() else None")
    elif planted == "profiled-skippable":
        # The pipe takes the literal balance: where skips cross partitions stays known.
        grad = ", requires_grad=True" if rng.random() < 0.3 else ""
        lines.append(f"profiled = balance_by_time({len(balance)}, model, torch.randn(4, {WIDTH}{grad}), "
                     "timeout=0.02, device=torch.device('cpu'))")
    lines.append(f"pipe = {api.pipe}(model, balance={balance_text}, devices=[{devices}], chunks=2)")
    source = "\n".join(lines) + "\n"
    label = "profiled-by-size" if by_size else "direct-pair" if pair is not None else planted
    return Program(f"p{seed:05d}", seed, library, imports, class_style, composition, len(balance), label,
                   source, len(lines))


def generate_many(count: int, seed: int = 0) -> list[Program]:
    """`count` programs: two in five clean, the others cycling through every planted mistake."""
    kinds = sorted(MISTAKES)
    programs = []
    for i in range(count):
        slot, round_ = i % 5, i // 5
        mistake = "clean" if slot < 2 else kinds[(round_ * 3 + slot - 2) % len(kinds)]
        programs.append(generate(seed * 100_000 + i, mistake))
    return programs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    program = generate(args.seed)
    print(f"# {program.ident} {program.library} {program.imports} {program.style} "
          f"partitions={program.partitions} planted={program.planted}")
    print(program.source, end="")


if __name__ == "__main__":
    main()
