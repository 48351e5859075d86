"""``eval``: measure retrieval quality on a labelled spec (defined in
:mod:`contextforge.evaluation.cli`, beside the evaluation it runs)."""

from __future__ import annotations

from ..evaluation.cli import eval_command as eval_

__all__ = ["eval_"]
