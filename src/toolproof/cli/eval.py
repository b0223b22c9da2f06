"""`toolproof eval ...`: the evals (selection, schema, recovery, bfcl, compare, retrieval).

Other modules add subcommands to `eval_app` in their own `register(app)`. The commands here only parse
options, call `toolproof.evals`, and render; the logic lives in the library.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from ..catalog.toolset import Toolset
from ._common import console, fail, load_object, load_toolset

eval_app = typer.Typer(help="Measure tool choice, arguments, error recovery and retrieval.", no_args_is_help=True)

_MODEL_HELP = ("openai:MODEL, anthropic:MODEL, replay:FILE or scripted:MODULE:FUNC; "
               "'{label}' in the spec is replaced by the toolset label")


def register(app: typer.Typer) -> None:
    app.add_typer(eval_app, name="eval")


def _model(spec: str, label: str, base_url: str | None, api_key: str | None) -> Any:
    from ..evals.models import ModelError, RecordingModel, load_model

    try:
        model = load_model(spec.replace("{label}", label), base_url=base_url, api_key=api_key)
    except ModelError as exc:
        raise fail(str(exc)) from None
    return RecordingModel(model)


def _save_recording(model: Any, record: Path | None, label: str, several: bool) -> None:
    if record is None:
        return
    path = Path(str(record).replace("{label}", label)) if several or "{label}" in str(record) else record
    model.save(path)
    console.print(f"recorded {len(model.records)} replies to {path}")


def _write_outputs(reports: list[dict[str, Any]], json_out: Path | None, html_out: Path | None) -> None:
    from ..evals.report import render_html, write_json

    if json_out is not None:
        write_json(reports, json_out)
        console.print(f"wrote {json_out}")
    if html_out is not None:
        html_out.write_text(render_html(reports), encoding="utf-8")
        console.print(f"wrote {html_out}")


def _load_case_set(path: Path, tags: list[str] | None, today: str | None) -> Any:
    from dataclasses import replace
    from datetime import date

    from ..evals.cases import CaseFileError, load_cases

    try:
        cases = load_cases(path)
    except CaseFileError as exc:
        raise fail(str(exc)) from None
    if tags:
        cases = cases.select(tags=tags)
    if today:
        try:
            cases = replace(cases, today=date.fromisoformat(today))
        except ValueError:
            raise fail(f"--today must be YYYY-MM-DD, got {today!r}") from None
    return cases


def _toolsets(cases: Any, toolset: str | None, labels: list[str] | None) -> list[tuple[str, Toolset]]:
    known: Mapping[str, str] = cases.toolsets
    if toolset:
        label = (labels or ["default"])[0]
        return [(label, load_toolset(toolset))]
    chosen = labels or list(known)
    if not chosen:
        raise fail("give --toolset MODULE:ATTR (the case file names no toolsets)")
    missing = [lb for lb in chosen if lb not in known]
    if missing:
        raise fail(f"the case file has no toolset {missing[0]!r}; it has {sorted(known)}")
    return [(lb, load_toolset(known[lb])) for lb in chosen]


Model = typer.Option(..., "--model", "-m", help=_MODEL_HELP)
BaseUrl = typer.Option(None, "--base-url", envvar="OPENAI_BASE_URL", help="OpenAI-compatible endpoint URL.")
ApiKey = typer.Option(None, "--api-key", envvar="OPENAI_API_KEY", help="API key for the endpoint.")
ToolsetOpt = typer.Option(None, "--toolset", help="MODULE:ATTR of a Toolset (overrides the case file).")
LabelOpt = typer.Option(None, "--label", "-l", help="Toolset label(s) from the case file; repeat to compare.")
RunsOpt = typer.Option(3, "--runs", "-k", min=1, help="Runs per case.")
ConcOpt = typer.Option(4, "--concurrency", min=1, help="Model calls in flight at once.")
RecordOpt = typer.Option(None, "--record", help="Save the model's replies for replay:FILE ('{label}' allowed).")
JsonOpt = typer.Option(None, "--json", help="Write the JSON result here.")
HtmlOpt = typer.Option(None, "--html", help="Write the self-contained HTML report here.")
TagOpt = typer.Option(None, "--tag", help="Only cases with this tag (repeatable).")
TodayOpt = typer.Option(None, "--today", help="Override the case file's today (YYYY-MM-DD).")
MaxErrorsOpt = typer.Option(0.05, "--max-model-errors", min=0.0, max=1.0,
                            help="The share of model requests that may fail (no answer) before the run is an "
                                 "error (exit 2).")
AllowErrorsOpt = typer.Option(False, "--allow-errors",
                              help="Keep and score a run whatever the model's errors; the result is marked "
                                   "partial.")


def _error_budget(max_model_errors: float, allow_errors: bool) -> float | None:
    """The share the library enforces; None (keep everything) under --allow-errors."""
    return None if allow_errors else max_model_errors


def _unanswered(exc: Exception) -> typer.Exit:
    """A model that failed too often: the reason, and how to keep partial results anyway."""
    return fail(f"{exc}. Check the model and endpoint; --allow-errors keeps and scores partial results.")


@eval_app.command("selection")
def selection_cmd(
    cases_path: Path = typer.Argument(..., help="Case file (.yaml or .jsonl)."),
    model: str = Model,
    toolset: str | None = ToolsetOpt,
    label: list[str] | None = LabelOpt,
    runs: int = RunsOpt,
    concurrency: int = ConcOpt,
    base_url: str | None = BaseUrl,
    api_key: str | None = ApiKey,
    record: Path | None = RecordOpt,
    json_out: Path | None = JsonOpt,
    html_out: Path | None = HtmlOpt,
    tag: list[str] | None = TagOpt,
    today: str | None = TodayOpt,
    schema: bool = typer.Option(False, "--schema", help="Also run every generated call through the validator."),
    max_model_errors: float = MaxErrorsOpt,
    allow_errors: bool = AllowErrorsOpt,
) -> None:
    """Score the first tool call (tool and arguments separately) for every case, k runs each."""
    from ..evals.model_errors import TooManyModelErrors
    from ..evals.report import print_report
    from ..evals.schema import check_report
    from ..evals.selection import run_selection

    cases = _load_case_set(cases_path, tag, today)
    pairs = _toolsets(cases, toolset, label)
    reports: list[dict[str, Any]] = []
    for lb, ts in pairs:
        m = _model(model, lb, base_url, api_key)
        live = not m.inner.name.startswith(("replay:", "scripted:"))
        try:
            report = run_selection(cases, ts, m, label=lb, runs=runs, concurrency=concurrency, progress=live,
                                   max_model_errors=_error_budget(max_model_errors, allow_errors))
        except TooManyModelErrors as exc:
            raise _unanswered(exc) from None
        except ValueError as exc:
            raise fail(str(exc)) from None
        _save_recording(m, record, lb, len(pairs) > 1)
        reports.append(report.to_dict())
        print_report(reports[-1], console)
        if schema:
            reports.append(check_report(report, ts).to_dict())
            print_report(reports[-1], console)
    _write_outputs(reports, json_out, html_out)


@eval_app.command("schema")
def schema_cmd(
    cases_path: Path = typer.Argument(..., help="Case file (.yaml or .jsonl)."),
    model: str = Model,
    toolset: str | None = ToolsetOpt,
    label: list[str] | None = LabelOpt,
    runs: int = RunsOpt,
    concurrency: int = ConcOpt,
    base_url: str | None = BaseUrl,
    api_key: str | None = ApiKey,
    json_out: Path | None = JsonOpt,
    html_out: Path | None = HtmlOpt,
    today: str | None = TodayOpt,
    max_model_errors: float = MaxErrorsOpt,
    allow_errors: bool = AllowErrorsOpt,
) -> None:
    """Run every call the model generates for the cases through the production validator, per field."""
    from ..evals.model_errors import TooManyModelErrors
    from ..evals.report import print_report
    from ..evals.schema import check_report
    from ..evals.selection import run_selection

    cases = _load_case_set(cases_path, None, today)
    reports = []
    for lb, ts in _toolsets(cases, toolset, label):
        m = _model(model, lb, base_url, api_key)
        live = not m.inner.name.startswith(("replay:", "scripted:"))
        try:
            report = run_selection(cases, ts, m, label=lb, runs=runs, concurrency=concurrency, progress=live,
                                   max_model_errors=_error_budget(max_model_errors, allow_errors))
        except TooManyModelErrors as exc:
            raise _unanswered(exc) from None
        except ValueError as exc:
            raise fail(str(exc)) from None
        reports.append(check_report(report, ts).to_dict())
        print_report(reports[-1], console)
    _write_outputs(reports, json_out, html_out)


@eval_app.command("recovery")
def recovery_cmd(
    failures: str = typer.Argument(..., help="MODULE:ATTR of a sequence of SeededFailure."),
    model: str = Model,
    toolset: str = typer.Option(..., "--toolset", help="MODULE:ATTR of the Toolset the model sees."),
    label: str = typer.Option("default", "--label", "-l", help="A name for this toolset in the report."),
    error_format: str = typer.Option("envelope", "--error-format",
                                     help="envelope (toolproof) or opaque (an unwrapped 'Error 500')."),
    runs: int = typer.Option(1, "--runs", "-k", min=1),
    system_prompt: str | None = typer.Option(None, "--system-prompt"),
    concurrency: int = ConcOpt,
    base_url: str | None = BaseUrl,
    api_key: str | None = ApiKey,
    record: Path | None = RecordOpt,
    json_out: Path | None = JsonOpt,
    html_out: Path | None = HtmlOpt,
    max_model_errors: float = MaxErrorsOpt,
    allow_errors: bool = AllowErrorsOpt,
) -> None:
    """Seed failures, run the fixed loop, and score the model's next step per error class."""
    from ..evals.model_errors import TooManyModelErrors
    from ..evals.recovery import SeededFailure, run_recovery
    from ..evals.report import print_report

    if error_format not in ("envelope", "opaque"):
        raise fail("--error-format is envelope or opaque")
    library = load_object(failures)
    if callable(library):
        library = library()
    if not isinstance(library, list | tuple) or not all(isinstance(f, SeededFailure) for f in library):
        raise fail(f"{failures!r} is not a sequence of SeededFailure")
    ts = load_toolset(toolset)
    m = _model(model, label, base_url, api_key)
    live = not m.inner.name.startswith(("replay:", "scripted:"))
    try:
        report = run_recovery(library, ts, m, system_prompt=system_prompt, runs=runs,
                              error_format=error_format,  # type: ignore[arg-type]
                              label=label, concurrency=concurrency, progress=live,
                              max_model_errors=_error_budget(max_model_errors, allow_errors))
    except TooManyModelErrors as exc:
        raise _unanswered(exc) from None
    _save_recording(m, record, label, False)
    data = report.to_dict()
    print_report(data, console)
    _write_outputs([data], json_out, html_out)


