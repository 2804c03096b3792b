"""Where the reference data files are (shipped in the package, see `data/README.md`), and where a
refreshed price catalogue overrides them.

`athanor gpu-catalog --refresh` never rewrites the packaged files (they may sit in a read-only
site-packages): it writes ``prices.csv`` and ``sources.csv`` to the catalogue override folder,
``$ATHANOR_CATALOGUE`` or else ``$ATHANOR_HOME/catalogue`` (``ATHANOR_HOME`` defaulting to the
project folder, as in `athanor.settings`). When the override ``prices.csv`` exists, every reader
(the loaders here and the warehouse's ``ref_instance_types``) takes it instead of the packaged one;
its ``sources.csv`` adds the refresh's sources to the packaged list. Delete the folder to go back.
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
SPOT_ADVISOR_CSV = DATA_DIR / "spot_advisor_gpu.csv"
FOCUS_COLUMNS_CSV = DATA_DIR / "focus-1.2-columns.csv"
SERVICES_CSV = DATA_DIR / "services.csv"
UNITS_CSV = DATA_DIR / "units.csv"
COMMITMENT_RATES_CSV = DATA_DIR / "commitment_rates.csv"

# The project folder: ATHANOR_HOME's default (athanor.settings.PROJECT_ROOT, not imported to keep
# the reference package free of the settings module).
_PROJECT_ROOT = Path(__file__).resolve().parents[3]
# Packaged files a refresh may override.
OVERRIDABLE = frozenset({"prices.csv"})


def catalogue_override_dir() -> Path:
    """Where `gpu-catalog --refresh` writes, and the loaders look for a refreshed catalogue."""
    explicit = os.environ.get("ATHANOR_CATALOGUE")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("ATHANOR_HOME", str(_PROJECT_ROOT))) / "catalogue"


def effective(path: Path) -> Path:
    """The file to read for a packaged data file: the refreshed copy when one exists."""
    if path.parent == DATA_DIR and path.name in OVERRIDABLE:
        candidate = catalogue_override_dir() / path.name
        if candidate.is_file():
            return candidate
    return path
