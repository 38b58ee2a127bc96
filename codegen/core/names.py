"""The model's C name (`--name`, or derived from the file name) and how user strings are
quoted in messages.

The name is the only user string that reaches generated code, Makefiles and CMake files
unescaped: it forms file names ({name}.c), the entry point ({name}_run), macros
({NAME}_INPUT0_SIZE) and build targets. So it is checked strictly instead of escaped.
"""

from __future__ import annotations

import re
import unicodedata

# C99 guarantees 63 significant characters in macro names; the longest macro the header
# defines is NAME + "_OUTPUT<nnn>_ZERO_POINT" (22), so 40 keeps every one distinct.
MAX_NAME_LENGTH = 40
IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
C_KEYWORDS = frozenset((
    "auto break case char const continue default do double else enum extern float for goto "
    "if inline int long register restrict return short signed sizeof static struct switch "
    "typedef union unsigned void volatile while main"
).split())
# Names that would clash with a generated file (startup.c), with the runtime's headers,
# functions and macros (q8_*), or with targets CMake and Make reserve. Compared without
# case, since macros use the upper-case name and some file systems ignore case.
RESERVED_NAMES = frozenset((
    "startup all clean help install test package depend edit_cache rebuild_cache "
    "list_install_components lib qemu run size"
).split())
# Names whose NAME.h, NAME.c or NAME.json would take the place of another file: a system
# header the runtime or harness includes (the build's -I. finds NAME.h first), make's
# own Makefile (its implicit rule would rebuild it from Makefile.c), CMake's list file,
# PlatformIO's library.json manifest.
SHADOWED_FILES = frozenset((
    "assert complex ctype errno fenv float inttypes iso646 limits locale math setjmp "
    "signal stdalign stdarg stdatomic stdbool stddef stdint stdio stdlib stdnoreturn "
    "string tgmath threads time uchar wchar wctype arm_acle arm_math cmsis_compiler "
    "makefile gnumakefile cmakelists library"
).split())
RESERVED_PREFIX = "q8_"


def name_problem(name: str) -> str | None:
    """Why `name` cannot be the model's C name, or None when it can."""
    if not IDENTIFIER.fullmatch(name):
        return "use a letter followed by letters, digits or '_'"
    if len(name) > MAX_NAME_LENGTH:
        return f"use at most {MAX_NAME_LENGTH} characters"
    if name in C_KEYWORDS:
        return "it is a C keyword"
    if name.lower() in RESERVED_NAMES:
        return "it is reserved for a generated file or build target"
    if name.lower() in SHADOWED_FILES:
        return (f"its files ({name}.h, {name}.c, {name}.json) would take the place of a "
                "system header or build file of the same name")
    if name.lower().startswith(RESERVED_PREFIX):
        return f"the prefix '{RESERVED_PREFIX}' belongs to the runtime"
    return None


def is_valid_name(name: str) -> bool:
    return name_problem(name) is None


def default_name(stem: str) -> str:
    """A valid C name derived from a file name, e.g. 'tiny-cnn.qop' -> 'tiny_cnn_qop'."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", stem).strip("_")
    if not name or not name[0].isalpha():
        name = "model_" + name
    name = name[:MAX_NAME_LENGTH].rstrip("_") or "model"
    if not is_valid_name(name):
        name = name[:MAX_NAME_LENGTH - len("_model")] + "_model"
    if name.lower().startswith(RESERVED_PREFIX):
        name = "model_" + name[:MAX_NAME_LENGTH - len("model_")]
    return name


def quoted(text: str, limit: int = 60) -> str:
    """A user string for a one-line message: ASCII, escapes visible, cut to `limit`."""
    shown = ascii(text[:limit])[1:-1]
    return f"'{shown}{'...' if len(text) > limit else ''}'"


# Control and format characters (newlines, ESC, bidi overrides): in a model's names they
# could fake extra lines of output or rewrite the terminal.
_INVISIBLE = ("Cc", "Cf", "Zl", "Zp")


def visible(text: str) -> str:
    """`text` for one line of terminal output: control and format characters escaped."""
    if text.isprintable():
        return text
    return "".join(ascii(ch)[1:-1] if unicodedata.category(ch) in _INVISIBLE else ch
                   for ch in text)
