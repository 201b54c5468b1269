"""What a module's `__init__` stores on `self`: torch.nn layers and parameters (frozen or not),
the children of a Sequential or ModuleList given literally, instances of the module's own classes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Optional, Union

import libcst as cst

from skiplint import syntax

if TYPE_CHECKING:  # read in annotations only: SKP303's check imports this package from the rules
    from skiplint.imports import Scope
from skiplint.gradflow.model import NOTHING, PARAM_LAYERS, Value, YES


@dataclass(frozen=True)
class Attributes:
    """What __init__ alone stores on `self` of torch.nn: each attribute's class name (`kinds`), the
    class names of a Sequential's or ModuleList's children given as a literal, and what is frozen
    (`requires_grad_(False)`, a Parameter made with `requires_grad=False`)."""

    kinds: Mapping[str, str] = field(default_factory=dict)
    children: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: For a ModuleDict given as a dict literal: its keys, in the order of `children`.
    keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    frozen: frozenset[str] = frozenset()
    #: `self.requires_grad_(False)`: every parameter of the module.
    all_frozen: bool = False
    #: Attributes holding an instance of a class of the same module (`self.enc = Encoder()`), by
    #: the class's name.
    submodules: Mapping[str, str] = field(default_factory=dict)

    def parameter(self, attr: str) -> Value:
        """`self.<attr>` not assigned in forward: a Parameter requires grad unless frozen."""
        if self.kinds.get(attr) == "Parameter" and attr not in self.frozen and not self.all_frozen:
            return Value(frozenset(), YES)
        return NOTHING

    def layer_weight(self, attr: str) -> Value:
        """`self.<attr>.weight` (or `.bias`) of a torch.nn layer with parameters."""
        if self.kinds.get(attr) in PARAM_LAYERS and attr not in self.frozen and not self.all_frozen:
            return Value(frozenset(), YES)
        return NOTHING

    def called(self, attr: str, index: Union[int, str, None]) -> Optional[tuple[str, ...]]:
        """The torch.nn layers that calling `self.<attr>` (or its child `index`: a position, or a
        ModuleDict's key) runs, in order; None when that cannot be known."""
        kind = self.kinds.get(attr)
        children = self.children.get(attr)
        if index is None:
            if kind in ("Sequential",):
                return children
            return (kind,) if kind is not None and kind not in _CONTAINERS else None
        if isinstance(index, str):
            keys = self.keys.get(attr, ())
            return (children[keys.index(index)],) if children is not None and index in keys else None
        if children is not None and kind in ("Sequential", "ModuleList") and -len(children) <= index < len(children):
            return (children[index],)
        return None


_CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict", "Parameter", "ParameterList"})


def torch_layers(methods: Mapping[str, cst.FunctionDef], scope_of: dict[int, Scope],
                 classes: Mapping[str, Mapping[str, cst.FunctionDef]] = {}) -> Attributes:
    """`self.<attr>` -> the torch.nn class that __init__ alone assigns to it, once; the children
    of a Sequential or ModuleList given literally; the attributes __init__ freezes; the instances
    of the module's own `classes` (by name, their methods) it assigns."""
    submodules: dict[str, str] = {}
    found: dict[str, list[str]] = {}
    children: dict[str, tuple[str, ...]] = {}
    keys: dict[str, tuple[str, ...]] = {}
    spoiled: set[str] = set()
    frozen: set[str] = set()
    all_frozen = False
    for name, method in methods.items():
        scope = scope_of[id(method)]
        for node in syntax.walk(method.body):
            if name == "__init__" and isinstance(node, cst.Expr) and isinstance(node.value, cst.Call):
                freezes = _freezes(node.value)
                if freezes == "self":
                    all_frozen = True
                elif freezes is not None:
                    frozen.add(freezes)
            for target in assignment_targets(node):
                for part in syntax.walk(target):
                    if not (isinstance(part, cst.Attribute) and isinstance(part.value, cst.Name)
                            and part.value.value == "self"):
                        continue
                    attr = part.attr.value
                    value = node.value if isinstance(node, (cst.Assign, cst.AnnAssign)) else None
                    qualified = (scope.qualified(value.func)
                                 if isinstance(value, cst.Call) and target is part else None)
                    if (name == "__init__" and isinstance(value, cst.Call) and target is part
                            and isinstance(value.func, cst.Name) and value.func.value in classes
                            and scope.owner(value.func.value) is not None
                            and scope.owner(value.func.value).kind == "module"):  # type: ignore[union-attr]
                        found.setdefault(attr, []).append("")
                        submodules[attr] = value.func.value
                        continue
                    if name != "__init__" or qualified is None or not qualified.startswith("torch.nn."):
                        spoiled.add(attr)
                        continue
                    kind = qualified.rsplit(".", 1)[-1]
                    found.setdefault(attr, []).append(kind)
                    assert isinstance(value, cst.Call)
                    if kind == "Parameter" and any(
                            arg.keyword is not None and arg.keyword.value == "requires_grad"
                            and truth(arg.value) is False for arg in value.args):
                        frozen.add(attr)
                    if kind in ("Sequential", "ModuleList", "ModuleDict"):
                        listed = _listed_layers(value, scope, kind)
                        if listed is not None:
                            children[attr] = listed[0]
                            if kind == "ModuleDict":
                                keys[attr] = listed[1]
    kinds = {attr: kinds[0] for attr, kinds in found.items() if attr not in spoiled and len(kinds) == 1}
    return Attributes({attr: kind for attr, kind in kinds.items() if kind},
                      {attr: kids for attr, kids in children.items() if attr in kinds},
                      {attr: names for attr, names in keys.items() if attr in kinds},
                      frozenset(frozen), all_frozen,
                      {attr: cls for attr, cls in submodules.items() if attr in kinds})


def assignment_targets(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """The targets an assignment statement stores into (none for any other node)."""
    if isinstance(node, cst.Assign):
        return [t.target for t in node.targets]
    if isinstance(node, (cst.AnnAssign, cst.AugAssign)):
        return [node.target]
    return []


def _freezes(call: cst.Call) -> Optional[str]:
    """`self.requires_grad_(False)` -> "self"; `self.<attr>.requires_grad_(False)` -> attr."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_" and len(call.args) == 1
            and truth(call.args[0].value) is False):
        return None
    receiver = func.value
    if isinstance(receiver, cst.Name) and receiver.value == "self":
        return "self"
    if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value == "self":
        return receiver.attr.value
    return None


def _listed_layers(call: cst.Call, scope: Scope, kind: str) -> Optional[tuple[tuple[str, ...], tuple[str, ...]]]:
    """The torch.nn class names of `nn.Sequential(nn.A(...), ...)`, `nn.ModuleList([nn.A(...), ...])`
    or `nn.ModuleDict({"key": nn.A(...), ...})`, and a ModuleDict's keys."""
    values: list[cst.BaseExpression] = [arg.value for arg in call.args]
    keys: list[str] = []
    if kind == "ModuleDict":
        if len(values) != 1 or not isinstance(values[0], cst.Dict):
            return None
        entries = values[0].elements
        values = []
        for entry in entries:
            key = syntax.string_value(entry.key) if isinstance(entry, cst.DictElement) else None
            if key is None or not isinstance(entry, cst.DictElement):
                return None
            keys.append(key)
            values.append(entry.value)
    elif kind == "ModuleList":
        if len(values) != 1 or not isinstance(values[0], (cst.List, cst.Tuple)):
            return None
        values = [element.value for element in values[0].elements]
    if any(arg.star or arg.keyword is not None for arg in call.args):
        return None
    names = []
    for value in values:
        qualified = scope.qualified(value.func) if isinstance(value, cst.Call) else None
        if qualified is None or not qualified.startswith("torch.nn."):
            return None
        names.append(qualified.rsplit(".", 1)[-1])
    return tuple(names), tuple(keys)


def truth(node: cst.BaseExpression) -> Optional[bool]:
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return None
