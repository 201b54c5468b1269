"""SKP4xx: portability. Code that stops importing on a newer PyTorch."""

from __future__ import annotations

from skiplint.rules.base import Rule

#: The family's heading in docs/rules.md, and what its rules predict (rendered by skiplint.rules.doc).
TITLE = 'SKP4xx: portability'
BLURB = 'Code that stops importing on a newer PyTorch.'


REMOVED_TORCH_PIPELINE = Rule(
    code='SKP401', name='removed-torch-pipeline',
    template="'{module}' was removed in PyTorch 2.4; {advice}",
    summary='import of torch.distributed.pipeline.sync, removed in PyTorch 2.4',
    failure='ModuleNotFoundError on torch >= 2.4',
    reported_at='the import',
)
