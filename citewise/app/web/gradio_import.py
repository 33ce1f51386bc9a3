"""Import Gradio without rewriting its own type stubs: 1.1 s of `citewise serve`'s start-up.

Every component class Gradio defines passes through its metaclass, which reads the class's source file,
parses it with `ast` and rewrites the matching `.pyi` stub beside it in site-packages
(`gradio.component_meta.create_or_modify_pyi`): a step for Gradio's own developers, whose installed stubs
already match, so for a user it reads and parses the same files 81 times and writes nothing. On this
machine `import gradio` takes 2.4 s with it and 1.4 s without (bench/startup.py measures `serve`).

While `import gradio` runs here, a finder on `sys.meta_path` loads `gradio.component_meta` as usual and then
replaces that one function with one that does nothing; the finder is removed after the import. Nothing else
in Gradio changes. If Gradio was already imported, or a later Gradio moves or renames the function, the
import is the plain one (slower, never wrong).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

STUB_MODULE = "gradio.component_meta"
STUB_WRITER = "create_or_modify_pyi"


def _no_stubs(*_args: object, **_kwargs: object) -> None:
    """Leave Gradio's installed `.pyi` stubs as they are."""


class _StublessFinder(importlib.abc.MetaPathFinder):
    """Finds `gradio.component_meta` as Python would, and drops its stub writer once it has run."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != STUB_MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run_module(module)
            if callable(getattr(module, STUB_WRITER, None)):
                setattr(module, STUB_WRITER, _no_stubs)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def import_gradio() -> ModuleType:
    """`import gradio`, without the stub rewriting; a no-op wrapper when Gradio is already imported."""
    if "gradio" in sys.modules:
        return sys.modules["gradio"]
    finder = _StublessFinder()
    sys.meta_path.insert(0, finder)
    try:
        import gradio
    finally:
        sys.meta_path.remove(finder)
    return gradio
