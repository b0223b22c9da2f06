"""Pure parts of the MCP layer: naming, trust, the error mapping, result interpretation and the TOML config."""

from __future__ import annotations

import json
import re
from pathlib import Path

import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from toolproof import ErrorClass, Runner, Toolset
from toolproof.catalog._toolset import mcp_definition
from toolproof.contract._envelope import Envelope, Meta
from toolproof.contract._errors import NotFound, ToolError
from toolproof.mcp import (
    ConfigError,
    ErrorMapping,
    ErrorRule,
    NameClash,
    NamingPolicy,
    ToolOverride,
    Upstream,
    assign_names,
    close_open_schema,
    derive_policy,
    gateway_config,
    load_config,
    parse_upstream_spec,
    tool_result,
)
from toolproof.mcp._naming import Origin, sanitize
from toolproof.mcp._results import interpret, unwrap_output_schema

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


# --- naming ------------------------------------------------------------------------------------------------

def test_on_clash_prefixes_only_the_clashing_names() -> None:
    origins = [Origin("time", "get_current_time"), Origin("odd", "get_current_time"), Origin("odd", "echo")]
    names = assign_names(origins, NamingPolicy())
    assert list(names.values()) == ["time__get_current_time", "odd__get_current_time", "echo"]


def test_always_prefixes_every_name_with_the_separator() -> None:
    names = assign_names([Origin("a", "x"), Origin("b", "y")], NamingPolicy(prefix="always", separator="-"))
    assert list(names.values()) == ["a-x", "b-y"]


def test_a_clash_that_remains_is_an_error_naming_both_sources() -> None:
    # "b__x" from upstream a, and "x" from upstream b (and from a) would both become b__x.
    origins = [Origin("a", "b__x"), Origin("a", "x"), Origin("b", "x")]
    with pytest.raises(NameClash, match=r"a/b__x and b/x would both be exposed as 'b__x'"):
        assign_names(origins, NamingPolicy())


def test_sanitized_names_that_collide_are_an_error_not_a_drop() -> None:
    with pytest.raises(NameClash, match="files_read"):
        assign_names([Origin("fs", "files.read"), Origin("fs", "files:read")], NamingPolicy())


def test_a_name_too_long_after_prefixing_says_how_to_fix_it() -> None:
    with pytest.raises(NameClash, match="rename"):
        assign_names([Origin("u" * 32, "t" * 40)], NamingPolicy(prefix="always"))


def test_separators_that_clients_reject_are_refused() -> None:
    for bad in (".", ":", "/", "__.", ""):
        with pytest.raises(ConfigError, match="separator"):
            NamingPolicy(separator=bad)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "up-1", "x_y"]), st.text(min_size=0, max_size=70)), max_size=8))
def test_assigned_names_always_fit_the_mcp_pattern_or_fail_loudly(pairs: list[tuple[str, str]]) -> None:
    origins = list(dict.fromkeys(Origin(u, n) for u, n in pairs))
    try:
        names = assign_names(origins, NamingPolicy())
    except NameClash:
        return
    assert all(NAME.match(n) for n in names.values())
    assert len(set(names.values())) == len(origins)


def test_sanitize_keeps_valid_names_and_replaces_the_rest() -> None:
    assert sanitize("get_today_price") == "get_today_price"
    assert sanitize("files.read/all") == "files_read_all"
    assert sanitize("") == "tool"


# --- trust ---------------------------------------------------------------------------------------------------

HINTS = types.ToolAnnotations(read_only_hint=True, idempotent_hint=True)
WRITE_HINTS = types.ToolAnnotations(read_only_hint=False, idempotent_hint=True)


def test_untrusted_annotations_are_never_taken_as_facts() -> None:
    for ann in (HINTS, WRITE_HINTS, None):
        policy = derive_policy(ann, trusted=False, override=None, default_timeout_s=30)
        assert (policy.effect, policy.idempotent) == ("write", False)
        assert policy.source.startswith("untrusted")


def test_trusted_annotations_are_used() -> None:
    read = derive_policy(HINTS, trusted=True, override=None, default_timeout_s=30)
    assert (read.effect, read.idempotent) == ("read", True)
    write = derive_policy(WRITE_HINTS, trusted=True, override=None, default_timeout_s=30)
    assert (write.effect, write.idempotent) == ("write", True)
    bare = derive_policy(None, trusted=True, override=None, default_timeout_s=30)
    assert (bare.effect, bare.idempotent) == ("write", False)


