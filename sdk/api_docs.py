"""Renders the Python and JavaScript guest SDKs' API docs into docs/ from their sources: the
Python package's docstrings (read with `ast`, nothing imported) and the JavaScript module's
`/** … */` comments on its exports. The Rust SDK's are rustdoc (`cargo doc` in sdk/rust).

    python3 sdk/api_docs.py           # writes docs/sdk-python.md and docs/sdk-js.md
    python3 sdk/api_docs.py --check   # exits 1 when either is out of date (sdk/test.sh)
"""

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADER = "<!-- Written by `python3 sdk/api_docs.py` from {source}: edit the source, not this. -->\n"


def fenced(doc, language):
    """A docstring's text, its `::` blocks (reStructuredText literal blocks) fenced."""
    out, block = [], False
    for line in doc.splitlines():
        if block and line.strip() and not line.startswith("    "):
            while not out[-1].strip():
                out.pop()
            out.extend(["```", ""])
            block = False
        if block:
            if line.strip() or out[-1] != f"```{language}":
                out.append(line[4:])
            continue
        if line.rstrip().endswith("::"):
            out.append(line.rstrip()[:-1])
            out.append("")
            out.append(f"```{language}")
            block = True
            continue
        out.append(line)
    if block:
        while out and not out[-1].strip():
            out.pop()
        out.append("```")
    return "\n".join(out).strip() + "\n"


def signature(node):
    args = ast.unparse(node.args)
    return f"{node.name}({args})"


def python():
    source = ROOT / "sdk/python/lens_exporter_sdk/__init__.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    public = next(
        ast.literal_eval(n.value)
        for n in tree.body
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "__all__"
    )
    parts = [
        HEADER.format(source="sdk/python/lens_exporter_sdk/__init__.py"),
        "# Python guest SDK: `lens_exporter_sdk`\n",
        fenced(ast.get_docstring(tree), "python"),
    ]
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) or node.name not in public:
            continue
        doc = ast.get_docstring(node) or ""
        if isinstance(node, ast.ClassDef):
            init = next(
                (n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"),
                None,
            )
            bases = ", ".join(ast.unparse(b) for b in node.bases)
            title = f"class `{node.name}({bases})`"
            if init:
                title += f"\n\n`{node.name}({ast.unparse(init.args).removeprefix('self, ')})`"
        else:
            title = f"`{signature(node)}`"
        parts.append(f"## {title}\n\n{fenced(doc, 'python')}")
    return "\n".join(parts)


EXPORT = re.compile(r"/\*\*(.*?)\*/\s*export (?:const|class|async function|function) (\w+)", re.S)


def js():
    source = ROOT / "sdk/js/lens-exporter-sdk.js"
    text = source.read_text(encoding="utf-8")
    head = []
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        head.append(line[3:] if line.startswith("// ") else line[2:])
    parts = [
        HEADER.format(source="sdk/js/lens-exporter-sdk.js"),
        "# JavaScript guest SDK: `lens-exporter-sdk`\n",
        "\n".join(head).strip() + "\n",
    ]
    constants = re.findall(r"^export const (\w+) = Object\.freeze\((\{.*?\})\);", text, re.M)
    parts.append("## Constants\n")
    parts.extend(f"- `{name}`: `{value}`" for name, value in constants)
    parts.append("")
    for comment, name in EXPORT.findall(text):
        lines = [re.sub(r"^\s*\* ?", "", line) for line in comment.strip().splitlines()]
        parts.append(f"## `{name}`\n\n" + "\n".join(lines).strip() + "\n")
    return "\n".join(parts)


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for name, render in (("sdk-python.md", python), ("sdk-js.md", js)):
        path = ROOT / "docs" / name
        text = render()
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path.relative_to(ROOT)))
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"out of date: {', '.join(stale)}; run `python3 sdk/api_docs.py`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
