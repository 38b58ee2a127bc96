"""Typed errors. Every error a user can cause is an Onnx2McuError: the CLI prints its
message on one line and exits with code 2, without a traceback."""

from __future__ import annotations


class Onnx2McuError(Exception):
    """A problem with the user's input or environment, reported as one line."""


class OptionError(Onnx2McuError):
    """A command-line option or API argument has an unusable value."""


class ModelError(Onnx2McuError):
    """The file is not a valid ONNX model, or the graph is inconsistent."""


class UnsupportedError(Onnx2McuError):
    """A valid model that uses an operator, dtype or attribute onnx2mcu does not support."""


class UnsupportedOperatorError(UnsupportedError):
    """An operator onnx2mcu does not implement."""


class FloatIslandError(UnsupportedError):
    """A float operator left by the QDQ recipes (ORT computes it in float) in a
    configuration whose arithmetic onnx2mcu does not reproduce."""


class NotConstantError(UnsupportedError):
    """An input that code generation needs at generation time is computed at run time."""


class ShapeError(Onnx2McuError):
    """A shape that is dynamic, inconsistent or out of range."""


class OutputError(Onnx2McuError):
    """The output folder cannot be written without losing the user's files."""


class ToolchainError(Onnx2McuError):
    """A compiler or simulator is missing or failed."""


class InputDataError(Onnx2McuError):
    """Input data given to run/verify does not match the model."""


class BudgetError(Onnx2McuError):
    """The model does not fit the board's RAM or flash."""


class LimitError(Onnx2McuError):
    """The model is over a configured resource limit (tensor, arena or source size);
    checked from declared sizes before anything that large is allocated."""
