"""Reference data that every stage reads: one source for each fact, with its origin.

The files under `data/` say where each figure comes from (see `data/README.md`).
"""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
