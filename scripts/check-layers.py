#!/usr/bin/env python3
"""The house's layers: every module imports only modules on lower layers (`make test`).

ARCHITECTURE.md's "Layers" section lists, per crate, its modules by layer, lowest first:

    shared/src
      0: config decimal headers
      1: json key
      ...

A module is a file (`lib.rs` is the crate root and is not checked; `a.rs` and `a/mod.rs` are
`a`; `a/b.rs` is `a::b`). `a::*` places every child of `a` that the list does not name
elsewhere (each sender profile's module, so a new one needs no line here). A dependency is any path to another module of the crate: `use
crate::...`, `use super::...`, `crate::x::Y` or `super::Y` in code, and `name::Y` where `name`
is a module brought in by `use` or a child declared with `mod name;`. Comments, string literals
and `#[cfg(test)]` items (tests may use what they like) are left out. The check fails when a
module uses one on its own layer or above (which also rules out every circle), when a module is
not in the list (place it), or when the list names a module that does not exist.

    python3 scripts/check-layers.py             check every crate in ARCHITECTURE.md
    python3 scripts/check-layers.py --edges     also print each crate's dependencies
    python3 scripts/check-layers.py --self-test the check on small crates of its own
"""
import os
import re
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def blank(text):
    return "".join(c if c == "\n" else " " for c in text)


def strip(src):
    """`src` with comments, strings and char literals blanked (offsets and lines kept)."""
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                depth += 1 if src.startswith("/*", j) else -1 if src.startswith("*/", j) else 0
                j += 2 if src.startswith(("/*", "*/"), j) else 1
        elif (m := re.match(r'b?r(#*)"', src[i:i + 40])) and not (i and (src[i - 1].isalnum() or src[i - 1] == "_")):
            j = src.find('"' + m.group(1), i + m.end())
            j = n if j < 0 else j + 1 + len(m.group(1))
        elif src[i] == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j += 1
        elif src[i] == "'" and (m := re.match(r"'(\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^'\\])'", src[i:i + 16])):
            j = i + m.end()
        else:
            out.append(src[i])
            i += 1
            continue
        out.append(blank(src[i:j]))
        i = j
    return "".join(out)


def drop_test_items(text):
    """`text` without the items behind `#[cfg(test)]` (or `all(test, ...)`: only what tests
    build; `any(test, feature = "...")` ships in a build with the feature, so it is checked), and
    the names of the test-only modules declared as `#[cfg(test)] mod x;`."""
    test_mods, pos = set(), 0
    while m := re.compile(r"#\[cfg\(([^\]]*)\)\]").search(text, pos):
        cfg = m.group(1).strip()
        test_only = cfg == "test" or (cfg.startswith("all(") and re.search(r"(?<!not\()\btest\b", cfg))
        if not test_only or re.search(r"not\(\s*test\s*\)", cfg):
            pos = m.end()
            continue
        semi, brace = text.find(";", m.end()), text.find("{", m.end())
        if semi >= 0 and (brace < 0 or semi < brace):
            end = semi
            if d := re.match(r"\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*$", text[m.end():semi]):
                test_mods.add(d.group(1))
        else:
            depth, end = 0, brace
            for end in range(brace, len(text)):
                depth += {"{": 1, "}": -1}.get(text[end], 0)
                if depth == 0:
                    break
        text = text[:m.start()] + blank(text[m.start():end + 1]) + text[end + 1:]
        pos = m.start()
    return text, test_mods


def modules(src):
    """{module: text} for a crate's src folder, test-only files left out."""
    texts, test_only = {}, set()
    for folder, _, names in os.walk(src):
        for name in names:
            rel = os.path.relpath(os.path.join(folder, name), src)
            if not name.endswith(".rs") or (rel == "main.rs" and os.path.exists(os.path.join(src, "lib.rs"))):
                continue
            parts = rel[:-3].split(os.sep)
            parts = parts[:-1] if parts[-1] == "mod" else parts
            module = "crate" if parts in (["lib"], ["main"]) else "::".join(parts)
            with open(os.path.join(src, rel), encoding="utf-8") as f:
                text, tests = drop_test_items(strip(f.read()))
            texts[module] = text
            test_only |= {name if module == "crate" else f"{module}::{name}" for name in tests}
    return {m: t for m, t in texts.items() if not any(m == t_ or m.startswith(t_ + "::") for t_ in test_only)}


