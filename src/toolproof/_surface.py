"""Where a public value prints: under the package that exports it, not the underscore module defining it.

One rule for the root and every subpackage (as httpx shows `httpx.Client`): `<class 'toolproof.mcp.Gateway'>`,
never `toolproof.mcp._gateway.Gateway`, while `typing.get_type_hints` keeps working on the moved class.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Mapping

__all__ = ["publish", "publish_all"]


def publish(value: object, home: str) -> None:
    """Show `value` under `home`. A class's string annotations are evaluated in the module its `__module__`
    names, so they are resolved here, in their own module, before the name moves."""
    own = inspect.get_annotations(value) if isinstance(value, type) else None
    if own:
        try:
            hints = typing.get_type_hints(value, include_extras=True)
        except NameError:  # a name its own module cannot resolve either: tests/test_public_api.py says which
            pass
        else:
            value.__annotations__ = {name: hints[name] for name in own}
    value.__module__ = home


def publish_all(namespace: Mapping[str, object]) -> None:
    """Publish each class and function of a package's `__all__` that still shows a private module: one of its
    own, or another package's that does not export it (a name another package exports keeps that home)."""
    home = namespace["__name__"]
    names = namespace["__all__"]
    assert isinstance(home, str) and isinstance(names, list)
    for name in names:
        value = namespace.get(name)  # a lazily imported name is published where it is imported
        module = getattr(value, "__module__", None)
        if (inspect.isclass(value) or inspect.isfunction(value)) and isinstance(module, str) \
                and module.startswith("toolproof.") and any(part.startswith("_") for part in module.split(".")):
            publish(value, home)
