"""Configuration values for importing upstream MCP servers and for the gateway, and the TOML loader.

Everything here is a frozen value checked when it is built, so a bad config fails at start with a message
that names the key, never halfway through a call.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, Literal, get_args

from ..contract._errors import ErrorClass
from ..contract._tool import Effect, Risk
from ._caps import DEFAULT_CAPS, CapsError, ResponseCaps
from ._errormap import DEFAULT_ERROR_MAPPING, ErrorMapping, ErrorRule
from ._limits import LimitRule, LimitsError, check_rules, rules_from_toml

PrefixMode = Literal["always", "on_clash"]
#: The `drift` policies of an upstream (mcp/_drift.py says what each does).
DRIFT_POLICIES: Final = ("accept-compatible", "block", "warn")
UPSTREAM_NAME_RE: Final = re.compile(r"^[a-zA-Z0-9_-]{1,32}$")
SEPARATOR_RE: Final = re.compile(r"^[_-]{1,3}$")
DEFAULT_TIMEOUT_S: Final = 30.0
DEFAULT_DRIFT_RECHECK_S: Final = 5.0


class ConfigError(ValueError):
    """A gateway or import configuration is wrong; the message names the key."""


@dataclass(frozen=True, slots=True)
class ToolOverride:
    """What the operator knows about one upstream tool; wins over the server's annotations, trusted or not."""

    effect: Effect | None = None
    idempotent: bool | None = None
    risk: Risk | None = None
    timeout_s: float | None = None
    rename: str | None = None

    def __post_init__(self) -> None:
        if self.effect is not None and self.effect not in get_args(Effect):
            raise ConfigError(f"effect must be 'read' or 'write', got {self.effect!r}")
        if self.risk is not None and self.risk not in get_args(Risk):
            raise ConfigError(f"risk must be 'low' or 'high', got {self.risk!r}")
        if self.idempotent is not None and not isinstance(self.idempotent, bool):
            raise ConfigError(f"idempotent must be true or false, got {self.idempotent!r}")
        _check_timeout(self.timeout_s, "timeout_s")
        if self.rename is not None and not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", str(self.rename)):
            raise ConfigError(f"rename {self.rename!r} must match ^[a-zA-Z0-9_-]{{1,64}}$")


@dataclass(frozen=True, slots=True)
class Upstream:
    """One MCP server to import: a stdio `command` (argv) or a streamable HTTP `url`.

    `trusted=False` (the default) means its annotations are hints only: every tool is a non-idempotent
    write unless `tools` says otherwise. `close_open_schemas` adds `additionalProperties: false` to an
    input schema that declares properties and says nothing about extra ones, so unknown arguments are
    refused here instead of being silently dropped upstream.
    """

    name: str
    command: tuple[str, ...] = ()
    url: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    trusted: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    tools: Mapping[str, ToolOverride] = field(default_factory=dict)
    exclude: tuple[str, ...] = ()
    close_open_schemas: bool = True
    errors: ErrorMapping = DEFAULT_ERROR_MAPPING
    #: What a changed tool definition gets (mcp/_drift.py): `accept-compatible`, `block` or `warn`.
    drift: str = "accept-compatible"
    #: While running, re-list the upstream before a call or a client's `tools/list` when the last listing is
    #: older than this (seconds; 0: before every call). A change the upstream announces is checked at once.
    drift_recheck_s: float = DEFAULT_DRIFT_RECHECK_S
    #: How big an answer of this upstream may be before it is cut (caps.py); the gateway's `[caps]`.
    caps: ResponseCaps = DEFAULT_CAPS

    def __post_init__(self) -> None:
        if self.drift not in DRIFT_POLICIES:
            raise ConfigError(f"upstream {self.name!r}: drift must be one of {', '.join(DRIFT_POLICIES)}, "
                              f"got {self.drift!r}")
        if not isinstance(self.name, str) or not UPSTREAM_NAME_RE.match(self.name):
            raise ConfigError(f"upstream name {self.name!r} must match {UPSTREAM_NAME_RE.pattern}")
        if isinstance(self.command, str):
            object.__setattr__(self, "command", tuple(shlex.split(self.command)))
        else:
            object.__setattr__(self, "command", tuple(self.command))
        if bool(self.command) == bool(self.url):
            raise ConfigError(f"upstream {self.name!r}: give exactly one of `command` (stdio) or `url` (HTTP)")
        if self.url is not None and not re.match(r"^https?://", self.url):
            raise ConfigError(f"upstream {self.name!r}: url must start with http:// or https://, got {self.url!r}")
        if not isinstance(self.trusted, bool):
            raise ConfigError(f"upstream {self.name!r}: trusted must be true or false")
        _check_timeout(self.timeout_s, f"upstream {self.name!r}: timeout_s")
        recheck = self.drift_recheck_s
        if isinstance(recheck, bool) or not isinstance(recheck, int | float) or not 0 <= recheck < float("inf"):
            raise ConfigError(f"upstream {self.name!r}: drift_recheck_s must be a number of seconds >= 0, "
                              f"got {recheck!r}")
        object.__setattr__(self, "env", MappingProxyType({str(k): str(v) for k, v in dict(self.env).items()}))
        object.__setattr__(self, "tools", MappingProxyType(dict(self.tools)))
        object.__setattr__(self, "exclude", tuple(self.exclude))

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "http" if self.url else "stdio"

    def override_for(self, tool_name: str) -> ToolOverride | None:
        return self.tools.get(tool_name)


