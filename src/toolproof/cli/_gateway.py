"""`toolproof gateway`: one MCP server in front of others, every upstream call through the whole contract."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..stores._base import shown_url
from ._options import JsonOpt, StoreOpt, chosen_store, command_group, fail, print_json_lines, print_table, say
from ._serve import (
    AllowHostOpt,
    HostOpt,
    HttpOpt,
    OAuthOpt,
    PortOpt,
    TokensEnvOpt,
    TokensFileOpt,
    check_http_bind,
    http_auth,
)

if TYPE_CHECKING:
    from ..mcp._auth import HttpAuth
    from ..mcp._config import GatewayConfig
    from ..mcp._gateway import Gateway, Treatment

CheckOpt = Annotated[bool, typer.Option(
    "--check", help="Start the upstreams, print how each tool is treated, and exit (serves nothing, opens no store).")]
WatchOpt = Annotated[bool, typer.Option(
    "--watch", help="Reload when the --config file changes (checked every second), as on SIGHUP.")]
MetricsPortOpt = Annotated[int | None, typer.Option(
    "--metrics-port", help="Also serve /metrics, /healthz and /readyz on this port of --host (0 picks one; the "
                           "URL is printed on stderr). The HTTP gateway serves them beside /mcp anyway.")]


def gateway(
    ctx: typer.Context,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="Gateway TOML file (docs/mcp.md).")] = None,
    upstream: Annotated[list[str] | None, typer.Option("--upstream", "-u",
                                                       help="NAME=COMMAND or NAME=URL (repeatable).")] = None,
    trust: Annotated[list[str] | None, typer.Option("--trust", help="Trust the annotations of this upstream "
                                                                    "(repeatable).")] = None,
    prefix: Annotated[str | None, typer.Option("--prefix", help="Name prefixes: always | on_clash "
                                                                "(default on_clash).")] = None,
    http: HttpOpt = False,
    host: HostOpt = "127.0.0.1",
    port: PortOpt = 8000,
    store: StoreOpt = None,
    check: CheckOpt = False,
    as_json: JsonOpt = False,
    tokens_file: TokensFileOpt = None,
    tokens_env: TokensEnvOpt = None,
    oauth: OAuthOpt = None,
    allow_host: AllowHostOpt = None,
    metrics_port: MetricsPortOpt = None,
    watch: WatchOpt = False,
) -> None:
    """Serve the tools of one or more upstream MCP servers through the whole contract.

    At start it prints (on stderr) how every upstream tool is treated: trusted or not, the effect assumed,
    journaled (a repeat replays the first answer) or not, retried or not. SIGHUP (or, with --watch, a change
    of the file) reloads the config and the --tokens-file with open sessions kept: caps, limits and upstreams
    change in place; a config that does not load, an upstream that does not start, or a change to the store,
    the shared state or the name is refused and the running config kept (the reason goes to stderr)."""
    if ctx.invoked_subcommand is not None:  # `gateway pins ...`
        return
    from ..contract._errors import ToolError
    from ..mcp import ConfigError, gateway_config

    auth = http_auth(tokens_file, tokens_env, oauth)
    check_http_bind(http, host, auth)
    if watch and config is None:
        raise fail("--watch needs --config (the file to watch)")

    def load() -> GatewayConfig:
        """The config as the options and the file say now (read again on SIGHUP)."""
        return gateway_config(config, upstream or [], trust=trust or [], prefix=prefix, store=store)

    try:
        cfg = load()
    except ConfigError as exc:
        raise fail(str(exc)) from None
    try:
        if check:
            asyncio.run(_check(cfg, as_json))
            return
        # --store, else the config file's store, else $TOOLPROOF_STORE, else the file in .toolproof/
        cfg = dataclasses.replace(cfg, store=chosen_store(cfg.store))
        say(f"journal and audit trail: {shown_url(cfg.store or '')}", stderr=True)

        def reload() -> GatewayConfig:
            fresh = load()
            return dataclasses.replace(fresh, store=chosen_store(fresh.store))

        tokens = _tokens_reader(auth, tokens_file)
        asyncio.run(_serve(cfg, http=http, host=host, port=port, auth=auth, allowed_hosts=allow_host or (),
                           metrics_port=metrics_port, reload=reload if config is not None else None,
                           tokens=tokens, watch=config if watch else None))
    except (ValueError, ToolError) as exc:  # DefinitionError and NameClash are ValueErrors
        raise fail(f"the gateway did not start: {exc}") from None
    except KeyboardInterrupt:  # pragma: no cover - interactive
        pass


async def _serve(cfg: GatewayConfig, *, http: bool, host: str, port: int, auth: HttpAuth | None,
                 allowed_hosts: Sequence[str], metrics_port: int | None = None,
                 reload: Callable[[], GatewayConfig] | None = None,
                 tokens: Callable[[], Callable[[], str]] | None = None, watch: Path | None = None) -> None:
    from ..mcp import Gateway
    from ..mcp._health import serve_ops

    async with Gateway(cfg) as gw, contextlib.AsyncExitStack() as stack:
        print_treatments(gw, stderr=True)
        print_ops(gw.config, stderr=True)
        loop = asyncio.get_running_loop()
        reloads: set[asyncio.Task[bool]] = set()  # running now (a task needs a reference until it ends)

        def on_change() -> None:
            if reload is None:  # started without --config: nothing to read again; say so, keep serving
                _line("toolproof: SIGHUP ignored: the gateway was started without --config")
                return
            task = loop.create_task(reload_config(gw, reload, tokens))
            reloads.add(task)
            task.add_done_callback(reloads.discard)

        if hasattr(signal, "SIGHUP"):
            loop.add_signal_handler(signal.SIGHUP, on_change)
            stack.callback(loop.remove_signal_handler, signal.SIGHUP)
        if metrics_port is not None:
            await stack.enter_async_context(serve_ops(gw, host=host, port=metrics_port))
        if watch is not None and reload is not None:
            watcher = asyncio.create_task(watch_file(watch, on_change))
            stack.callback(watcher.cancel)
        if http:
            await gw.serve_http(host=host, port=port, auth=auth, allowed_hosts=allowed_hosts)
        else:
            await gw.serve_stdio()


async def reload_config(gw: Gateway, load: Callable[[], GatewayConfig],
                        tokens: Callable[[], Callable[[], str]] | None = None) -> bool:
    """SIGHUP: read the config (and the --tokens-file) again and apply both, or keep the running ones and say
    why (one stderr line). All or nothing: a broken tokens file keeps the old config too."""
    from ..mcp import ConfigError

    try:
        fresh = load()
        rotate = tokens() if tokens is not None else None
    except (ConfigError, ValueError) as exc:
        gw.metrics.reloaded(False)
        _line(f"toolproof: config reload refused, the running config is kept: {exc}")
        return False
    try:
        changes = await gw.reload(fresh)
    except Exception as exc:  # counted by the gateway; a new upstream that does not start lands here too
        _line(f"toolproof: config reload refused, the running config is kept: {exc}")
        return False
    if rotate is not None:
        changes.append(rotate())
    _line(f"toolproof: config reloaded: {'; '.join(changes) or 'no change to [caps] or [[limits]]'}")
    return True


async def watch_file(path: Path, changed: Callable[[], object], every_s: float = 1.0) -> None:
    """Call `changed` each time the file's modification time or size changes (a missing file is a change too:
    the reload then says it cannot read it)."""

    def stamp() -> tuple[int, int] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    seen = stamp()
    while True:
        await asyncio.sleep(every_s)
        now = stamp()
        if now != seen:
            seen = now
            changed()


def _tokens_reader(auth: HttpAuth | None, tokens_file: Path | None) -> Callable[[], Callable[[], str]] | None:
    """With --tokens-file: read the file again (raising on a bad one) and return what installs it."""
    from ..mcp._auth import TokenTable

    if auth is None or tokens_file is None or not isinstance(auth.verifier, TokenTable):
        return None
    table = auth.verifier

    def read() -> Callable[[], str]:
        fresh = TokenTable.from_file(tokens_file)

        def install() -> str:
            table.take_entries(fresh)
            return f"tokens: {len(fresh)} from {tokens_file}"

        return install

    return read


def _line(text: str) -> None:
    print(text, file=sys.stderr, flush=True)  # one unwrapped line, for log collectors


async def _check(cfg: GatewayConfig, as_json: bool) -> None:
    """Start the upstreams with an in-memory store (nothing is written anywhere), print, stop."""
    from ..mcp import Gateway
    from ..stores import MemoryStore

    async with Gateway(cfg, store=MemoryStore()) as gw:
        if as_json:
            print_json_lines(dataclasses.asdict(t) for t in gw.treatments())
        else:
            print_treatments(gw, stderr=False)
            print_ops(gw.config, stderr=False)


def print_ops(cfg: GatewayConfig, *, stderr: bool) -> None:
    """The caps and every limit rule, one line each (what `--check` validated and the gateway enforces)."""
    from ..mcp._health import describe_caps

    say(f"caps: {describe_caps(cfg.caps)}", stderr=stderr)
    for rule in cfg.limits:
        where = f"caller {rule.caller}, tool {rule.tool}, upstream {rule.upstream}"
        say(f"limit {rule.name}: {where}: {rule.describe()}{', fleet-wide' if rule.shared else ''}", stderr=stderr)
    if not cfg.limits:
        say("limits: none ([[limits]] in the config adds them)", stderr=stderr)


def print_treatments(gw: Gateway, *, stderr: bool) -> None:
    """The table of every upstream tool, and a note naming the reads that may be answered from the journal."""
    rows = gw.treatments()
    print_table(("tool", "upstream", "trusted", "effect", "journaled", "retried", "why"),
                ((t.tool, t.upstream, _yes(t.trusted), f"{t.effect}, {'' if t.idempotent else 'not '}idempotent",
                  _yes(t.journaled), _yes(t.retried), t.source) for t in rows),
                title="how the gateway treats each upstream tool", stderr=stderr)
    note = stale_note(rows)
    if note:
        say(note, stderr=stderr)
    for row in rows:
        if row.neutralised:
            say(f"neutralised: {row.tool} (untrusted {row.upstream}): {'; '.join(row.neutralised)}", stderr=stderr)


def stale_note(rows: Sequence[Treatment]) -> str | None:
    """Tools journaled only because their upstream is untrusted: a repeat gets the first answer, not a fresh one."""
    assumed = [t for t in rows if t.journaled and not t.trusted and t.source != "override"]
    if not assumed:
        return None
    names = ", ".join(t.tool for t in assumed)
    upstreams = sorted({t.upstream for t in assumed})
    return (f"note: {names}: untrusted, so treated as writes and journaled. A repeat with the same arguments in "
            "the same conversation replays the first answer (meta.replayed_from says when it ran), even for a "
            f"read. For fresh reads trust the upstream ({' '.join(f'--trust {u}' for u in upstreams)}) or declare "
            f"its reads in the config ([upstreams.{upstreams[0]}.tools.TOOL] effect = \"read\").")


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def register(app: typer.Typer) -> None:
    from ._pins import pins_app

    group = command_group(gateway.__doc__, no_args_is_help=False, invoke_without_command=True)
    group.callback()(gateway)
    group.add_typer(pins_app, name="pins")
    app.add_typer(group, name="gateway")
