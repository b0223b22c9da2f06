"""Berkeley Function Calling Leaderboard (BFCL v4) cases through toolproof's argument scorer.

Only the AST categories carry a ground truth a call can be checked against (`possible_answer/*.json`:
`{fname: {param: [allowed values, "" = may be absent]}}`): simple_python, simple_java, simple_javascript,
multiple, parallel, parallel_multiple and their live_* forms. The irrelevance categories have no answer
file: a call there is wrong, no call is right. multi_turn, memory and web_search are judged by executing
state or matching final answers in BFCL, not by call ASTs: they are listed and skipped.
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from ._literals import decoder_for
from ._model_errors import DEFAULT_MAX_MODEL_ERRORS, ModelErrorTally, TooManyModelErrors, allowed_errors
from ._scoring import (
    CallCheck,
    CallChecker,
    ExpectedCall,
    FieldError,
    Options,
    ToolCall,
    ToolSpec,
    check_parallel_compiled,
)

AST_CATEGORIES: Final = (
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
UNSCORED_CATEGORIES: Final = (
    "multi_turn_base",
    "multi_turn_long_context",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "memory",
    "web_search",
    "format_sensitivity",
)


def corpora_root() -> Path:
    """`TOOLPROOF_CORPORA`, else the corpora a source checkout carries in `tests/data/corpora/` (the package
    does not ship them: an installed toolproof needs `--root` or `TOOLPROOF_CORPORA`)."""
    env = os.environ.get("TOOLPROOF_CORPORA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "tests" / "data" / "corpora"


def default_root() -> Path:
    """The BFCL v4 folder of the corpora."""
    return corpora_root() / "bfcl" / "v4"


def language_of(category: str) -> str:
    if category.endswith("java"):
        return "java"
    if category.endswith("javascript"):
        return "javascript"
    return "python"


_DECODERS: Final = {lang: decoder_for(lang) for lang in ("python", "java", "javascript")}
#: How a category's answers are judged (`_shape`).
Shape = Literal["no_call", "some_call", "unscored", "parallel", "multiple", "single"]


@dataclass(frozen=True, slots=True)
class BfclEntry:
    """One BFCL question with its functions and (if the category has one) its ground truth."""

    id: str
    category: str
    messages: tuple[Mapping[str, Any], ...]
    functions: tuple[Mapping[str, Any], ...]
    ground_truth: tuple[Mapping[str, Mapping[str, list[Any]]], ...] | None = None
    specs: Mapping[str, ToolSpec] = field(default_factory=dict, compare=False, repr=False)
    expected_calls: tuple[ExpectedCall, ...] = field(default=(), compare=False, repr=False)
    #: The expected calls compiled against their functions and the category's literal decoder.
    checkers: tuple[CallChecker, ...] = field(default=(), init=False, compare=False, repr=False)
    shape: Shape = field(default="unscored", init=False, compare=False, repr=False)  # see `_shape`

    def __post_init__(self) -> None:
        # Derived once at load: scoring thousands of outputs must not rebuild them per call.
        if not self.specs:
            object.__setattr__(self, "specs", {f["name"]: ToolSpec.from_schema(f["name"], f.get("parameters") or {})
                                               for f in self.functions})
        if not self.expected_calls and self.category in AST_CATEGORIES:
            object.__setattr__(self, "expected_calls", tuple(self.expected()))
        object.__setattr__(self, "shape", _shape(self.category, self.ground_truth is not None))
        decode = _DECODERS[language_of(self.category)]
        object.__setattr__(self, "checkers", tuple(e.checker(self.specs.get(e.tool), decode)
                                                   for e in self.expected_calls))

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled without its compiled checkers (a literal decoder is a closure): the copy compiles its own."""
        return type(self), (self.id, self.category, self.messages, self.functions, self.ground_truth, self.specs,
                            self.expected_calls)

    def expected(self) -> list[ExpectedCall]:
        """The ground truth as strict expected calls (every sent parameter must be in the answer)."""
        out = []
        for answer in self.ground_truth or ():
            (name, params), = answer.items()
            out.append(ExpectedCall(name, {p: Options(tuple(v), optional="" in v) for p, v in params.items()},
                                    strict=True))
        return out


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def load_category(category: str, root: Path | None = None) -> list[BfclEntry]:
    """Load one category's questions and its answers when the corpus has them."""
    root = root or default_root()
    questions = root / f"BFCL_v4_{category}.json"
    if not questions.exists():
        raise FileNotFoundError(f"no BFCL category {category!r} at {questions}")
    answers_path = root / "possible_answer" / f"BFCL_v4_{category}.json"
    answers = {a["id"]: a["ground_truth"] for a in _read_jsonl(answers_path)} if answers_path.exists() else {}
    entries = []
    for raw in _read_jsonl(questions):
        turns = raw.get("question") or [[]]
        entries.append(
            BfclEntry(
                id=raw["id"],
                category=category,
                messages=tuple(turns[0]),
                functions=tuple(raw.get("function") or ()),
                ground_truth=tuple(answers[raw["id"]]) if raw["id"] in answers else None,
            )
        )
    return entries