@dataclass(frozen=True, slots=True)
class NamingPolicy:
    """How upstream tool names become gateway names: `upstream<separator>tool`, always or only on a clash."""

    prefix: PrefixMode = "on_clash"
    separator: str = "__"

    def __post_init__(self) -> None:
        if self.prefix not in get_args(PrefixMode):
            raise ConfigError(f"prefix must be 'always' or 'on_clash', got {self.prefix!r}")
        if not SEPARATOR_RE.match(self.separator):
            raise ConfigError(
                f"separator {self.separator!r} must be 1-3 of '_' or '-': MCP clients reject dots, colons and "
                "slashes in tool names"
            )


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    """Upstreams, the naming policy, the store URL (journal and audit) and the server name; the operator's
    `caps` (caps.py: every upstream gets them), `limits` (limits.py) and the fleet's `shared_state` URL
    (breakers, retry quota and `shared` limits across gateway processes)."""

    upstreams: tuple[Upstream, ...]
    naming: NamingPolicy = NamingPolicy()
    store: str | None = None
    name: str = "toolproof-gateway"
    caps: ResponseCaps = DEFAULT_CAPS
    limits: tuple[LimitRule, ...] = ()
    shared_state: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "upstreams", tuple(replace(u, caps=self.caps) if u.caps != self.caps else u
                                                    for u in self.upstreams))
        object.__setattr__(self, "limits", tuple(self.limits))
        if not self.upstreams:
            raise ConfigError("the gateway needs at least one upstream")
        seen: set[str] = set()
        for up in self.upstreams:
            if up.name in seen:
                raise ConfigError(f"two upstreams are both named {up.name!r}")
            seen.add(up.name)
        try:
            check_rules(self.limits, [u.name for u in self.upstreams])
        except LimitsError as exc:
            raise ConfigError(str(exc)) from None
        if any(r.shared for r in self.limits) and self.shared_state in (None, "memory", "memory://"):
            raise ConfigError("[[limits]]: a rule says shared = true, but [gateway] shared_state names no "
                              "redis:// or postgresql:// store to share it through")


