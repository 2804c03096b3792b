"""Where the reference data files are (shipped in the package, see `data/README.md`)."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
SPOT_ADVISOR_CSV = DATA_DIR / "spot_advisor_gpu.csv"
FOCUS_COLUMNS_CSV = DATA_DIR / "focus-1.2-columns.csv"
SERVICES_CSV = DATA_DIR / "services.csv"
UNITS_CSV = DATA_DIR / "units.csv"
COMMITMENT_RATES_CSV = DATA_DIR / "commitment_rates.csv"
