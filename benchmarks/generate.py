"""Generate a tree of realistic skippable-model files for the benchmarks (never committed).

The files look like the models that use the API in the wild (U-Nets, ResNet-like blocks with
skips, transformer-ish stacks): imports from one of the API's roots, @skippable classes that stash
and pop with literal names, plain nn.Module classes, helper functions that build Sequential blocks
with Namespaces, loops over constant ranges, and a GPipe at the end. Packages are split across
modules the way real projects are (blocks in one file, models importing them in another), so the
project index has cross-module work to do. A few files carry deliberate mistakes, so the checks
report something. The output depends only on the seed and the file count.

    python benchmarks/generate.py OUT_DIR [--files 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
from typing import Callable

ROOTS = (
    ("torchgpipe.skip", "torchgpipe", "GPipe"),
    ("fairscale.nn.pipe.skip", "fairscale.nn", "Pipe"),
)

ACTIVATIONS = ("nn.ReLU()", "nn.GELU()", "nn.SiLU()", "nn.Tanh()")
#: Modules per package: the first holds blocks, the others import them.
PACKAGE_SIZE = 20


def _header(rng: random.Random, root: str, extra: str = "") -> str:
    lines = [
        '"""' + rng.choice(("Blocks of a pipeline-parallel model.", "U-Net pieces with skip connections.",
                            "Residual stacks split across devices.", "Encoder/decoder with skips.")) + '"""',
        "",
        "from __future__ import annotations",
        "",
        "import math",
        "from collections import OrderedDict",
        "from typing import List, Optional",
        "",
        "import torch",
        "import torch.nn as nn",
        "import torch.nn.functional as F",
    ]
    names = ["Namespace", "pop", "skippable", "stash"]
    rng.shuffle(names)
    lines.append(f"from {root} import {', '.join(sorted(names))}")
    if extra:
        lines.append(extra)
    return "\n".join(lines) + "\n"


def _plain_module(rng: random.Random, name: str) -> str:
    width = rng.choice((32, 64, 128, 256))
    act = rng.choice(ACTIVATIONS)
    return f'''

class {name}(nn.Module):
    """A plain layer: convolution, normalisation, activation."""

    def __init__(self, channels: int = {width}) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size=3, padding=1, bias=False)
        self.norm = nn.BatchNorm2d(channels)
        self.act = {act}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.conv(x)
        out = self.norm(out)
        if self.training and out.shape[0] > 1:
            out = F.dropout(out, p=0.1)
        return self.act(out)
'''


def _stash_class(rng: random.Random, name: str, skip: str) -> str:
    body = rng.choice((
        f'        yield stash("{skip}", x)\n        return self.layer(x)\n',
        f'        y = self.layer(x)\n        yield stash("{skip}", y)\n        return y\n',
        f'        identity = x\n        out = self.layer(x)\n        yield stash("{skip}", identity)\n'
        f'        return F.relu(out)\n',
    ))
    return f'''

@skippable(stash=["{skip}"])
class {name}(nn.Module):
    """Keeps its input for a later layer under the name {skip!r}."""

    def __init__(self, channels: int = 64) -> None:
        super().__init__()
        self.layer = nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU())

    def forward(self, x):
{body}'''


def _pop_class(rng: random.Random, name: str, skip: str) -> str:
    merge = rng.choice(("x + skip", "torch.cat([x, skip], dim=1)[:, : x.shape[1]]", "x * 0.5 + skip * 0.5"))
    return f'''

@skippable(pop=["{skip}"])
class {name}(nn.Module):
    """Merges the tensor stashed under {skip!r} into its input."""

    def __init__(self, channels: int = 64) -> None:
        super().__init__()
        self.proj = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        skip = yield pop("{skip}")
        x = self.proj(x)
        return {merge}
'''


def _both_class(rng: random.Random, name: str, popped: str, stashed: str) -> str:
    return f'''

@skippable(stash=["{stashed}"], pop=["{popped}"])
class {name}(nn.Module):
    """Pops {popped!r}, stashes {stashed!r}: a relay between two skips."""

    def __init__(self, scale: float = 1.0) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x):
        earlier = yield pop("{popped}")
        out = x + earlier * self.scale
        for _ in range(2):
            out = torch.tanh(out)
        yield stash("{stashed}", out)
        return out
'''


def _buggy_class(rng: random.Random, name: str, skip: str) -> str:
    kind = rng.randrange(3)
    if kind == 0:  # the libraries' own latent bug: declared pop, yields stash
        return f'''

@skippable(pop=["{skip}"])
class {name}(nn.Module):
    def forward(self, x):
        {skip} = yield stash("{skip}")
        return x
'''
    if kind == 1:  # a bare string declaration
        return f'''

@skippable(stash="{skip}")
class {name}(nn.Module):
    def forward(self, x):
        yield stash("{skip}", x)
        return x
'''
    return f'''

@skippable(stash=["{skip}"])
class {name}(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            yield stash("{skip}", x)
        return x
'''


