"""Progress over samples as one line of text, for a terminal's overwritten status line."""

from __future__ import annotations

BAR_WIDTH = 30


def progress_bar(what: str, done: int, total: int) -> str:
    """`what [#########.....] done/total samples`."""
    filled = BAR_WIDTH * done // max(total, 1)
    return f"{what} [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total} samples"