def _shape(category: str, has_ground_truth: bool) -> Shape:
    """How a category's answers are judged: no call, some call, parallel calls, one call of several
    functions, one call; "unscored" when it has no AST ground truth."""
    if category in ("irrelevance", "live_irrelevance"):
        return "no_call"
    if category == "live_relevance":
        return "some_call"
    if not has_ground_truth or category not in AST_CATEGORIES:
        return "unscored"
    if "parallel" in category:
        return "parallel"
    return "multiple" if "multiple" in category else "single"


def score_entry(entry: BfclEntry, calls: Sequence[ToolCall]) -> CallCheck:
    """Score a model's calls for one entry the way BFCL's AST checker does."""
    shape = entry.shape
    checkers = entry.checkers
    if shape == "parallel":
        return check_parallel_compiled(checkers, calls)
    if shape == "no_call":
        return CallCheck(not calls, not calls, () if not calls else (FieldError("wrong_count", None, 0, len(calls)),))
    if shape == "some_call":
        return CallCheck(bool(calls), bool(calls), () if calls else (FieldError("wrong_count", None, ">=1", 0),))
    if shape == "unscored":
        raise ValueError(f"{entry.id}: category {entry.category!r} has no AST ground truth")
    if shape == "multiple":
        if len(calls) != len(checkers):
            return CallCheck(False, False, (FieldError("wrong_count", None, len(checkers), len(calls)),))
        return checkers[0].check(calls[0])
    if len(calls) != 1:
        return CallCheck(False, False, (FieldError("wrong_count", None, 1, len(calls)),))
    return checkers[0].check(calls[0])


# ------------------------------------------------------------------------------------- ground truth calls


def _first(options: Sequence[Any]) -> Any:
    """The first allowed value that is not "absent"; nested answers (dicts of options) resolved the same way."""
    for option in options:
        if option != "":
            return _resolve(option)
    return _ABSENT


def _resolve(value: Any) -> Any:
    if isinstance(value, Mapping):
        out = {}
        for key, options in value.items():
            chosen = _first(options) if isinstance(options, list) else options
            if chosen is not _ABSENT:
                out[key] = chosen
        return out
    if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        return [_resolve(v) for v in value]
    return value


_ABSENT: Final = object()


def canonical_calls(entry: BfclEntry) -> list[ToolCall]:
    """The ground truth turned into calls: the first allowed value of each parameter ("absent" only when
    nothing else is allowed). For Java and JavaScript the values are written as the literals a model sends."""
    from ._literals import encoder_for

    encode = encoder_for(language_of(entry.category))
    calls = []
    for answer in entry.ground_truth or ():
        (name, params), = answer.items()
        spec = entry.specs.get(name)
        args: dict[str, Any] = {}
        for param, options in params.items():
            chosen = _first(options)
            if chosen is not _ABSENT:
                prop = spec.properties.get(param, {}) if spec else {}
                args[param] = encode(chosen, prop)
        calls.append(ToolCall(name, args))
    return calls