def blocks_module(rng: random.Random, package: int, buggy: bool) -> str:
    root = rng.choice(ROOTS)[0]
    parts = [_header(rng, root)]
    parts.append(_plain_module(rng, "ConvBlock"))
    for i in range(3):
        parts.append(_stash_class(rng, f"Stash{i}", f"skip{i}"))
        parts.append(_pop_class(rng, f"Pop{i}", f"skip{i}"))
    parts.append(_both_class(rng, "Relay", "skip0", "relay"))
    if buggy:
        parts.append(_buggy_class(rng, "Broken", f"bad{package}"))
    parts.append('''

def unit_block(channels: int) -> nn.Sequential:
    """One level of the U: stash on the way down, pop on the way up."""
    return nn.Sequential(ConvBlock(channels), Stash0(channels), ConvBlock(channels), Pop0(channels))


def nested_block(channels: int) -> nn.Sequential:
    return nn.Sequential(Stash1(channels), ConvBlock(channels), Stash2(channels), Pop2(channels), Pop1(channels))


__all__ = ["ConvBlock", "Stash0", "Stash1", "Stash2", "Pop0", "Pop1", "Pop2", "Relay"]
''')
    return "".join(parts)


def model_module(rng: random.Random, package: int, index: int, buggy: bool) -> str:
    root, pipe_module, pipe = rng.choice(ROOTS)
    extra = f"from {pipe_module} import {pipe}\nfrom .blocks import ConvBlock, Pop0, Pop1, Stash0, Stash1, Relay"
    parts = [_header(rng, root, extra)]
    local = rng.randrange(1, 4)
    for i in range(local):
        parts.append(_stash_class(rng, f"LocalStash{i}", f"local{i}"))
        parts.append(_pop_class(rng, f"LocalPop{i}", f"local{i}"))
    parts.append(_plain_module(rng, "Head"))
    if buggy:
        parts.append(_buggy_class(rng, "Broken", f"oops{index}"))
    depth = rng.randrange(2, 5)
    style = rng.randrange(4)
    if style == 0:
        layers = ", ".join(["Stash0()", "ConvBlock()", "Stash1()", "ConvBlock()", "Pop1()", "Pop0()", "Head()"])
        build = f"    return nn.Sequential({layers})\n"
        count = 7
    elif style == 1:
        build = (
            "    layers = OrderedDict()\n"
            "    layers['in'] = ConvBlock()\n"
            "    layers['down'] = Stash0()\n"
            "    layers['mid'] = ConvBlock()\n"
            "    layers['up'] = Pop0()\n"
            "    layers['out'] = Head()\n"
            "    return nn.Sequential(layers)\n"
        )
        count = 5
    elif style == 2:
        build = (
            "    namespaces = [Namespace() for _ in range(%d)]\n"
            "    layers: List[nn.Module] = []\n"
            "    for i in range(%d):\n"
            "        layers.append(Stash0().isolate(namespaces[i]))\n"
            "        layers.append(ConvBlock())\n"
            "    for i in reversed(range(%d)):\n"
            "        layers.append(Pop0().isolate(namespaces[i]))\n"
            "    layers.append(Head())\n"
            "    return nn.Sequential(*layers)\n"
        ) % (depth, depth, depth)
        count = 3 * depth + 1
    else:
        build = (
            "    model = nn.Sequential()\n"
            "    model.add_module('a', LocalStash0())\n"
            "    model.add_module('b', ConvBlock())\n"
            "    model.add_module('c', LocalPop0())\n"
            "    model.add_module('d', Head())\n"
            "    return model\n"
        )
        count = 4
    balance = [1] * count
    if buggy and rng.random() < 0.5:
        balance.append(1)
    parts.append(f'''

def build_model() -> nn.Sequential:
    """The whole model, in pipeline order."""
{build}

def make_pipe(chunks: int = {rng.choice((1, 2, 4, 8))}):
    model = build_model()
    # Partitions follow the balance; the skips between them are copied by the pipe.
    return {pipe}(model, balance={balance}, devices=["cpu"] * {count}, chunks=chunks)


def param_count(model: nn.Module) -> int:
    return sum(math.prod(p.shape) for p in model.parameters())


if __name__ == "__main__":
    pipe = make_pipe()
    print(param_count(pipe))
''')
    return "".join(parts)


def generate(out: str, files: int, seed: int = 0) -> list[str]:
    """Write `files` modules under `out` (replacing it); returns their paths."""
    rng = random.Random(seed)
    if os.path.exists(out):
        shutil.rmtree(out)
    written: list[str] = []
    package = 0
    while len(written) < files:
        pkg_dir = os.path.join(out, f"project{package:03d}")
        os.makedirs(pkg_dir)
        make: list[tuple[str, Callable[[], str]]] = []
        with open(os.path.join(pkg_dir, "__init__.py"), "w") as handle:
            handle.write('"""A generated model package."""\n')
        written.append(os.path.join(pkg_dir, "__init__.py"))
        make.append(("blocks.py", lambda p=package: blocks_module(rng, p, buggy=rng.random() < 0.2)))
        for i in range(PACKAGE_SIZE - 2):
            make.append((f"model_{i:02d}.py", lambda p=package, i=i: model_module(rng, p, i, rng.random() < 0.1)))
        for name, build in make:
            if len(written) >= files:
                break
            path = os.path.join(pkg_dir, name)
            with open(path, "w") as handle:
                handle.write(build())
            written.append(path)
        package += 1
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    paths = generate(args.out, args.files, args.seed)
    size = sum(os.path.getsize(p) for p in paths)
    print(f"{len(paths)} files, {size / 1e6:.1f} MB under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
