"""How a landed file's name (or path, or URI) appears in a message.

Names come from whoever writes into the landing folder or bucket: a newline in one would break
the one-line summaries and errors an operator reads, and a name like `a.csv: unchanged since
load ..., skipped` would forge a line. A name of plain printable ASCII without spaces or
quotes is shown as it is (the everyday case, so messages read as before); any other is shown
as a Python string literal, quoted and escaped, so a message stays one line and the name's
end is visible.
"""

from __future__ import annotations

import re
from pathlib import PurePath

# Printable ASCII, except space and the quote characters.
_PLAIN = re.compile(r"[!#-&(-~]+")


def shown(name: str | PurePath) -> str:
    """`name` as it goes into a message: as it is when plain, else quoted like repr()."""
    text = str(name)
    return text if _PLAIN.fullmatch(text) else repr(text)


def shown_all(names: object) -> str:
    """Several names for one message, comma-separated, each `shown`."""
    return ", ".join(shown(n) for n in names)  # type: ignore[attr-defined]
