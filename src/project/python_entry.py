"""The module `lens build` hands componentize-py: the project's `app`, and what it imports lazily.

componentize-py keeps what is imported while it builds (its snapshot of the interpreter) and
nothing else: a module first imported inside a function at run time is not in the component
(`ModuleNotFoundError` although it was installed). So, before the snapshot, this imports every
module that the project's code and the packages it runs (anything not in the standard library)
import inside a function body, and what those import in turn, until nothing new comes. A lazy
import of the project's own files (not its dependencies, where optional imports are the rule)
that cannot be imported and is not inside a `try` catching `ImportError` fails the build,
naming the file, the line and the module.

Written into build/ by `lens build` (a copy of the Lens CLI's src/project/python_entry.py).
"""

import ast
import importlib
import os
import sys

import app

# The classes componentize-py looks for, by the world's exports (those app defines).
for _name in (
    "SpanExporter",
    "MetricExporter",
    "LogExporter",
    "SpanProcessor",
    "MetricProcessor",
    "LogProcessor",
):
    if hasattr(app, _name):
        globals()[_name] = getattr(app, _name)

# Bounds on the walk: sources bigger than this are not parsed, and at most this many modules
# are imported (a runaway closure fails loudly rather than bloating the component).
_MAX_SOURCE_BYTES = 4 << 20
_MAX_IMPORTED = 4000

_PROJECT = os.path.dirname(os.path.abspath(app.__file__))


# The Lens SDK and the packages it bundles (OpenTelemetry's API and SDK) are not followed: what
# they need is imported at their top; following their optional imports would only add weight.
def _root(name):
    """The folder on the path that module `name` was found in."""
    path = os.path.abspath(sys.modules[name].__file__)
    for _ in range(name.count(".") + (path.endswith("__init__.py"))):
        path = os.path.dirname(path)
    return os.path.dirname(path) + os.sep


_SDK_ROOTS = tuple(
    _root(n)
    for n in ("lens_exporter_sdk", "opentelemetry.sdk.trace", "typing_extensions")
    if getattr(sys.modules.get(n), "__file__", None)
)
_CATCHES_IMPORT_ERROR = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


def _catches_import_error(handler):
    names = []
    if handler.type is None:
        return True
    for node in ast.walk(handler.type):
        if isinstance(node, ast.Name):
            names.append(node.id)
        elif isinstance(node, ast.Attribute):
            names.append(node.attr)
    return any(n in _CATCHES_IMPORT_ERROR for n in names)


def _type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _LazyImports(ast.NodeVisitor):
    """Collects `(module, line, guarded)` for the imports inside function bodies."""

    def __init__(self, package):
        self.package = package
        self.depth = 0
        self.guarded = 0
        self.found = []

    def _function(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_If(self, node):
        if _type_checking(node.test):
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Try(self, node):
        guarded = any(_catches_import_error(h) for h in node.handlers)
        self.guarded += guarded
        for child in node.body:
            self.visit(child)
        self.guarded -= guarded
        for child in node.handlers + node.orelse + node.finalbody:
            self.visit(child)

    visit_TryStar = visit_Try

    def _add(self, name, line):
        if self.depth and name:
            self.found.append((name, line, self.guarded > 0))

    def visit_Import(self, node):
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node):
        base = node.module or ""
        if node.level:
            parts = self.package.split(".") if self.package else []
            parts = parts[: max(0, len(parts) - (node.level - 1))]
            base = ".".join([*parts, base] if base else parts)
        self._add(base, node.lineno)
        for alias in node.names:
            # `from package import submodule` imports a module too.
            if alias.name != "*":
                self._add(f"{base}.{alias.name}" if base else alias.name, node.lineno)

    def visit_Call(self, node):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if (
            name in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            self._add(node.args[0].value, node.lineno)
        self.generic_visit(node)


def _source(name, module):
    path = getattr(module, "__file__", None)
    # The standard library's lazy imports are not followed (its files live in more than one
    # place, so it is known by name).
    if not path or not path.endswith(".py") or name.partition(".")[0] in sys.stdlib_module_names:
        return None
    if os.path.abspath(path).startswith(_SDK_ROOTS):
        return None
    try:
        if os.path.getsize(path) > _MAX_SOURCE_BYTES:
            return None
        with open(path, "rb") as f:
            return path, f.read()
    except OSError:
        return None


def _lazy_imports_of(name, module):
    found = _source(name, module)
    if found is None:
        return None, []
    path, text = found
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError):
        return path, []
    is_package = hasattr(module, "__path__")
    package = name if is_package else name.rpartition(".")[0]
    collector = _LazyImports(package)
    collector.visit(tree)
    return path, collector.found


def _is_attribute(target):
    """Whether `target` (`package.name`) names something `package` defines, not a module."""
    parent, _, last = target.rpartition(".")
    return bool(parent) and parent in sys.modules and hasattr(sys.modules[parent], last)


def _bundle_lazy_imports():
    seen = set()
    imported = 0
    while True:
        pending = [(n, m) for n, m in list(sys.modules.items()) if n not in seen and m]
        if not pending:
            return
        for name, module in pending:
            seen.add(name)
            path, found = _lazy_imports_of(name, module)
            # Only the project's own files must import: a dependency's lazy import that fails
            # is most often an optional one.
            own = path is not None and path.startswith(_PROJECT + os.sep)
            for target, line, guarded in found:
                if target in sys.modules:
                    continue
                try:
                    importlib.import_module(target)
                    imported += 1
                except ImportError as e:
                    if own and not guarded and not _is_attribute(target):
                        where = os.path.relpath(path, _PROJECT)
                        raise ImportError(
                            f"lens build: {where} line {line} imports `{target}` inside a "
                            f"function, and it cannot be imported now ({e}): componentize-py "
                            "bundles only what is imported while it builds. Add its package "
                            f"to requirements.txt, or import it at the top of {where} (inside "
                            "a try that catches ImportError if it is optional)"
                        ) from None
                except Exception:  # noqa: BLE001 - a module failing at import is its own business
                    pass
                if imported > _MAX_IMPORTED:
                    raise ImportError(
                        f"lens build: importing what the code imports lazily passed "
                        f"{_MAX_IMPORTED} modules; import what the exporter needs at the top "
                        "of app.py instead"
                    )


_bundle_lazy_imports()
