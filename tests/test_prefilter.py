"""The prefilter: a file is parsed only when an import line names an API module."""

from __future__ import annotations

import pytest

from skiplint import imports


@pytest.mark.parametrize("source", [
    "from torchgpipe.skip import skippable\n",
    "    import fairscale.nn.pipe.skip as sk\n",
    "import os, torchgpipe\n",
    "from torch.distributed.pipeline import sync\n",
    "import torch.distributed.pipeline.sync.skip\n",
    "from torch.distributed import pipeline\n",
    "from torch.distributed import (\n    _pipeline,\n)\n",
    "from torch.distributed._pipeline.sync import Pipe\n",
    "try:\n    from fairscale.nn.pipe.skip import (\n        pop)\nexcept ImportError:\n    pass\n",
])
def test_imports_of_the_api_pass(source: str) -> None:
    assert imports.mentions_api(source) and imports.mentions_api(source.encode())


@pytest.mark.parametrize("source", [
    "# Inspiration: https://github.com/facebookresearch/fairscale/blob/main/x.py\n",
    '"""See torch.distributed.pipeline.sync.skip for the old API."""\n',
    "from torch.distributed import pipelining\n",
    "import torch.distributed.pipelining\n",
    "from cutlass import pipeline\n",
    'name = "torchgpipe"\n',
])
def test_mentions_that_cannot_resolve_to_the_api_do_not(source: str) -> None:
    assert not imports.mentions_api(source) and not imports.mentions_api(source.encode())
