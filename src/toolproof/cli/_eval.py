"""`toolproof eval ...`: the evals (selection, schema, recovery, bfcl, compare, retrieval).

Other modules add subcommands to `eval_app` in their own `register(app)`. The commands here only parse
options, call `toolproof.evals`, and render; the logic lives in the library.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..catalog._toolset import Toolset
from ._load import load_object, load_toolset
from ._options import JsonOpt, OutOpt, command_group, console, fail, print_json_lines, print_table, say, write_text

eval_app = command_group("Measure tool choice, arguments, error recovery and retrieval.")

_MODEL_HELP = ("openai:MODEL, anthropic:MODEL, replay:FILE or scripted:MODULE:FUNC; "
               "'{label}' in the spec is replaced by the toolset label")


def register(app: typer.Typer) -> None:
    app.add_typer(eval_app, name="eval")


def _model(spec: str, label: str, base_url: str | None, api_key: str | None) -> Any:
    from ..evals._models import ModelError, RecordingModel, load_model

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
    say(f"recorded {len(model.records)} replies to {path}", stderr=True)


def _show(report: dict[str, Any], as_json: bool) -> None:
    """One report: a table for a person, or (with --json) nothing now: the reports go out as JSON lines at the end."""
    from ..evals._report import print_report

    if not as_json:
        print_report(report, console)


def _write_outputs(reports: list[dict[str, Any]], out: Path | None, html_out: Path | None, as_json: bool) -> None:
    from ..evals._report import render_html, write_json

    if as_json:
        print_json_lines(reports)
    if out is not None:
        write_json(reports, out)
        say(f"wrote {out}", stderr=True)
    if html_out is not None:
        write_text(html_out, render_html(reports), "the HTML report")


def _load_case_set(path: Path, tags: list[str] | None, today: str | None) -> Any:
    from dataclasses import replace
    from datetime import date

    from ..evals._cases import CaseFileError, load_cases

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
    out: OutOpt = None,
    html_out: Path | None = HtmlOpt,
    as_json: JsonOpt = False,
    tag: list[str] | None = TagOpt,
    today: str | None = TodayOpt,
    schema: bool = typer.Option(False, "--schema", help="Also run every generated call through the validator."),
    max_model_errors: float = MaxErrorsOpt,
    allow_errors: bool = AllowErrorsOpt,
) -> None:
    """Score the first tool call (tool and arguments separately) for every case, k runs each."""
    from ..evals._model_errors import TooManyModelErrors
    from ..evals._schema import check_report
    from ..evals._selection import run_selection

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
        _show(reports[-1], as_json)
        if schema:
            reports.append(check_report(report, ts).to_dict())
            _show(reports[-1], as_json)
    _write_outputs(reports, out, html_out, as_json)


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
    out: OutOpt = None,
    html_out: Path | None = HtmlOpt,
    as_json: JsonOpt = False,
    today: str | None = TodayOpt,
    max_model_errors: float = MaxErrorsOpt,
    allow_errors: bool = AllowErrorsOpt,
    baseline: Path | None = typer.Option(None, "--baseline", help="A previous `eval schema --out` file: compare "
                                         "per-field failure rates with it and exit 1 on a regression."),
    tolerance: float = typer.Option(0.0, "--tolerance", min=0.0, help="With --baseline: how much a field's "
                                    "failure rate (failures per call of the tool) may rise."),
) -> None:
    """Run every call the model generates for the cases through the production validator, per field."""
    from ..evals._model_errors import TooManyModelErrors
    from ..evals._schema import check_report
    from ..evals._selection import run_selection

    cases = _load_case_set(cases_path, None, today)
    old_reports = _read_baseline(baseline)
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
        reports.append({**check_report(report, ts).to_dict(), "label": lb,
                        "schema_versions": {t.name: t.schema_version for t in ts}})
        _show(reports[-1], as_json)
        if old_reports is not None:
            _against_baseline(reports[-1], old_reports, tolerance, as_json)
    _write_outputs(reports, out, html_out, as_json)
    if any(d["regressed"] for r in reports for d in r.get("baseline", {}).get("fields", ())):
        raise typer.Exit(1)


def _read_baseline(path: Path | None) -> list[dict[str, Any]] | None:
    from ..evals._report import read_json

    if path is None:
        return None
    try:
        return read_json(path)
    except (OSError, ValueError) as exc:
        raise fail(f"--baseline {path}: {exc}") from None


def _against_baseline(report: dict[str, Any], old_reports: list[dict[str, Any]], tolerance: float,
                      as_json: bool) -> None:
    """Per-field failure rates now against the baseline's, kept in the report and shown as a table."""
    from ..evals._schema_baseline import baseline_for, compare_fields

    try:
        old = baseline_for(old_reports, report["label"])
    except ValueError as exc:
        raise fail(str(exc)) from None
    deltas = compare_fields(old, report, tolerance=tolerance)
    report["baseline"] = {"tolerance": tolerance, "fields": [d.to_dict() for d in deltas]}
    if as_json:
        return
    print_table(("tool", "field", "version", "baseline", "now", "verdict"), (
        (d.tool, d.field, f"{(d.old_version or '-')[:8]} -> {(d.new_version or '-')[:8]}",
         f"{d.old_failures}/{d.old_calls}", f"{d.new_failures}/{d.new_calls}",
         "REGRESSION" if d.regressed else "ok") for d in deltas), title="per-field failures against the baseline")
    regressions = sum(d.regressed for d in deltas)
    say(f"{regressions} field(s) regressed against the baseline" if regressions else "no field regressed")


