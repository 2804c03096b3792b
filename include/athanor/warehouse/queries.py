"""SQL text: the files under `sql/`, identifiers from data quoted, code-chosen fragments filled in.

One templating rule for the whole project:

- values are never written into SQL: they are bound, as DuckDB parameters (`?` or `$name`);
- a part of a statement that cannot be bound (a column name read from a file, an expression a
  billing format chooses) is a `{name}` placeholder in the file, filled by `sql(file, name=...)`;
  an identifier goes in through `quote_ident`;
- `{batch}` is left as it is: Great Expectations fills it with the table a rule validates;
- no placeholder in a comment (`sql()` refuses it): a filled-in fragment may span lines.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

# The repository's sql/ folder, shipped inside the package (a link in a checkout).
SQL_DIR = Path(__file__).resolve().parents[1] / "sql"

# Braces around a bare lower-case word only: DuckDB struct literals ({'k': v}) never match.
_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
# Filled by Great Expectations when it runs an unexpected-rows rule, not by us.
_LEFT_FOR_GX = frozenset({"batch"})


# A placeholder in a `--` comment: the text filled in may span lines (GX's batch does), and what
# follows its first line would then run as SQL.
_IN_COMMENT = re.compile(r"--[^\n]*" + _PLACEHOLDER.pattern)


@cache
def _template(name: str) -> tuple[str, frozenset[str]]:
    text = (SQL_DIR / f"{name}.sql").read_text()
    if found := _IN_COMMENT.search(text):
        raise ValueError(f"sql/{name}.sql: a placeholder in a comment ({found[0]!r}); name it without braces")
    return text, frozenset(_PLACEHOLDER.findall(text)) - _LEFT_FOR_GX


def sql(name: str, /, **fragments: str) -> str:
    """The text of `sql/<name>.sql`, its `{placeholder}`s replaced by `fragments`.

    Every placeholder of the file but `{batch}` must be given, and every fragment given must
    be used: a misspelt name fails here instead of reaching DuckDB half filled.
    """
    text, wanted = _template(name)
    if wanted != set(fragments):
        missing, unused = sorted(wanted - set(fragments)), sorted(set(fragments) - wanted)
        raise KeyError(f"sql/{name}.sql: fragments missing {missing}, not in the file {unused}")
    if not fragments:
        return text
    return _PLACEHOLDER.sub(lambda m: fragments.get(m[1], m[0]), text)


def quote_ident(name: str) -> str:
    """Quote an identifier that comes from data (a column or tag key)."""
    return '"' + name.replace('"', '""') + '"'