def _check_timeout(value: Any, what: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(f"{what} must be a positive number of seconds, got {value!r}")


# --- TOML ------------------------------------------------------------------------------------------------

_GATEWAY_KEYS: Final = frozenset({"name", "store", "prefix", "separator", "shared_state"})
_UPSTREAM_KEYS: Final = frozenset(
    {"command", "url", "env", "cwd", "trusted", "timeout_s", "tools", "exclude", "close_open_schemas", "errors",
     "drift", "drift_recheck_s"}
)
_TOOL_KEYS: Final = frozenset({"effect", "idempotent", "risk", "timeout_s", "rename"})
_RULE_KEYS: Final = frozenset({"pattern", "class", "code"})


def _only(table: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")


def _table(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must be a table")
    return value


def upstream_from_dict(name: str, data: Mapping[str, Any], *, base_dir: Path | None = None) -> Upstream:
    """One `[upstreams.NAME]` table as an `Upstream` (relative `cwd` is resolved against `base_dir`)."""
    where = f"[upstreams.{name}]"
    _only(data, _UPSTREAM_KEYS, where)
    command = data.get("command", ())
    if isinstance(command, str):
        command = shlex.split(command)
    if not isinstance(command, Sequence) or not all(isinstance(c, str) for c in command):
        raise ConfigError(f"{where}: command must be a string or a list of strings")
    tools: dict[str, ToolOverride] = {}
    for tool_name, raw in _table(data.get("tools", {}), f"{where}.tools").items():
        table = _table(raw, f"{where}.tools.{tool_name}")
        _only(table, _TOOL_KEYS, f"{where}.tools.{tool_name}")
        try:
            tools[tool_name] = ToolOverride(**table)
        except ConfigError as exc:
            raise ConfigError(f"{where}.tools.{tool_name}: {exc}") from None
    rules: list[ErrorRule] = []
    raw_rules = data.get("errors", [])
    if not isinstance(raw_rules, list):
        raise ConfigError(f"{where}: errors must be an array of tables ([[upstreams.{name}.errors]])")
    for i, raw in enumerate(raw_rules):
        rule = _table(raw, f"{where}.errors[{i}]")
        _only(rule, _RULE_KEYS, f"{where}.errors[{i}]")
        try:
            rules.append(ErrorRule(str(rule["pattern"]), ErrorClass(rule["class"]), rule.get("code")))
        except KeyError as exc:
            raise ConfigError(f"{where}.errors[{i}]: missing {exc.args[0]!r}") from None
        except ValueError as exc:
            raise ConfigError(f"{where}.errors[{i}]: {exc}") from None
    cwd = data.get("cwd")
    if cwd is not None and base_dir is not None and not Path(cwd).is_absolute():
        cwd = str((base_dir / cwd).resolve())
    exclude = data.get("exclude", ())
    if not isinstance(exclude, Sequence) or isinstance(exclude, str):
        raise ConfigError(f"{where}: exclude must be a list of tool names")
    try:
        return Upstream(
            name=name,
            command=tuple(command),
            url=data.get("url"),
            env=_table(data.get("env", {}), f"{where}.env"),
            cwd=cwd,
            trusted=data.get("trusted", False),
            timeout_s=data.get("timeout_s", DEFAULT_TIMEOUT_S),
            tools=tools,
            exclude=tuple(exclude),
            close_open_schemas=bool(data.get("close_open_schemas", True)),
            errors=DEFAULT_ERROR_MAPPING.with_rules(rules),
            drift=str(data.get("drift", "accept-compatible")),
            drift_recheck_s=data.get("drift_recheck_s", DEFAULT_DRIFT_RECHECK_S),
        )
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def config_from_dict(data: Mapping[str, Any], *, base_dir: Path | None = None) -> GatewayConfig:
    """A parsed TOML document (`[gateway]` and `[upstreams.NAME]` tables) as a `GatewayConfig`."""
    _only(data, frozenset({"gateway", "upstreams", "caps", "limits"}), "the config file")
    gateway = _table(data.get("gateway", {}), "[gateway]")
    _only(gateway, _GATEWAY_KEYS, "[gateway]")
    ups = _table(data.get("upstreams", {}), "[upstreams]")
    upstreams = tuple(upstream_from_dict(n, _table(t, f"[upstreams.{n}]"), base_dir=base_dir) for n, t in ups.items())
    shared_state = gateway.get("shared_state")
    if shared_state is not None and not isinstance(shared_state, str):
        raise ConfigError("[gateway] shared_state must be a URL string (redis://... or postgresql://...)")
    try:
        caps = ResponseCaps.from_dict(_table(data.get("caps", {}), "[caps]"))
        limits = rules_from_toml(data.get("limits", []), upstreams=[u.name for u in upstreams])
    except (CapsError, LimitsError, TypeError) as exc:
        raise ConfigError(str(exc)) from None
    return GatewayConfig(
        upstreams=upstreams,
        naming=NamingPolicy(prefix=gateway.get("prefix", "on_clash"), separator=gateway.get("separator", "__")),
        store=gateway.get("store"),
        name=str(gateway.get("name", "toolproof-gateway")),
        caps=caps,
        limits=limits,
        shared_state=shared_state,
    )


def load_config(path: str | Path) -> GatewayConfig:
    """Read a gateway TOML file."""
    file = Path(path)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {file}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file} is not valid TOML: {exc}") from None
    return config_from_dict(data, base_dir=file.parent)


def parse_upstream_spec(spec: str) -> Upstream:
    """The quick form `NAME=COMMAND ...` (a command line) or `NAME=http://...` (a URL)."""
    name, sep, rest = spec.partition("=")
    if not sep or not rest.strip():
        raise ConfigError(f"--upstream wants NAME=COMMAND or NAME=URL, got {spec!r}")
    rest = rest.strip()
    if re.match(r"^https?://", rest):
        return Upstream(name=name.strip(), url=rest)
    return Upstream(name=name.strip(), command=tuple(shlex.split(rest)))


def gateway_config(
    path: str | Path | None,
    upstream_specs: Sequence[str] = (),
    *,
    trust: Sequence[str] = (),
    prefix: str | None = None,
    store: str | None = None,
) -> GatewayConfig:
    """The config file (if any) plus quick-form upstreams, `--trust NAME`, `--prefix` and `--store` on top."""
    base = load_config(path) if path is not None else None
    upstreams = list(base.upstreams) if base is not None else []
    upstreams.extend(parse_upstream_spec(spec) for spec in upstream_specs)
    names = {u.name for u in upstreams}
    unknown = sorted(set(trust) - names)
    if unknown:
        raise ConfigError(f"--trust names no upstream: {', '.join(unknown)}")
    upstreams = [replace(u, trusted=True) if u.name in trust else u for u in upstreams]
    naming = base.naming if base is not None else NamingPolicy()
    if prefix is not None:
        naming = NamingPolicy(prefix=prefix, separator=naming.separator)  # type: ignore[arg-type]
    if not upstreams:
        raise ConfigError("give --config FILE or at least one --upstream NAME=COMMAND")
    return GatewayConfig(
        upstreams=tuple(upstreams),
        naming=naming,
        store=store if store is not None else (base.store if base is not None else None),
        name=base.name if base is not None else "toolproof-gateway",
        caps=base.caps if base is not None else ResponseCaps(),
        limits=base.limits if base is not None else (),
        shared_state=base.shared_state if base is not None else None,
    )