@dataclass(frozen=True, slots=True)
class Perturbation:
    """A ground-truth call changed in one systematic way; `should_pass` is what the rules say."""

    entry_id: str
    kind: str
    calls: tuple[ToolCall, ...]
    should_pass: bool = False
    detail: str = ""


@dataclass(frozen=True, slots=True)
class _Ctx:
    entry: BfclEntry
    base: list[ToolCall]
    rng: random.Random
    out: list[Perturbation] = field(default_factory=list)

    def add(self, kind: str, index: int, call: ToolCall, detail: str, should_pass: bool = False) -> None:
        calls = list(self.base)
        calls[index] = call
        self.out.append(Perturbation(self.entry.id, kind, tuple(calls), should_pass, detail))


def _other_value(value: Any, options: list[Any]) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return max([o for o in options if type(o) is int] + [value]) + 1000
    if isinstance(value, float):
        return max([o for o in options if type(o) is float] + [value]) + 1000.5
    if isinstance(value, str):
        return value + " zz not allowed"
    if isinstance(value, list):
        return [*value, value[0] if value else "zz"]
    if isinstance(value, dict):
        return {**value, "zz_key": "zz"}
    return "zz not allowed"


def _other_type(value: Any) -> Any:
    if isinstance(value, bool):
        return "maybe"
    if isinstance(value, int | float):
        return {"value": value}
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return 12345
    return True


def perturbations(entry: BfclEntry, seed: int = 0) -> list[Perturbation]:
    """Systematic changes of the ground-truth calls that BFCL's rules reject (and one they accept:
    parallel calls in another order). Python categories only change values; Java/JS send literals."""
    base = canonical_calls(entry)
    if not base:
        return []
    ctx = _Ctx(entry, base, random.Random(f"{seed}:{entry.id}"))
    language = language_of(entry.category)
    names = [f["name"] for f in entry.functions]
    for index, call in enumerate(base):
        args = dict(call.arguments or {})
        answer = next(iter(entry.ground_truth[index].values())) if entry.ground_truth else {}
        spec = entry.specs.get(call.name)
        other_names = [n for n in names if n != call.name]
        wrong_name = other_names[0] if other_names else call.name + "_v2"
        ctx.add("wrong_function", index, ToolCall(wrong_name, args), f"{call.name} -> {wrong_name}")
        required = [p for p in (spec.required if spec else ()) if p in args]
        if required:
            dropped = ctx.rng.choice(required)
            ctx.add("missing_required", index, ToolCall(call.name, {k: v for k, v in args.items() if k != dropped}),
                    dropped)
        ctx.add("extra_parameter", index, ToolCall(call.name, {**args, "zz_unexpected": 1}), "zz_unexpected")
        optional = sorted(p for p in args if "" in answer.get(p, []) and p not in (spec.required if spec else ()))
        if optional:
            p = ctx.rng.choice(optional)
            ctx.add("optional_omitted", index, ToolCall(call.name, {k: v for k, v in args.items() if k != p}), p,
                    should_pass=True)
        if not args:
            continue
        param = ctx.rng.choice(sorted(args))
        value = args[param]
        if language == "python":
            ctx.add("wrong_type", index, ToolCall(call.name, {**args, param: _other_type(value)}), param)
            allowed = list(answer.get(param, []))
            other = _other_value(value, allowed)
            if other not in allowed:  # a flipped bool may be allowed too
                ctx.add("value_not_allowed", index, ToolCall(call.name, {**args, param: other}), param)
            ordered = [p for p, v in sorted(args.items())
                       if isinstance(v, list) and len({json.dumps(x) for x in v}) > 1]
            if ordered:
                p = ctx.rng.choice(ordered)
                if all(list(reversed(args[p])) != o for o in answer.get(p, []) if isinstance(o, list)):
                    ctx.add("wrong_order", index, ToolCall(call.name, {**args, p: list(reversed(args[p]))}), p)
        else:
            ctx.add("wrong_type", index, ToolCall(call.name, {**args, param: _other_type(value)}), param)
            ctx.add("value_not_allowed", index, ToolCall(call.name, {**args, param: str(value) + "zz"}), param)
    if len(base) > 1 and "parallel" in entry.category:
        shuffled = list(reversed(base))
        ctx.out.append(Perturbation(entry.id, "parallel_reordered", tuple(shuffled), True, "calls reversed"))
    return ctx.out