@eval_app.command("recovery")
def recovery_cmd(
    failures: str = typer.Argument(..., help="MODULE:ATTR of a sequence of SeededFailure."),
    model: str = Model,
    toolset: str = typer.Option(..., "--toolset", help="MODULE:ATTR of the Toolset the model sees."),
    label: str = typer.Option("default", "--label", "-l", help="A name for this toolset in the report."),
    error_format: str = typer.Option("envelope", "--error-format",
                                     help="envelope (toolproof) or opaque (an unwrapped 'Error 500')."),
    runs: int = typer.Option(1, "--runs", "-k", min=1, help="Runs per seeded failure."),
    system_prompt: str | None = typer.Option(None, "--system-prompt", help="A system message sent before each seeded "
                                             "failure's message (default: none)."),
    concurrency: int = ConcOpt,
    base_url: str | None = BaseUrl,
    api_key: str | None = ApiKey,
    record: Path | None = RecordOpt,
    out: OutOpt = None,
    html_out: Path | None = HtmlOpt,
    as_json: JsonOpt = False,
    max_model_errors: float = MaxErrorsOpt,
    allow_errors: bool = AllowErrorsOpt,
) -> None:
    """Seed failures, run the fixed loop, and score the model's next step per error class."""
    from ..evals._model_errors import TooManyModelErrors
    from ..evals._recovery import SeededFailure, run_recovery

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
    _show(data, as_json)
    _write_outputs([data], out, html_out, as_json)


@eval_app.command("bfcl")
def bfcl_cmd(
    category: list[str] = typer.Option(..., "--category", help="BFCL v4 category (repeatable; all for every "
                                                                "scored one)."),
    model: str | None = typer.Option(None, "--model", "-m", help=_MODEL_HELP),
    outputs: Path | None = typer.Option(None, "--outputs", help="Scorer-only: a JSONL file of model outputs."),
    root: Path | None = typer.Option(None, "--root", help="The bfcl/v4 folder (default: $TOOLPROOF_CORPORA/bfcl/v4, "
                                     "else a source checkout's tests/data/corpora/bfcl/v4)."),
    first: int | None = typer.Option(None, "--first", min=1, help="Only the first N entries of each category."),
    agreement: bool = typer.Option(False, "--agreement",
                                   help="Judge ground truths and perturbations with our scorer and BFCL's "
                                        "own checker (needs bfcl-eval)."),
    concurrency: int = ConcOpt,
    base_url: str | None = BaseUrl,
    api_key: str | None = ApiKey,
    record: Path | None = RecordOpt,
    out: OutOpt = None,
    html_out: Path | None = HtmlOpt,
    as_json: JsonOpt = False,
    max_model_errors: float = MaxErrorsOpt,
    allow_errors: bool = AllowErrorsOpt,
) -> None:
    """Berkeley Function Calling Leaderboard cases through the selection scorer."""
    from ..evals import _bfcl as bfcl
    from ..evals._model_errors import TooManyModelErrors

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
        entries = [e for c in cats for e in bfcl.load_category(c, root)[:first]]
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
    _show(data, as_json)
    _write_outputs([data], out, html_out, as_json)


def _agreement(categories: list[str], root: Path | None) -> None:
    from ..evals import _bfcl as bfcl
    from ..evals._reference import agreement

    try:
        rows = agreement([c for c in categories if c in bfcl.AST_CATEGORIES], root)
    except ImportError as exc:
        raise fail(f"the agreement run needs bfcl-eval (pip install --no-deps bfcl-eval): {exc}") from None
    print_table(("category", "ground truths", "agree", "pass", "perturbations", "agree", "as intended"),
                ((r.category, r.ground_truths, r.ground_truth_agree, r.ground_truth_pass, r.perturbations,
                  r.perturbation_agree, r.perturbation_as_intended) for r in rows),
                title="agreement with BFCL's ast_checker")
    for r in rows:
        for d in r.disagreements:
            say(f"  disagree: {d.entry_id} {d.kind} ours={d.ours} bfcl={d.reference} {d.detail}")