@eval_app.command("bfcl")
def bfcl_cmd(
    category: list[str] = typer.Option(..., "--category", "-c", help="BFCL v4 category (repeatable)."),
    model: str | None = typer.Option(None, "--model", "-m", help=_MODEL_HELP),
    outputs: Path | None = typer.Option(None, "--outputs", help="Scorer-only: a JSONL file of model outputs."),
    root: Path | None = typer.Option(None, "--root", help="The bfcl/v4 folder (default: shared corpora)."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="First N entries per category."),
    agreement: bool = typer.Option(False, "--agreement",
                                   help="Judge ground truths and perturbations with our scorer and BFCL's "
                                        "own checker (needs bfcl-eval)."),
    concurrency: int = ConcOpt,
    base_url: str | None = BaseUrl,
    api_key: str | None = ApiKey,
    record: Path | None = RecordOpt,
    json_out: Path | None = JsonOpt,
    html_out: Path | None = HtmlOpt,
    max_model_errors: float = MaxErrorsOpt,
    allow_errors: bool = AllowErrorsOpt,
) -> None:
    """Berkeley Function Calling Leaderboard cases through the selection scorer."""
    from ..evals import bfcl
    from ..evals.model_errors import TooManyModelErrors
    from ..evals.report import print_report

    cats = list(bfcl.AST_CATEGORIES) if category == ["all"] else category
    for c in cats:
        if c in bfcl.UNSCORED_CATEGORIES:
            raise fail(f"{c!r} is judged by execution or final answers in BFCL, not by call ASTs: not scored here")
    if agreement:
        _agreement(cats, root)
        return
    if (model is None) == (outputs is None):
        raise fail("give --model (run the model) or --outputs (score a file), not both")
    try:
        entries = [e for c in cats for e in bfcl.load_category(c, root)[:limit]]
    except FileNotFoundError as exc:
        raise fail(str(exc)) from None
    if outputs is not None:
        try:
            result = bfcl.score_outputs(entries, bfcl.read_outputs(outputs))
        except (ValueError, OSError) as exc:
            raise fail(str(exc)) from None
        name = f"outputs:{outputs.name}"
    else:
        assert model is not None
        m = _model(model, "bfcl", base_url, api_key)
        try:
            result = bfcl.run_bfcl(entries, m, concurrency=concurrency,
                                   progress=not m.inner.name.startswith(("replay:", "scripted:")),
                                   max_model_errors=_error_budget(max_model_errors, allow_errors))
        except TooManyModelErrors as exc:
            raise _unanswered(exc) from None
        _save_recording(m, record, "bfcl", False)
        name = m.name
    data = {"kind": "bfcl", "model": name, **result.to_dict()}
    print_report(data, console)
    _write_outputs([data], json_out, html_out)