def test_the_operator_override_wins_over_everything() -> None:
    override = ToolOverride(effect="read", risk="high", timeout_s=2.5)
    policy = derive_policy(WRITE_HINTS, trusted=False, override=override, default_timeout_s=30)
    assert (policy.effect, policy.idempotent, policy.risk, policy.timeout_s) == ("read", True, "high", 2.5)
    assert policy.source == "override"
    forced = derive_policy(HINTS, trusted=True, override=ToolOverride(idempotent=False), default_timeout_s=30)
    assert (forced.effect, forced.idempotent) == ("read", False)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"effect": "delete"}, "effect"), ({"risk": "medium"}, "risk"), ({"timeout_s": 0}, "timeout_s"),
     ({"timeout_s": True}, "timeout_s"), ({"rename": "a.b"}, "rename"), ({"idempotent": "yes"}, "idempotent")],
)
def test_bad_overrides_fail_at_definition(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        ToolOverride(**kwargs)  # type: ignore[arg-type]


# --- the error mapping -------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "cls"),
    [
        ("Rate limit exceeded. Retry after 7 seconds.", ErrorClass.RATE_LIMITED),
        ("HTTP 429 Too Many Requests", ErrorClass.RATE_LIMITED),
        ("Unauthorized: invalid API key", ErrorClass.AUTH_FAILED),
        ("Permission denied for /etc", ErrorClass.PERMISSION_DENIED),
        ("Service temporarily unavailable (503)", ErrorClass.TRANSIENT_UPSTREAM),
        ("request timed out", ErrorClass.TRANSIENT_UPSTREAM),
        ("Resource already exists", ErrorClass.CONFLICT),
        ("No such item: 7", ErrorClass.NOT_FOUND),
        ("Invalid timezone: 'Mars/Olympus'", ErrorClass.INVALID_ARGUMENT),
        ("The frobnicator said no.", ErrorClass.INTERNAL_ERROR),
        ("", ErrorClass.INTERNAL_ERROR),
    ],
)
def test_default_mapping_classifies_prose_and_keeps_the_words(text: str, cls: ErrorClass) -> None:
    error = ErrorMapping().classify(text, tool="up/t")
    assert error.error_class is cls
    assert error.message.startswith("up/t: ")
    if text:
        assert " ".join(text.split()) in error.message


def test_retry_after_is_read_from_prose() -> None:
    assert ErrorMapping().classify("Rate limited, retry after 7 seconds", tool="t").retry_after_s == 7
    assert ErrorMapping().classify("429: retry-after: 1500ms", tool="t").retry_after_s == 1.5
    assert ErrorMapping().classify("throttled; Retry after 2 minutes", tool="t").retry_after_s == 120


def test_custom_rules_come_first_and_the_default_is_configurable() -> None:
    mapping = ErrorMapping(default=ErrorClass.TRANSIENT_UPSTREAM).with_rules(
        [ErrorRule("frobnicator", ErrorClass.CONFLICT, "FROB")]
    )
    error = mapping.classify("The frobnicator said no.", tool="t")
    assert (error.error_class, error.code) == (ErrorClass.CONFLICT, "FROB")
    assert mapping.classify("¯\\_(ツ)_/¯", tool="t").error_class is ErrorClass.TRANSIENT_UPSTREAM


def test_huge_error_text_is_truncated_not_dropped() -> None:
    error = ErrorMapping().classify("x" * 100_000, tool="t")
    assert len(error.message) <= 1010


def test_a_bad_rule_pattern_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="not a valid regular expression"):
        ErrorRule("(", ErrorClass.CONFLICT)


# --- results -------------------------------------------------------------------------------------------------

def _result(text: str | None = None, structured: object = None, error: bool = False) -> types.CallToolResult:
    content = [types.TextContent(text=text)] if text is not None else []
    return types.CallToolResult(content=content, structured_content=structured, is_error=error)


def test_an_upstream_envelope_is_kept_as_it_is() -> None:
    failure = Envelope.failure(NotFound("no order 9", code="ORDER_NOT_FOUND", field="order_id", received=9),
                               Meta("get_order_status", "c1"))
    with pytest.raises(ToolError) as raised:
        interpret(tool_result(failure), ErrorMapping(), tool="t", trusted=True)
    assert (raised.value.error_class, raised.value.code, raised.value.field) == (
        ErrorClass.NOT_FOUND, "ORDER_NOT_FOUND", "order_id")
    # The same envelope as JSON text only (a server that sends no structuredContent).
    with pytest.raises(ToolError, match="no order 9"):
        interpret(_result(failure.to_json(), error=True), ErrorMapping(), tool="t", trusted=True)
    ok = Envelope.success({"price": 3}, Meta("p", "c2"))
    assert interpret(tool_result(ok), ErrorMapping(), tool="t", trusted=True) == {"price": 3}


