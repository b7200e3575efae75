"""Small helpers the notebooks share: fast mode and reproducible seeds."""

from __future__ import annotations

import os
import random

import numpy as np
import torch

FAST_MODE_VAR = "A3C_COURSE_FAST"


def fast_mode() -> bool:
    """True under the tests (conftest.py sets A3C_COURSE_FAST=1): notebooks shrink their budgets."""
    return os.environ.get(FAST_MODE_VAR, "") == "1"


def seed_everything(seed: int = 0) -> None:
    """Seed Python, NumPy and PyTorch so that a notebook's numbers repeat."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