def _agreement(categories: list[str], root: Path | None) -> None:
    from rich.table import Table

    from ..evals import bfcl
    from ..evals.reference import agreement

    try:
        rows = agreement([c for c in categories if c in bfcl.AST_CATEGORIES], root)
    except ImportError as exc:
        raise fail(f"the agreement run needs bfcl-eval (pip install --no-deps bfcl-eval): {exc}") from None
    table = Table(title="agreement with BFCL's ast_checker")
    for col in ("category", "ground truths", "agree", "pass", "perturbations", "agree", "as intended"):
        table.add_column(col, justify="right" if col != "category" else "left")
    for r in rows:
        table.add_row(r.category, str(r.ground_truths), str(r.ground_truth_agree), str(r.ground_truth_pass),
                      str(r.perturbations), str(r.perturbation_agree), str(r.perturbation_as_intended))
    console.print(table)
    for r in rows:
        for d in r.disagreements:
            console.print(f"  disagree: {d.entry_id} {d.kind} ours={d.ours} bfcl={d.reference} {d.detail}")


@eval_app.command("compare")
def compare_cmd(
    base: Path = typer.Argument(..., help="The baseline JSON result."),
    new: Path = typer.Argument(..., help="The new JSON result."),
    threshold: float = typer.Option(0.02, "--threshold", min=0.0,
                                    help="A metric worse by more than this (absolute) is a regression."),
) -> None:
    """Print the deltas between two results; exit 1 on a regression beyond the threshold (for CI)."""
    from ..evals.report import compare, print_compare, read_json

    try:
        deltas = compare(read_json(base), read_json(new))
    except (OSError, ValueError, KeyError) as exc:
        raise fail(f"cannot compare: {exc}") from None
    if not deltas:
        raise fail("the two results share no metric")
    if print_compare(deltas, threshold, console):
        raise typer.Exit(1)