# ------------------------------------------------------------------------------------- model outputs


def read_outputs(path: Path) -> dict[str, list[ToolCall]]:
    """A file of model outputs for scorer-only mode: JSONL `{"id": ..., "calls": [{"name", "arguments"}]}`,
    or BFCL's own form `{"id": ..., "result": [{"fname": {...}}]}`."""
    out: dict[str, list[ToolCall]] = {}
    for line_no, raw in enumerate(_read_jsonl(path), 1):
        if "id" not in raw:
            raise ValueError(f"{path}:{line_no}: a result line needs an 'id'")
        if "calls" in raw:
            out[raw["id"]] = [ToolCall.from_dict(c) for c in raw["calls"]]
        elif isinstance(raw.get("result"), list):
            calls = []
            for item in raw["result"]:
                if not isinstance(item, Mapping) or len(item) != 1:
                    raise ValueError(f"{path}:{line_no}: each result item must be {{name: arguments}}")
                (name, args), = item.items()
                calls.append(ToolCall(str(name), args if isinstance(args, Mapping) else None, None))
            out[raw["id"]] = calls
        else:
            raise ValueError(f"{path}:{line_no}: expected 'calls' or 'result'")
    return out


@dataclass(frozen=True, slots=True)
class BfclResult:
    """Accuracy per category and the failing ids with their first error."""

    per_category: Mapping[str, tuple[int, int]]  # category -> (passed, scored)
    failures: tuple[tuple[str, FieldError | None], ...]
    missing: tuple[str, ...] = ()
    unanswered: tuple[str, ...] = ()  # one line per entry the model could not answer
    errors_per_category: Mapping[str, int] = field(default_factory=dict)
    model_errors: ModelErrorTally | None = None  # None when outputs were scored, not asked for

    def to_dict(self) -> dict[str, Any]:
        return {
            "per_category": {c: {"passed": p, "scored": n, "accuracy": p / n if n else None,
                                 "model_errors": self.errors_per_category.get(c, 0)}
                             for c, (p, n) in self.per_category.items()},
            "failures": [{"id": i, "error": e.to_dict() if e else None} for i, e in self.failures],
            "missing": list(self.missing),
            "partial": bool(self.unanswered),
            "unanswered": list(self.unanswered),
            "model_errors": self.model_errors.to_dict() if self.model_errors else None,
        }


def score_outputs(entries: Sequence[BfclEntry], outputs: Mapping[str, Sequence[ToolCall]]) -> BfclResult:
    """Score a set of model outputs; entries without an output count as missing (and failed)."""
    per: dict[str, list[int]] = {}
    failures: list[tuple[str, FieldError | None]] = []
    missing: list[str] = []
    for entry in entries:
        counts = per.setdefault(entry.category, [0, 0])
        counts[1] += 1
        if entry.id not in outputs:
            missing.append(entry.id)
            failures.append((entry.id, None))
            continue
        check = score_entry(entry, outputs[entry.id])
        if check.ok:
            counts[0] += 1
        else:
            failures.append((entry.id, check.errors[0] if check.errors else None))
    return BfclResult({c: (p, n) for c, (p, n) in per.items()}, tuple(failures), tuple(missing))


# ---------------------------------------------------------------------------------------- live runs