@eval_app.command("compare")
def compare_cmd(
    base: Path = typer.Argument(..., help="The baseline JSON result."),
    new: Path = typer.Argument(..., help="The new JSON result."),
    threshold: float = typer.Option(0.02, "--threshold", min=0.0,
                                    help="A metric worse by more than this (absolute) is a regression."),
    as_json: JsonOpt = False,
) -> None:
    """Print the deltas between two results; exit 1 on a regression beyond the threshold (for CI).

    Every regressed metric is named in plain text (a CI log shows it without colour)."""
    from ..evals._report import compare, print_compare, read_json

    try:
        deltas = compare(read_json(base), read_json(new))
    except (OSError, ValueError, KeyError) as exc:
        raise fail(f"cannot compare: {exc}") from None
    if not deltas:
        raise fail("the two results share no metric")
    regressed = [d for d in deltas if d.regressed(threshold)]
    if as_json:
        print_json_lines({"metric": d.metric, "base": d.base, "new": d.new, "change": d.change,
                          "higher_is_better": d.higher_is_better, "regressed": d.regressed(threshold)}
                         for d in deltas)
    else:
        print_compare(deltas, threshold, console)
        for d in regressed:
            say(f"REGRESSED {d.metric}: {d.base:.3f} -> {d.new:.3f} ({d.change:+.3f}; "
                f"{'higher' if d.higher_is_better else 'lower'} is better, threshold {threshold:g})")
        say(f"{len(regressed)} of {len(deltas)} metrics regressed beyond {threshold:g}")
    if regressed:
        raise typer.Exit(1)


@eval_app.command("retrieval")
def retrieval(
    corpus: Annotated[Path, typer.Option(help="Tools, one JSON object a line (LiveMCPBench, StableToolBench, "
                                               "API-Bank, MCP tools/list captures).", exists=True, dir_okay=False)],
    queries: Annotated[Path, typer.Option(help="Queries with gold_tool_ids, one JSON object a line.",
                                          exists=True, dir_okay=False)],
    retriever: Annotated[str, typer.Option(help="default (the library's default search: BM25 + the static "
                                                 "model), bm25, static, embeddings, hybrid, or auto.")] = "default",
    fusion: Annotated[str | None, typer.Option(help="How default and hybrid fuse: lift, gated, linear, weighted, "
                                                     "rrf or scores (default: the library's).")] = None,
    pool_size: Annotated[int, typer.Option(help="Hide the corpus among distractors up to this many tools.")] = 0,
    distractors: Annotated[list[Path] | None, typer.Option(help="Distractor files or folders (repeatable).")] = None,
    history: Annotated[bool, typer.Option(help="Add usage history learned from the other queries.")] = False,
    prerequisites: Annotated[bool, typer.Option(help="Infer prerequisites from shared handles.")] = True,
    group_weight: Annotated[float, typer.Option(help="Share of a tool's server (group) score added to its own "
                                                     "(0: off).")] = 0.5,
    seed: Annotated[int, typer.Option(help="Seed of the distractor draw.")] = 0,
    model_dir: Annotated[str | None, typer.Option(help="Embedding model: a sentence-transformers folder, "
                                                        "all-mpnet-base-v2 (fetched) or a Hugging Face repo id "
                                                        "(default: all-MiniLM-L6-v2).")] = None,
    cache_dir: Annotated[str | None, typer.Option(help="Keep tool embeddings here between runs.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Measure how often the tools a task needs survive the cut, and how fast the search is."""
    from ..retrieval._evaluate import KS, evaluate_files
    from ..retrieval._hybrid import DEFAULT_FUSION, FUSIONS
    from ..retrieval._index import RETRIEVERS

    fusion = fusion or DEFAULT_FUSION
    if retriever not in RETRIEVERS:
        raise fail(f"--retriever must be one of {', '.join(RETRIEVERS)}, not {retriever!r}")
    if fusion not in FUSIONS:
        raise fail(f"--fusion must be one of {', '.join(FUSIONS)}, not {fusion!r}")
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console, transient=True, disable=json_out)
    with progress:
        task = progress.add_task(f"indexing {corpus.name}", total=None)
        try:
            run = evaluate_files(
                corpus, queries, retriever=retriever, fusion=fusion, pool_size=pool_size, distractors=distractors or (),
                seed=seed, history=history, prerequisites=prerequisites, group_weight=group_weight,
                model_dir=model_dir, cache_dir=cache_dir,
                on_start=lambda n: progress.update(task, total=n, description=f"searching ({retriever})"),
                on_query=lambda _: progress.advance(task),
            )
        except (ValueError, ImportError, OSError) as exc:
            raise fail(str(exc)) from None
    fused = run.retriever in ("hybrid", "bm25+static")
    ran = run.retriever + (f" ({fusion})" if fused else "")
    data = {"corpus": str(corpus), "retriever": run.retriever, "fusion": fusion if fused else None,
            "pool_size": run.pool_size, "history": history,
            "build_s": round(run.build_s, 3), **run.report.as_dict()}
    if json_out:
        print_json_lines([data])
        return
    title = f"{corpus.name}: {run.pool_size} tools, {run.report.queries} queries, {ran}"
    print_table(("k", "recall@k", "all@k", "any@k"),
                ((k, f"{run.report.recall[k]:.3f}", f"{run.report.all_at[k]:.3f}", f"{run.report.any_at[k]:.3f}")
                 for k in KS), title=title + (" + history" if history else ""))
    say(f"MRR {run.report.mrr:.3f}  latency p50 {run.report.latency_p50_ms:.3f} ms  "
        f"p95 {run.report.latency_p95_ms:.3f} ms  index build {run.build_s:.2f} s")
