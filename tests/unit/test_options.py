"""The options object: declared once (Options), taken by every API function, whose
keywords are exactly its fields."""

from __future__ import annotations

import inspect
from dataclasses import fields

import pytest

from codegen import api
from codegen.options import OptionKeywords, Options, with_keywords


def test_keywords_are_the_fields() -> None:
    assert set(OptionKeywords.__annotations__) == {f.name for f in fields(Options)}


@pytest.mark.parametrize("function", [api.generate, api.convert, api.count_instructions,
                                      api.report, api.run_model, api.run, api.verify,
                                      api.validate])
def test_every_api_function_takes_the_options(function: object) -> None:
    parameters = inspect.signature(function).parameters  # type: ignore[arg-type]
    assert "options" in parameters
    assert parameters["keywords"].kind is inspect.Parameter.VAR_KEYWORD
    # No option is declared again as a parameter of its own.
    assert not {f.name for f in fields(Options)} & set(parameters)


def test_keywords_replace_fields() -> None:
    base = Options(board="cortex-m4f", memory="min")
    assert with_keywords(base, {"memory": "fast"}) == Options(board="cortex-m4f")
    assert with_keywords(None, {}) == Options()


def test_an_unknown_keyword_is_named() -> None:
    with pytest.raises(TypeError, match=r"unknown option.*bord"):
        with_keywords(None, {"bord": "host"})
