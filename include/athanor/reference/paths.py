"""Where the reference data files are (shipped in the package, see `data/README.md`)."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
INSTANCE_TYPES_CSV = DATA_DIR / "instance_types.csv"
SPOT_ADVISOR_CSV = DATA_DIR / "spot_advisor_gpu.csv"
FOCUS_COLUMNS_CSV = DATA_DIR / "focus-1.2-columns.csv"
