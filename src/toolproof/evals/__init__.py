"""Evals: tool choice and arguments (selection), the production validator (schema), error recovery per
class (recovery), BFCL v4 through the same scorer (bfcl), reports and CI comparison (report)."""

from .._surface import publish_all
from ._bfcl import AST_CATEGORIES, BfclEntry, BfclResult, load_category, score_entry, score_outputs
from ._cases import Case, CaseFileError, CaseSet, Expectation, load_cases, parse_case_set
from ._model_errors import TooManyModelErrors
from ._models import (
    AnthropicModel,
    Model,
    ModelError,
    ModelReply,
    ModelRequest,
    OpenAIModel,
    RecordingModel,
    ReplayModel,
    ScriptedModel,
    default_model_retry,
    load_model,
)
from ._recovery import RecoveryReport, SeededFailure, classify_step, run_recovery
from ._report import compare, render_html, write_json
from ._schema import SchemaReport, check_calls
from ._scoring import (
    Absent,
    AnyValue,
    Approx,
    CallCheck,
    ExpectedCall,
    FieldError,
    Options,
    ToolCall,
    ToolSpec,
    check_call,
    check_parallel,
)
from ._selection import SelectionReport, run_selection, tool_specs

__all__ = [
    "AST_CATEGORIES",
    "Absent",
    "AnthropicModel",
    "AnyValue",
    "Approx",
    "BfclEntry",
    "BfclResult",
    "CallCheck",
    "Case",
    "CaseFileError",
    "CaseSet",
    "Expectation",
    "ExpectedCall",
    "FieldError",
    "Model",
    "ModelError",
    "ModelReply",
    "ModelRequest",
    "OpenAIModel",
    "Options",
    "RecordingModel",
    "RecoveryReport",
    "ReplayModel",
    "SchemaReport",
    "ScriptedModel",
    "SeededFailure",
    "SelectionReport",
    "TooManyModelErrors",
    "ToolCall",
    "ToolSpec",
    "check_call",
    "check_calls",
    "check_parallel",
    "classify_step",
    "compare",
    "default_model_retry",
    "load_cases",
    "load_category",
    "load_model",
    "parse_case_set",
    "render_html",
    "run_recovery",
    "run_selection",
    "score_entry",
    "score_outputs",
    "tool_specs",
    "write_json",
]

publish_all(globals())