def test_problem_details_in_structured_content_are_read_by_status() -> None:
    problem = {"type": "about:blank", "title": "Too Many Requests", "status": 429, "retry_after_s": 3}
    with pytest.raises(ToolError) as raised:
        interpret(_result("x", problem, error=True), ErrorMapping(), tool="t", trusted=True)
    assert raised.value.error_class is ErrorClass.RATE_LIMITED


def test_success_values() -> None:
    assert interpret(_result("hello"), ErrorMapping(), tool="t") == "hello"
    assert interpret(_result("{}", {"a": 1}), ErrorMapping(), tool="t") == {"a": 1}
    image = types.CallToolResult(content=[types.ImageContent(data="AA==", mime_type="image/png")])
    assert interpret(image, ErrorMapping(), tool="t") == [{"type": "image", "data": "AA==", "mimeType": "image/png"}]


def test_a_toolproof_output_schema_is_unwrapped_to_the_result_schema(runner: Runner) -> None:
    definition = mcp_definition(runner.toolset.get("get_today_price"))
    inner = unwrap_output_schema(definition["outputSchema"])
    assert inner == runner.toolset.get("get_today_price").output_schema
    assert unwrap_output_schema({"type": "object"}) == {"type": "object"}
    assert unwrap_output_schema(None) is None


class Node(BaseModel):
    label: str
    children: list[Node] = []


def test_served_output_schemas_resolve_nested_defs_and_unwrap_back() -> None:
    import jsonschema

    from toolproof import tool
    from toolproof.mcp._server import output_schema

    @tool(effect="read")
    def tree(depth: int) -> Node:
        """Build a tree of the given depth."""
        node = Node(label="leaf")
        for i in range(depth):
            node = Node(label=f"n{i}", children=[node])
        return node

    assert "$defs" in (tree.output_schema or {})  # recursive: refs survive inlining
    schema = output_schema(tree.output_schema)
    value = Runner(Toolset([tree])).call_sync("tree", {"depth": 3})
    jsonschema.validate(value.to_dict(), schema)  # the success envelope, refs resolved from the root
    failure = Runner(Toolset([tree])).call_sync("tree", {"depth": "3"})
    jsonschema.validate(failure.to_dict(), schema)  # and the failure envelope (clients check isError too)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"ok": True, "result": {"label": 1}, "meta": {"tool": "t", "call_id": "c"}}, schema)
    assert unwrap_output_schema(schema) == tree.output_schema


def test_open_schemas_are_closed_only_when_they_declare_properties() -> None:
    assert close_open_schema({"type": "object", "properties": {"a": {}}})["additionalProperties"] is False
    assert "additionalProperties" not in close_open_schema({"type": "object"})
    kept = close_open_schema({"type": "object", "properties": {"a": {}}, "additionalProperties": True})
    assert kept["additionalProperties"] is True


# --- config --------------------------------------------------------------------------------------------------