_OPENAPI_TYPES: Final = {
    "dict": "object", "float": "number", "tuple": "array", "any": "string", "bool": "boolean", "list": "array",
    "byte": "integer", "short": "integer", "long": "integer", "double": "number", "char": "string",
    "ArrayList": "array", "Array": "array", "HashMap": "object", "Hashtable": "object", "Queue": "array",
    "Stack": "array", "Any": "string", "String": "string", "Bigint": "integer", "Boolean": "boolean",
}


def _to_json_schema(node: Any) -> Any:
    """BFCL's parameter types (`dict`, `float`, Java types) as JSON Schema, for a real endpoint."""
    if isinstance(node, Mapping):
        out = {k: _to_json_schema(v) for k, v in node.items()}
        t = out.get("type")
        if isinstance(t, str) and t in _OPENAPI_TYPES:
            out["type"] = _OPENAPI_TYPES[t]
        return out
    if isinstance(node, list):
        return [_to_json_schema(v) for v in node]
    return node


def _as_literals(parameters: Mapping[str, Any], language: str) -> dict[str, Any]:
    """Java/JS categories: every argument is sent as a source literal in a string (as BFCL prompts it)."""
    label = "Java" if language == "java" else "JavaScript"
    props = {}
    for name, prop in (parameters.get("properties") or {}).items():
        kind = prop.get("type", "any")
        note = (f" This parameter can be of any type of {label} object in string representation." if kind == "any"
                else f" This is {label} {kind} type parameter in string representation.")
        if isinstance(prop.get("items"), Mapping):
            element = prop["items"].get("type")
            note += f" The list elements are of type {element}; they are not in string representation."
        props[name] = {"type": "string", "description": str(prop.get("description", "")) + note}
    return {"type": "object", "properties": props, "required": list(parameters.get("required") or [])}


def openai_tools_for(entry: BfclEntry) -> list[dict[str, Any]]:
    """The entry's functions as OpenAI tools: JSON Schema types; Java/JS arguments as literal strings."""
    language = language_of(entry.category)
    out = []
    for f in entry.functions:
        params = f.get("parameters") or {}
        schema = _to_json_schema(params) if language == "python" else _as_literals(params, language)
        out.append({"type": "function", "function": {"name": f["name"], "description": f.get("description", ""),
                                                     "parameters": schema}})
    return out


def bfcl_requests(entries: Sequence[BfclEntry]) -> list[Any]:
    from ._models import ModelRequest

    return [ModelRequest(e.id, 0, tuple(e.messages), tuple(openai_tools_for(e))) for e in entries]


def run_bfcl(entries: Sequence[BfclEntry], model: Any, *, concurrency: int = 4, progress: bool = False,
             max_model_errors: float | None = DEFAULT_MAX_MODEL_ERRORS) -> BfclResult:
    """Ask `model` every entry once and score its calls; a model error counts as a failure.

    More than `max_model_errors` (a share of the entries) unanswered raises `TooManyModelErrors`."""
    from ._models import ModelError, run_all

    budget = None if max_model_errors is None else allowed_errors(len(entries), max_model_errors)
    replies = run_all(model, bfcl_requests(entries), concurrency=concurrency, show_progress=progress,
                      max_errors=budget)
    tally = ModelErrorTally.of(str(r) if isinstance(r, ModelError) else None for r in replies)
    if max_model_errors is not None and tally.over(max_model_errors):
        raise TooManyModelErrors(tally, max_model_errors)
    failed = [(e, r) for e, r in zip(entries, replies, strict=True) if isinstance(r, ModelError)]
    outputs = {e.id: list(r.calls) for e, r in zip(entries, replies, strict=True) if not isinstance(r, ModelError)}
    result = score_outputs(entries, outputs)
    return BfclResult(result.per_category, result.failures, result.missing,
                      tuple(f"{e.id}: {r}" for e, r in failed), Counter(e.category for e, _ in failed), tally)
