"""The error every ingest path raises for a delivery it cannot load."""

from __future__ import annotations

from collections.abc import Iterable

from athanor.land.names import shown


class IngestError(ValueError):
    """A delivery that cannot be loaded. `str()` is one line: file, row, column, rule, examples."""

    def __init__(
        self,
        file: str,
        rule: str,
        *,
        column: str | None = None,
        row: int | None = None,
        bad_rows: int | None = None,
        examples: Iterable[str] = (),
    ) -> None:
        self.file, self.rule, self.column, self.row = file, rule, column, row
        self.bad_rows, self.examples = bad_rows, list(examples)
        where = shown(file) + (f" row {row}" if row else "") + (f", column {column}" if column else "")
        detail = f"{where}: {rule}"
        if bad_rows is not None:
            detail += f" ({bad_rows} bad row{'s' if bad_rows != 1 else ''}"
            detail += f"; e.g. {', '.join(self.examples)})" if self.examples else ")"
        super().__init__(detail)