def test_a_full_toml_config_loads(tmp_path: Path) -> None:
    file = tmp_path / "gateway.toml"
    file.write_text(
        """
[gateway]
name = "desk"
prefix = "always"
separator = "-"
store = "sqlite:///x.sqlite3"

[upstreams.time]
command = ["python", "-m", "mcp_server_time"]
trusted = true
timeout_s = 5
drift = "block"
drift_recheck_s = 0.5

[upstreams.time.tools.get_current_time]
effect = "read"
rename = "now"

[upstreams.shop]
url = "http://127.0.0.1:9000/mcp"
exclude = ["debug"]
cwd = "sub"

[[upstreams.shop.errors]]
pattern = "quota"
class = "rate_limited"
code = "QUOTA"
""",
        encoding="utf-8",
    )
    cfg = load_config(file)
    assert cfg.name == "desk" and cfg.store == "sqlite:///x.sqlite3"
    assert cfg.naming == NamingPolicy(prefix="always", separator="-")
    time, shop = cfg.upstreams
    assert time.command == ("python", "-m", "mcp_server_time") and time.trusted and time.timeout_s == 5
    assert (time.drift, time.drift_recheck_s, shop.drift_recheck_s) == ("block", 0.5, 5.0)
    assert time.tools["get_current_time"] == ToolOverride(effect="read", rename="now")
    assert shop.url == "http://127.0.0.1:9000/mcp" and shop.exclude == ("debug",) and not shop.trusted
    assert shop.errors.classify("quota hit", tool="t").code == "QUOTA"


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[upstreams.a]\ncommand='x'\ncolour='red'\n", "unknown key.*colour"),
        ("[upstreams.a]\n", "exactly one of"),
        ("[upstreams.a]\ncommand='x'\nurl='http://h'\n", "exactly one of"),
        ("[upstreams.a]\nurl='ftp://h'\n", "http"),
        ("[upstreams.'a.b']\ncommand='x'\n", "upstream name"),
        ("[upstreams.a]\ncommand='x'\n[upstreams.a.tools.t]\neffect='erase'\n", r"tools\.t.*effect"),
        ("[upstreams.a]\ncommand='x'\n[[upstreams.a.errors]]\npattern='x'\nclass='oops'\n", r"errors\[0\]"),
        ("[gateway]\nprefix='sometimes'\n[upstreams.a]\ncommand='x'\n", "prefix"),
        ("[gateway]\n", "at least one upstream"),
        ("not toml = = =", "not valid TOML"),
        ("[upstreams.a]\ncommand='x'\ndrift_recheck_s=-1\n", "drift_recheck_s must be a number of seconds >= 0"),
        ("[upstreams.a]\ncommand='x'\ndrift_recheck_s='often'\n", "drift_recheck_s"),
    ],
)
def test_bad_configs_fail_with_a_message_that_names_the_key(tmp_path: Path, text: str, match: str) -> None:
    file = tmp_path / "g.toml"
    file.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=match):
        load_config(file)


def test_quick_form_and_cli_overrides() -> None:
    up = parse_upstream_spec("time=python -m mcp_server_time --local-timezone 'Europe/Paris'")
    assert up.command == ("python", "-m", "mcp_server_time", "--local-timezone", "Europe/Paris")
    assert parse_upstream_spec("remote=http://127.0.0.1:1/mcp").url == "http://127.0.0.1:1/mcp"
    with pytest.raises(ConfigError, match="NAME=COMMAND"):
        parse_upstream_spec("just-a-command")
    cfg = gateway_config(None, ["a=x", "b=y"], trust=["b"], prefix="always", store="memory://")
    assert [u.trusted for u in cfg.upstreams] == [False, True]
    assert cfg.naming.prefix == "always" and cfg.store == "memory://"
    with pytest.raises(ConfigError, match="--trust names no upstream: c"):
        gateway_config(None, ["a=x"], trust=["c"])
    with pytest.raises(ConfigError, match="two upstreams"):
        gateway_config(None, ["a=x", "a=y"])
    with pytest.raises(ConfigError, match="--upstream"):
        gateway_config(None, [])


def test_upstream_needs_a_valid_name() -> None:
    with pytest.raises(ConfigError, match="upstream name"):
        Upstream(name="a:b", command=("x",))


def test_an_envelope_in_text_with_escaped_keys_is_still_read() -> None:
    # `ok` and `meta` spelled with \u escapes: the text is parsed (the quick "no such key" test does not skip it).
    text = '{"\\u006fk": false, "\\u006deta": {"tool": "p", "call_id": "c"}, "error": ' + json.dumps(
        Envelope.failure(NotFound("no order 9", code="NO_ORDER"), Meta("p", "c")).to_dict()["error"]) + "}"
    with pytest.raises(ToolError, match="no order 9"):
        interpret(_result(text, error=True), ErrorMapping(), tool="t", trusted=True)
    assert interpret(_result('{"timezone": "UTC"}'), ErrorMapping(), tool="t", trusted=True) == '{"timezone": "UTC"}'


def test_the_served_output_schema_has_the_envelope_parts_in_place() -> None:
    from toolproof.mcp._server import output_schema

    schema = output_schema({"type": "object", "properties": {"a": {"type": "string"}}})
    assert "$ref" not in json.dumps(schema) and "$defs" not in schema  # a client resolves no reference per result
    success, failure = schema["oneOf"]
    assert success["properties"]["meta"]["required"] == ["tool", "call_id"]
    assert failure["properties"]["error"]["additionalProperties"] is False
    assert unwrap_output_schema(schema) == {"type": "object", "properties": {"a": {"type": "string"}}}