def use_leaves(tree, prefix=()):
    """Each path a `use` tree names, as a tuple of segments."""
    tree = re.sub(r"\s*([{},]|::)\s*", r"\1", tree.strip()).removeprefix("::")
    if m := re.match(r"^((?:[\w$]+::)*)\{(.*)\}$", tree, re.S):
        pre, depth, part, parts = tuple(s for s in m.group(1).split("::") if s), 0, "", []
        for c in m.group(2) + ",":
            depth += {"{": 1, "}": -1}.get(c, 0)
            if c == "," and depth == 0:
                parts.append(part)
                part = ""
            else:
                part += c
        for sub in filter(None, map(str.strip, parts)):
            yield from use_leaves(sub, prefix + pre)
    elif m := re.match(r"^((?:[\w$]+::)*(?:[\w$]+|\*))(?:\s+as\s+(\w+))?$", tree):
        yield prefix + tuple(m.group(1).split("::")), m.group(2)


USE = re.compile(r"(?<![\w$])(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]*);")
PATH = re.compile(r"(?<![\w$:])(\$?crate|super|self)((?:\s*::\s*(?:super|[A-Za-z_]\w*))+)")


def dependencies(texts):
    """{module: {module it uses: {names}}}."""
    known = set(texts)
    edges = {m: {} for m in texts}

    def descend(base, segs):
        path = list(base)
        while segs and "::".join(path + [segs[0]]) in known:
            path.append(segs.pop(0))
        return "::".join(path) or "crate", segs[0] if segs and segs[0] != "self" else "(module)"

    def resolve(here, segs):
        head, segs = segs[0].lstrip("$"), list(segs[1:])
        base = [] if head == "crate" or here == "crate" else here.split("::")
        if head == "super":
            base = base[:-1]
        while segs and segs[0] == "super":
            base, segs = base[:-1], segs[1:]
        return descend([] if head == "crate" else base, segs)

    for here, text in texts.items():
        aliases = {}
        for child in re.findall(r"(?<![\w$])(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text):
            full = child if here == "crate" else f"{here}::{child}"
            if full in known:
                aliases[child] = full.split("::")
        found = []
        for m in USE.finditer(text):
            for segs, alias in use_leaves(m.group(1)):
                if segs[0].lstrip("$") in ("crate", "super", "self"):
                    target = resolve(here, segs)
                elif segs[0] in aliases:
                    target = descend(aliases[segs[0]], list(segs[1:]))
                else:
                    continue
                found.append(target)
                if target[1] == "(module)":
                    aliases[alias or (segs[-1] if segs[-1] != "self" else segs[-2])] = (
                        [] if target[0] == "crate" else target[0].split("::"))
        code = USE.sub(lambda m: blank(m.group(0)), text)
        for m in PATH.finditer(code):
            found.append(resolve(here, [m.group(1)] + [s.strip() for s in m.group(2).split("::") if s.strip()]))
        if aliases:
            names = "|".join(map(re.escape, aliases))
            for m in re.finditer(rf"(?<![\w$:])({names})((?:\s*::\s*[A-Za-z_]\w*)+)", code):
                found.append(descend(aliases[m.group(1)], [s.strip() for s in m.group(2).split("::") if s.strip()]))
        for target, name in found:
            if target != here:
                edges[here].setdefault(target, set()).add(name)
    return edges


def declared_layers(architecture):
    """{crate src folder: {module: layer}} from the fenced blocks under `## Layers`."""
    text = architecture.split("\n## Layers", 1)
    blocks = re.findall(r"```text\n(.*?)```", text[1].split("\n## ", 1)[0], re.S) if len(text) == 2 else []
    if not blocks:
        sys.exit("check-layers: ARCHITECTURE.md has no `## Layers` section with a fenced block")
    crates, current = {}, None
    for line in "".join(blocks).splitlines():
        if m := re.match(r"^(\S+/src)\s*$", line):
            current = crates.setdefault(m.group(1), {})
        elif m := re.match(r"^\s+(\d+):\s*(.*)$", line):
            for module in m.group(2).split():
                current[module] = int(m.group(1))
        elif line.strip():
            sys.exit(f"check-layers: unreadable line in ARCHITECTURE.md's layers: {line!r}")
    return crates


def check(src, layers, show_edges=False):
    """The problems in crate `src` against `layers` ({module: layer})."""
    texts = modules(src)
    edges = dependencies(texts)
    problems = []
    layers = dict(layers)
    for pattern in [m for m in layers if m.endswith("::*")]:
        layer, prefix = layers.pop(pattern), pattern[:-1]
        children = [m for m in texts if m.startswith(prefix) and "::" not in m[len(prefix):] and m not in layers]
        if not children:
            problems.append(f"{src}: the layers name `{pattern}`, which matches no module")
        layers.update({child: layer for child in children})
    for module in sorted(set(texts) - {"crate"} - set(layers)):
        problems.append(f"{src}: module `{module}` is on no layer (add it to ARCHITECTURE.md's layers)")
    for module in sorted(set(layers) - set(texts)):
        problems.append(f"{src}: the layers name `{module}`, which is no module")
    for here in sorted(edges):
        for target, names in sorted(edges[here].items()):
            if show_edges:
                print(f"  {src}: {here} -> {target}: {', '.join(sorted(names))}")
            if target == "crate" and here != "crate":
                problems.append(f"{src}: `{here}` uses the crate root (lib.rs is the top: it declares and "
                                f"re-exports, and no module uses it): {', '.join(sorted(names))}")
                continue
            if here == "crate" or here not in layers or target not in layers:
                continue
            if layers[target] >= layers[here]:
                problems.append(
                    f"{src}: `{here}` (layer {layers[here]}) uses `{target}` (layer {layers[target]}): "
                    f"{', '.join(sorted(names))}")
    return problems


def self_test():
    """The check on small crates: a clean one passes; an import up, a circle through `super`,
    and an unlisted module each fail."""
    def crate(files):
        folder = tempfile.mkdtemp(prefix="layers-")
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(folder, path)), exist_ok=True)
            with open(os.path.join(folder, path), "w") as f:
                f.write(text)
        return folder
    base = {"lib.rs": "mod a; mod b; mod c;", "a.rs": "pub struct A;",
            "b.rs": "use crate::a::A; // crate::c::C in a comment\nconst S: &str = \"crate::c::C\";",
            "c.rs": "use crate::{a::A, b};\nfn f() { let _ = b::g(); }\n#[cfg(test)]\nmod tests { use crate::c; }"}
    layers = {"a": 0, "b": 1, "c": 2}
    cases = [
        ("clean", base, layers, 0),
        ("an import up", {**base, "a.rs": "pub struct A; fn f() { crate::b::g(); }"}, layers, 1),
        ("one layer", base, {"a": 0, "b": 1, "c": 1}, 1),
        ("a circle through super", {**base, "lib.rs": "mod a; mod b; mod c; mod d;", "d.rs": "mod e;\nuse e::E;",
                                    "d/e.rs": "pub struct E; use super::D;"}, {**layers, "d": 3, "d::e": 4}, 1),
        ("an unlisted module", {**base, "lib.rs": "mod a; mod b; mod c; mod d;", "d.rs": ""}, layers, 1),
        ("a listed module that is gone", base, {**layers, "z": 3}, 1),
        ("children placed by a pattern", {**base, "lib.rs": "mod a; mod b; mod c; mod d;", "d.rs": "mod e; mod f;",
                                          "d/e.rs": "use crate::a::A;", "d/f.rs": "use crate::a::A;"},
         {**layers, "d": 4, "d::*": 3}, 0),
        ("a pattern's child importing up", {**base, "lib.rs": "mod a; mod b; mod c; mod d;", "d.rs": "mod e;",
                                            "d/e.rs": "use crate::c::C;"}, {**layers, "d": 4, "d::*": 2}, 1),
        ("a pattern that matches nothing", base, {**layers, "z::*": 3}, 1),
        ("code built with a feature as well as for tests",
         {**base, "a.rs": "pub struct A;\n#[cfg(any(test, feature = \"x\"))]\nfn f() { crate::c::g(); }"}, layers, 1),
        ("code built for tests only", {**base, "a.rs": "pub struct A;\n#[cfg(all(test, unix))]\nfn f() { crate::c::g(); }"},
         layers, 0),
    ]
    failed = False
    for name, files, declared, expected in cases:
        folder = crate(files)
        problems = check(folder, declared)
        shutil.rmtree(folder)
        if len(problems) != expected:
            failed = True
            print(f"check-layers self-test: {name}: expected {expected} problem(s), got {problems}")
    if failed:
        sys.exit(1)
    print(f"check-layers self-test: {len(cases)} cases as expected")


def main():
    if "--self-test" in sys.argv:
        return self_test()
    with open(os.path.join(ROOT, "ARCHITECTURE.md"), encoding="utf-8") as f:
        crates = declared_layers(f.read())
    problems = []
    for src, layers in crates.items():
        problems += check(os.path.join(ROOT, src), layers, "--edges" in sys.argv)
    for problem in problems:
        print(f"check-layers: {problem}")
    if problems:
        sys.exit(1)
    print(f"check-layers: {', '.join(crates)}: every import points to a lower layer")


if __name__ == "__main__":
    main()
