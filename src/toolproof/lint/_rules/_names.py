"""Name rules (TP1xx): a name states one job as verb_noun, carries no version, and every client accepts it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from .._config import LintConfig
from .._model import ToolDef
from .._text import GENERIC_NAMES, name_words, verb_position
from ._base import Hit, Rule

_SNAKE: Final = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
#: What MCP accepts as a tool name: 1 to 128 of A-Z a-z 0-9 _ - . (`\Z`, not `$`: `$` also matches before a
#: final newline, and "get_order\n" is not a valid name).
_MCP_NAME: Final = re.compile(r"^[A-Za-z0-9_.-]{1,128}\Z")
_MCP_ACCEPTS: Final = "1 to 128 of A-Z a-z 0-9 _ - ."
_PORTABLE: Final = re.compile(r"^[A-Za-z0-9_-]+\Z")
# A version or age at the end: _v2, -v1.1, V2 (camelCase), _old, _legacy, _2. Not `_latest`/`_new` (usually
# meaning: the latest reading), not `_backup` (an object: create_backup), not digits glued to a word (brc20).
_VERSION: Final = re.compile(r"(?:[_\-.][vV]\d+(?:[._]\d+)*|(?<=[a-z])V\d+|[_\-](?:old|legacy|deprecated|tmp|temp)|"
                             r"[_\-]\d+)$")
_VERSION_OK: Final = re.compile(r"(?:ipv[46]|oauth2|s3|ec2|base64|sha\d+|md5|utf8|h264|mp[34]|web3|l2|i18n|k8s|"
                                r"2fa|3d|4k|p2p|b2b|e2e|gpt\d*|llama\d*|top\d+|x\d+)$", re.IGNORECASE)


def _name(tool: ToolDef) -> str | None:
    return tool.name if isinstance(tool.name, str) else None


def check_case(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    name = _name(tool)
    if name and _MCP_NAME.match(name) and not _SNAKE.match(name):
        snake = "_".join(name_words(name)) or "verb_noun"
        yield Hit(tool, tool.name_pointer, f"name {name!r} is not snake_case", f"Rename it to {snake!r}.")


def check_verb_noun(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    name = _name(tool)
    if not name:
        return
    words = name_words(name.rsplit(".", 1)[-1])
    if not words or " ".join(words) in GENERIC_NAMES or "_".join(words) in GENERIC_NAMES:
        return  # name-generic says it better
    # A verb first, or second after one namespace word (`github_create_issue`, `browser_navigate`).
    verb_at = verb_position(words)
    if verb_at is None:
        yield Hit(tool, tool.name_pointer, f"name {name!r} does not start with a verb; the model cannot tell "
                  "what the tool does to what", f"Name the action and the thing, e.g. 'get_{'_'.join(words)}'.")
    elif verb_at == 0 and len(words) == 1:
        yield Hit(tool, tool.name_pointer, f"name {name!r} is a verb with no object: act on what?",
                  f"Add the thing it acts on: '{words[verb_at]}_<thing>'.")


def check_version(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    name = _name(tool)
    if not name:
        return
    match = _VERSION.search(name)
    if match and match.start() > 0 and not _VERSION_OK.search(name):
        yield Hit(tool, tool.name_pointer, f"name {name!r} carries a version or age suffix "
                  f"({match.group(0).lstrip('_-.')!r}); beside the old tool the model cannot tell which is current",
                  "Remove the old tool and give the new one the plain name; put what changed in the description.")


def check_generic(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    name = _name(tool)
    if not name:
        return
    words = name_words(name)
    if words and "_".join(words) in GENERIC_NAMES:
        yield Hit(tool, tool.name_pointer, f"name {name!r} is generic: it could mean almost anything",
                  f"Name the one job instead of {name!r}: the verb and the thing it acts on "
                  f"('{words[0]}_<thing>').")


def check_invalid(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    if not isinstance(tool.name, str) or not tool.name:
        yield Hit(tool, tool.name_pointer, f"the tool has no name (got {tool.name!r})", "Give it a verb_noun name.")
    elif not _MCP_NAME.match(tool.name):
        yield Hit(tool, tool.name_pointer, f"name {tool.name!r} has characters or a length that MCP clients "
                  f"reject ({len(tool.name)} characters; MCP accepts {_MCP_ACCEPTS})", f"Use {_MCP_ACCEPTS}")


def check_portable(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    name = _name(tool)
    if not name or not _MCP_NAME.match(name):
        return
    limit = int(config.threshold("max-name-length"))
    if not _PORTABLE.match(name):
        yield Hit(tool, tool.name_pointer, f"name {name!r} contains '.', which the OpenAI and Anthropic APIs "
                  "reject (^[a-zA-Z0-9_-]{1,64}$)", f"Use {'_'.join(name_words(name))!r}.")
    elif len(name) > limit:
        yield Hit(tool, tool.name_pointer, f"name {name!r} is {len(name)} characters; OpenAI and Anthropic "
                  f"accept at most {limit}", "Shorten it.")


RULES: Final = (
    Rule("TP101", "name-not-snake-case", "advice", "The name is not snake_case.",
         "One naming style across tools lets the model (and people) read names as phrases.",
         "Rename to snake_case.", tool_check=check_case),
    Rule("TP102", "name-not-verb-noun", "warning", "The name does not state an action and its object.",
         "The model picks tools by name first; a noun alone ('rates') or a bare verb ('cancel') hides the job.",
         "Name it verb_noun: the action, then the thing it acts on.", tool_check=check_verb_noun),
    Rule("TP103", "name-version-suffix", "warning", "The name ends in a version or age (_v2, _new, _old, 2).",
         "Beside the unversioned tool the model cannot tell which one is current, and may call both.",
         "Retire the old tool; give the new one the plain name.", tool_check=check_version),
    Rule("TP104", "name-generic", "warning", "The name is generic (search, get_data, run, execute, process, ...).",
         "A generic name matches every request a little, so it gets picked for the wrong ones.",
         "Name the one job as verb_noun.", tool_check=check_generic),
    Rule("TP105", "name-invalid", "error", "The name is missing or has characters or a length MCP rejects.",
         "Clients refuse or silently rename such tools.", f"Use {_MCP_ACCEPTS}",
         tool_check=check_invalid),
    Rule("TP106", "name-not-portable", "warning", "The name is valid MCP but OpenAI or Anthropic reject it.",
         "The same toolset exported to a model API fails at request time ('.' or more than 64 characters).",
         "Use A-Z a-z 0-9 _ - only, at most 64 characters.", tool_check=check_portable),
)
