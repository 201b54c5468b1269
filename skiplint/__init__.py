"""skiplint: static checks for pipeline-parallel PyTorch models with skip connections."""

from __future__ import annotations

__version__ = "0.1.0"
