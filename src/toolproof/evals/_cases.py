"""Case files: messages and the first call they should lead to, in YAML or JSONL, validated with clear errors.

A case is `{id, messages | message, expected, tags}`. `expected` is `no_tool`, one call
`{tool, arguments}`, unordered parallel calls `{calls: [...]}`, or a mapping from toolset label to one of
those (so one file can score an old and a new toolset on the same messages). An argument's expected value
is a plain value (exact) or one matcher: `{one_of: [...]}`, `{approx: N, tolerance: T}`,
`{normalised: "..."}` (BFCL string normalisation), `{absent: true}`, `{any: true}`; add `optional: true`
to accept the argument being left out. The system prompt may use `{today}`, `{weekday}` and `{tomorrow}`:
date words ("Thursday") can only be scored when the model knows the date.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any, Final

from ._scoring import Absent, AnyValue, Approx, ExpectedCall, Matcher, Options, ToolSpec

NO_TOOL: Final = "no_tool"
_MATCHER_KEYS: Final = frozenset({"one_of", "approx", "normalised", "absent", "any", "exact"})


class CaseFileError(ValueError):
    """A case file is not valid; the message names the file, the case and the field."""


@dataclass(frozen=True, slots=True)
class Expectation:
    """What the first model turn should be: no call at all, or these calls (unordered when several)."""

    calls: tuple[ExpectedCall, ...] = ()
    tools_any_of: tuple[tuple[str, ...], ...] = ()  # per call: other tool names also accepted

    @property
    def no_tool(self) -> bool:
        return not self.calls


@dataclass(frozen=True, slots=True)
class Case:
    id: str
    messages: tuple[Mapping[str, Any], ...]
    expected: Mapping[str, Expectation]  # toolset label ("*" = any) -> expectation
    tags: tuple[str, ...] = ()

    def expectation(self, label: str) -> Expectation:
        if label in self.expected:
            return self.expected[label]
        if "*" in self.expected:
            return self.expected["*"]
        raise CaseFileError(f"case {self.id!r} has no expectation for toolset {label!r}")


@dataclass(frozen=True, slots=True)
class CaseSet:
    """A loaded case file: the cases, the system prompt with the date filled in, and toolset references."""

    cases: tuple[Case, ...]
    system_prompt: str | None = None
    today: date | None = None
    toolsets: Mapping[str, str] = field(default_factory=dict)  # label -> MODULE:ATTR
    source: str = "<memory>"

    def prompt(self) -> str | None:
        if self.system_prompt is None:
            return None
        today = self.today or date.today()
        return self.system_prompt.format(today=today.isoformat(), weekday=today.strftime("%A"),
                                         tomorrow=(today + timedelta(days=1)).isoformat())

    def messages_for(self, case: Case) -> list[dict[str, Any]]:
        prompt = self.prompt()
        head = [{"role": "system", "content": prompt}] if prompt else []
        return head + [dict(m) for m in case.messages]

    def select(self, tags: Sequence[str] = (), ids: Sequence[str] = ()) -> CaseSet:
        chosen = tuple(c for c in self.cases if (not tags or set(tags) & set(c.tags)) and (not ids or c.id in ids))
        return CaseSet(chosen, self.system_prompt, self.today, self.toolsets, self.source)


# ------------------------------------------------------------------------------------------- parsing


def parse_matcher(raw: Any, where: str) -> Matcher:
    """A plain value is exact; a mapping with one matcher key (plus `optional`) is that matcher."""
    if isinstance(raw, Mapping) and raw and set(raw) - {"optional", "tolerance"} <= _MATCHER_KEYS:
        optional = bool(raw.get("optional", False))
        keys = set(raw) & _MATCHER_KEYS
        if len(keys) != 1:
            raise CaseFileError(f"{where}: use exactly one of {sorted(_MATCHER_KEYS)}, got {sorted(keys)}")
        (key,) = keys
        value = raw[key]
        if key == "one_of":
            if not isinstance(value, list) or not value:
                raise CaseFileError(f"{where}: one_of needs a non-empty list")
            return Options(tuple(value), optional=optional, normalise_strings=False)
        if key == "approx":
            tolerance = raw.get("tolerance", 1e-9)
            if not isinstance(value, int | float) or isinstance(value, bool) or not isinstance(tolerance, int | float):
                raise CaseFileError(f"{where}: approx and tolerance must be numbers")
            return Approx(float(value), float(tolerance), optional)
        if key == "normalised":
            values = value if isinstance(value, list) else [value]
            if not all(isinstance(v, str) for v in values):
                raise CaseFileError(f"{where}: normalised takes a string or a list of strings")
            return Options(tuple(values), optional=optional, normalise_strings=True)
        if key == "absent":
            return Absent()
        if key == "any":
            return AnyValue(optional)
        return Options((value,), optional=optional, normalise_strings=False)
    if isinstance(raw, Mapping) and "tolerance" in raw:
        raise CaseFileError(f"{where}: tolerance goes with approx")
    return Options((raw,), normalise_strings=False)


def _parse_call(raw: Any, where: str) -> tuple[ExpectedCall, tuple[str, ...]]:
    if not isinstance(raw, Mapping) or "tool" not in raw:
        raise CaseFileError(f"{where}: an expected call needs 'tool' (and optional 'arguments')")
    unknown = set(raw) - {"tool", "arguments", "strict"}
    if unknown:
        raise CaseFileError(f"{where}: unknown keys {sorted(unknown)}")
    tool = raw["tool"]
    names: list[str] = tool if isinstance(tool, list) else [tool]
    if not names or not all(isinstance(n, str) and n for n in names):
        raise CaseFileError(f"{where}: 'tool' must be a tool name or a list of names")
    args = raw.get("arguments") or {}
    if not isinstance(args, Mapping):
        raise CaseFileError(f"{where}: 'arguments' must be a mapping")
    matchers = {str(k): parse_matcher(v, f"{where}.arguments.{k}") for k, v in args.items()}
    return ExpectedCall(names[0], matchers, strict=bool(raw.get("strict", False))), tuple(names[1:])


def _parse_expectation(raw: Any, where: str) -> Expectation:
    if raw == NO_TOOL or raw is None:
        return Expectation()
    if isinstance(raw, Mapping) and "calls" in raw:
        calls = raw["calls"]
        if not isinstance(calls, list) or not calls:
            raise CaseFileError(f"{where}.calls: a non-empty list of calls")
        parsed = [_parse_call(c, f"{where}.calls[{i}]") for i, c in enumerate(calls)]
        return Expectation(tuple(p[0] for p in parsed), tuple(p[1] for p in parsed))
    call, alternatives = _parse_call(raw, where)
    return Expectation((call,), (alternatives,))


def _parse_case(raw: Any, index: int, source: str, labels: Sequence[str]) -> Case:
    where = f"{source}: case #{index + 1}"
    if not isinstance(raw, Mapping):
        raise CaseFileError(f"{where}: a case is a mapping with id, messages and expected")
    case_id = raw.get("id")
    if not isinstance(case_id, str) or not case_id:
        raise CaseFileError(f"{where}: 'id' must be a non-empty string")
    where = f"{source}: case {case_id!r}"
    unknown = set(raw) - {"id", "message", "messages", "expected", "tags", "note"}
    if unknown:
        raise CaseFileError(f"{where}: unknown keys {sorted(unknown)}")
    if "message" in raw:
        if not isinstance(raw["message"], str):
            raise CaseFileError(f"{where}: 'message' must be a string")
        messages: list[Mapping[str, Any]] = [{"role": "user", "content": raw["message"]}]
    else:
        messages = raw.get("messages") or []
        if not isinstance(messages, list) or not messages:
            raise CaseFileError(f"{where}: give 'message' or a non-empty 'messages' list")
        for i, m in enumerate(messages):
            if not isinstance(m, Mapping) or m.get("role") not in ("user", "assistant", "system", "tool"):
                raise CaseFileError(f"{where}.messages[{i}]: needs a role of user, assistant, system or tool")
    if "expected" not in raw:
        raise CaseFileError(f"{where}: 'expected' is required (use no_tool when no call is right)")
    expected_raw = raw["expected"]
    if isinstance(expected_raw, Mapping) and labels and set(expected_raw) <= set(labels) and expected_raw:
        expected = {k: _parse_expectation(v, f"{where}.expected.{k}") for k, v in expected_raw.items()}
    else:
        expected = {"*": _parse_expectation(expected_raw, f"{where}.expected")}
    tags = raw.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise CaseFileError(f"{where}: 'tags' must be a list of strings")
    return Case(case_id, tuple(messages), expected, tuple(tags))


def parse_case_set(data: Any, source: str = "<memory>") -> CaseSet:
    """Build a case set from parsed YAML/JSON data (`{cases: [...], ...}` or a bare list of cases)."""
    if isinstance(data, list):
        data = {"cases": data}
    if not isinstance(data, Mapping):
        raise CaseFileError(f"{source}: expected a mapping with 'cases' or a list of cases")
    unknown = set(data) - {"version", "cases", "system_prompt", "today", "toolset", "toolsets", "note"}
    if unknown:
        raise CaseFileError(f"{source}: unknown top-level keys {sorted(unknown)}")
    toolsets: dict[str, str] = {}
    if isinstance(data.get("toolsets"), Mapping):
        toolsets = {str(k): str(v) for k, v in data["toolsets"].items()}
    elif "toolsets" in data:
        raise CaseFileError(f"{source}: 'toolsets' maps a label to MODULE:ATTR")
    if isinstance(data.get("toolset"), str):
        toolsets.setdefault("default", data["toolset"])
    today_raw = data.get("today")
    today: date | None = None
    if today_raw is not None:
        try:
            today = today_raw if isinstance(today_raw, date) else date.fromisoformat(str(today_raw))
        except ValueError:
            raise CaseFileError(f"{source}: 'today' must be YYYY-MM-DD, got {today_raw!r}") from None
    prompt = data.get("system_prompt")
    if prompt is not None and not isinstance(prompt, str):
        raise CaseFileError(f"{source}: 'system_prompt' must be a string")
    if prompt:
        try:
            prompt.format(today="", weekday="", tomorrow="")
        except (KeyError, IndexError, ValueError) as exc:
            raise CaseFileError(
                f"{source}: system_prompt may only use {{today}}, {{weekday}}, {{tomorrow}}: {exc}"
            ) from None
    raw_cases = data.get("cases")
    if not isinstance(raw_cases, list) or not raw_cases:
        raise CaseFileError(f"{source}: 'cases' must be a non-empty list")
    cases = [_parse_case(c, i, source, list(toolsets)) for i, c in enumerate(raw_cases)]
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise CaseFileError(f"{source}: duplicate case id {case.id!r}")
        seen.add(case.id)
    return CaseSet(tuple(cases), prompt, today, toolsets, source)


def load_cases(path: str | Path) -> CaseSet:
    """Load a `.yaml`/`.yml` file or a `.jsonl` file (one case per line; a line `{"header": {...}}` holds
    the top-level keys)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CaseFileError(f"{path}: cannot read: {exc.strerror}") from None
    if path.suffix in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise CaseFileError(f"{path}: not valid YAML: {exc}") from None
        return parse_case_set(data, str(path))
    header: dict[str, Any] = {}
    cases: list[Any] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CaseFileError(f"{path}:{n}: not valid JSON: {exc.msg}") from None
        if isinstance(item, Mapping) and "header" in item:
            header.update(item["header"])
        else:
            cases.append(item)
    return parse_case_set({**header, "cases": cases}, str(path))


def check_against_toolset(cases: CaseSet, label: str, specs: Mapping[str, ToolSpec]) -> list[str]:
    """Problems a case file has against a toolset: unknown tools and unknown argument names."""
    problems = []
    for case in cases.cases:
        expectation = case.expectation(label)
        for call, alternatives in zip(expectation.calls, expectation.tools_any_of or [()] * len(expectation.calls),
                                      strict=False):
            for name in (call.tool, *alternatives):
                if name not in specs:
                    problems.append(f"case {case.id!r}: tool {name!r} is not in toolset {label!r}")
            spec = specs.get(call.tool)
            if spec is not None:
                for arg in call.arguments:
                    if arg not in spec.properties:
                        problems.append(f"case {case.id!r}: {call.tool} has no parameter {arg!r}")
    return problems
