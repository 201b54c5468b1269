"""SKP401's message names the replacement for what the import brings in (issue 14 item 10): the
skip API, the Pipe, PipeSequential, the device-placement helpers or the whole package."""

from __future__ import annotations

import pytest

from skiplint import engine

SKIP = "import skippable, stash, pop and Namespace from torchgpipe.skip or fairscale.nn.pipe.skip"
PIPE = "use torchgpipe.GPipe or fairscale.nn.Pipe (partitions by balance=), or torch.distributed.pipelining"
SEQUENTIAL = ("give a plain nn.Sequential to torchgpipe.GPipe or fairscale.nn.Pipe, or split the stages with "
              "torch.distributed.pipelining")
PLACEMENT = ("place layers with balance= and devices= of torchgpipe.GPipe or fairscale.nn.Pipe, or split the "
             "stages with torch.distributed.pipelining")
PACKAGE = ("the skip API lives on in torchgpipe.skip and fairscale.nn.pipe.skip, the pipe in torchgpipe.GPipe "
           "and fairscale.nn.Pipe; or move to torch.distributed.pipelining")


@pytest.mark.parametrize("line, module, advice", [
    ("from torch.distributed.pipeline.sync.skip import pop, skippable", "torch.distributed.pipeline.sync.skip",
     SKIP),
    ("from torch.distributed.pipeline.sync._skip import stash", "torch.distributed.pipeline.sync._skip", SKIP),
    ("from torch.distributed._pipeline.sync.skip.layout import inspect_skip_layout",
     "torch.distributed._pipeline.sync.skip.layout", SKIP),
    ("import torch.distributed.pipeline.sync.skip as tsk", "torch.distributed.pipeline.sync.skip", SKIP),
    ("from torch.distributed.pipeline.sync import skip", "torch.distributed.pipeline.sync", SKIP),
    ("from torch.distributed.pipeline.sync import Pipe", "torch.distributed.pipeline.sync", PIPE),
    ("from torch.distributed.pipeline.sync.pipe import PipeSequential", "torch.distributed.pipeline.sync.pipe",
     SEQUENTIAL),
    ("from torch.distributed.pipeline.sync.utils import partition_model", "torch.distributed.pipeline.sync.utils",
     PLACEMENT),
    ("from torch.distributed.pipeline.sync import WithDevice, NoChunk", "torch.distributed.pipeline.sync",
     PLACEMENT),
    ("from torch.distributed.pipeline.sync import Pipe, skip", "torch.distributed.pipeline.sync",
     f"{PIPE}; {SKIP}"),
    ("import torch.distributed.pipeline", "torch.distributed.pipeline", PACKAGE),
    ("from torch.distributed import pipeline", "torch.distributed.pipeline", PACKAGE),
    ("from torch.distributed.pipeline.sync import *", "torch.distributed.pipeline.sync", PACKAGE),
])
def test_the_message_names_the_replacement_for_what_is_imported(line: str, module: str, advice: str) -> None:
    result = engine.check_text(line + "\n", "m.py")
    assert [(d.line, d.col, d.message) for d in result.diagnostics] == [
        (1, 0, f"SKP401 '{module}' was removed in PyTorch 2.4; {advice}")]
