#!/usr/bin/env python3
"""Every relative link in the repository's Markdown resolves (`make test`).

For each tracked `*.md` file (README.md, docs/, ARCHITECTURE.md, SECURITY.md, ...), every
inline link or image `[text](target)` whose target is not a URL (`http:`, `https:`,
`mailto:`) must name a file or folder that exists, relative to the linking file; a `#anchor`
(alone, or after a Markdown file) must be a heading of that file, by GitHub's rule (lowercase;
letters, digits, spaces, `-` and `_` kept; spaces to `-`; a repeated heading gets `-1`, `-2`).
Links inside code (fenced blocks and `backticks`) are not links and are skipped.

The prose also names code: a backticked path from the repository's root (`shared/src/auth.rs`,
`template.yaml`; its first part exists at the root) must exist; `path:12` or `path:12-30` must be within the file; `path::name` and "`name` in
`path`" (also "`a` and `b` in `path`") must find `name` (its last `::` part) defined in that
file (see `defines`). So a
moved file or a renamed function fails here instead of misleading a reader.

    python3 scripts/check-links.py             check the repository
    python3 scripts/check-links.py --self-test the check on files of its own
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
EXTERNAL = ("http://", "https://", "mailto:")


def prose(text):
    """`text` without fenced code blocks and inline code spans (lines kept)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else re.sub(r"`[^`]*`", "", line))
    return "\n".join(out)


def anchors(raw):
    """The anchors GitHub gives the headings of a Markdown text (code spans kept in headings),
    and those the text names itself (`<a id="...">`)."""
    seen, result = {}, set()
    fenced = False
    for line in raw.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            result.update(re.findall(r'<a id="([\w-]+)"></a>', line))
        match = None if fenced else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(1))
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


CODE_PATH = re.compile(r"`((?:[\w.-]+/)*[\w.-]+\.(?:rs|py|sh|yaml|toml|mjs|js|json|md|txt))(?::(\d+)(?:-(\d+))?|::([\w:]+))?`")
NAMED_IN = re.compile(r"`([\w:]+)`(?:,? (?:and|or) `([\w:]+)`)? (?:in|there,? in) `((?:[\w.-]+/)*[\w.-]+\.(?:rs|py|sh|yaml|toml))`")


def defines(path, text, name):
    """Whether the file at `path` (its `text`) holds `name`: in Rust, a definition of it (`fn`,
    `struct`, `enum`, `trait`, `type`, `const`, `static`, `mod`, a macro, or an enum variant or
    field written `name:` / `name(` / `name,` at a line's start), or an upper-case name anywhere
    (an environment variable's); elsewhere, the name as a word."""
    word = re.escape(name)
    if path.endswith(".rs"):
        definition = rf"\b(?:fn|struct|enum|trait|type|const|static|mod|macro_rules!)\s+{word}\b"
        member = rf"^\s*(?:pub\s+)?{word}\s*[:(,{{]"
        return bool(re.search(definition, text) or re.search(member, text, re.M)
                    or (name.isupper() and re.search(rf"\b{word}\b", text)))
    return bool(re.search(rf"(?<![\w-]){word}(?![\w-])", text))


def code_references(root, name, raw):
    """The problems with the code `name`'s prose names: missing files, lines past the end,
    names not found."""
    problems, texts = [], {}

    def text_of(path):
        if path not in texts:
            with open(path, encoding="utf-8") as f:
                texts[path] = f.read()
        return texts[path]

    fenced = False
    for number, line in enumerate(raw.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for match in CODE_PATH.finditer(line):
            path, first, last, item = match.groups()
            where = os.path.join(root, path)
            if not os.path.exists(os.path.join(root, path.split("/")[0])):
                continue  # a bare name (`lib.rs`) or one within a crate (`it/sinks.rs`): not from the root
            if "<" in path or path.startswith(("target/", ".dev/", "node_modules/")):
                continue
            if not os.path.exists(where):
                problems.append(f"{name}:{number}: `{path}`: no such file")
                continue
            if first and os.path.isfile(where):
                lines = text_of(where).count("\n") + 1
                if int(last or first) > lines:
                    problems.append(f"{name}:{number}: `{match.group(0)[1:-1]}`: the file has {lines} lines")
            if item and not defines(path, text_of(where), item.split("::")[-1]):
                problems.append(f"{name}:{number}: `{path}::{item}`: not found there")
        for match in NAMED_IN.finditer(line):
            first, second, path = match.groups()
            where = os.path.join(root, path)
            if not os.path.isfile(where):
                continue  # reported above
            for item in filter(None, (first, second)):
                if not defines(path, text_of(where), item.split("::")[-1]):
                    problems.append(f"{name}:{number}: `{item}` in `{path}`: not found there")
    return problems


def check(root, files):
    """The broken links of `files` (paths relative to `root`), as messages."""
    problems = []
    for name in files:
        path = os.path.join(root, name)
        with open(path, encoding="utf-8") as f:
            raw = f.read()
        problems += code_references(root, name, raw)
        for number, line in enumerate(prose(raw).split("\n"), 1):
            for match in LINK.finditer(line):
                target = match.group(1)
                if target.startswith(EXTERNAL):
                    continue
                file_part, _, anchor = target.partition("#")
                where = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                if not os.path.exists(where):
                    problems.append(f"{name}:{number}: {target}: no such file")
                    continue
                if anchor and where.endswith(".md"):
                    with open(where, encoding="utf-8") as f:
                        if anchor not in anchors(f.read()):
                            problems.append(f"{name}:{number}: {target}: no heading #{anchor} there")
    return problems


def tracked_markdown(root):
    out = subprocess.run(["git", "ls-files", "*.md"], cwd=root, capture_output=True, text=True, check=True).stdout
    skip = ("node_modules/", "target/", ".tools/")
    return [f for f in out.split("\n") if f and not f.startswith(skip) and os.path.exists(os.path.join(root, f))]


def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.mkdir(os.path.join(root, "docs"))
        files = {
            "README.md": "# Title\n\n## Where to go `next`\n\n[a](docs/a.md) [b](docs/a.md#the-part) "
            "[c](https://example.com/x) [d](#where-to-go-next) [e](docs/a.md#named) ![img](docs/pic.svg)\n\n"
            "```\n[not a link](missing.md)\n```\n`[code](missing.md)`\n",
            "docs/a.md": "# A\n\n## The part\n\n[up](../README.md#title)\n\n1. <a id=\"named\"></a>**A step.**\n",
            "docs/pic.svg": "<svg/>",
        }
        for name, text in files.items():
            with open(os.path.join(root, name), "w", encoding="utf-8") as f:
                f.write(text)
        good = check(root, ["README.md", "docs/a.md"])
        assert good == [], good
        with open(os.path.join(root, "docs/b.md"), "w", encoding="utf-8") as f:
            f.write("[gone](c.md) [no part](a.md#other) [self](#nothing) [ok](a.md)\n")
        bad = check(root, ["docs/b.md"])
        assert [p.split(": ", 1)[0] for p in bad] == ["docs/b.md:1"] * 3, bad
        assert "c.md: no such file" in bad[0] and "#other" in bad[1] and "#nothing" in bad[2], bad
        os.makedirs(os.path.join(root, "src"))
        with open(os.path.join(root, "src/lib.rs"), "w", encoding="utf-8") as f:
            f.write("fn present() {}\nfn other() {}\n// absent_here, in a comment only\n")
        with open(os.path.join(root, "docs/c.md"), "w", encoding="utf-8") as f:
            f.write("`src/lib.rs:2` `src/lib.rs::present` `present` and `other` in `src/lib.rs` `lib.rs`\n"
                    "`src/gone.rs` `src/lib.rs:4-9` `src/lib.rs::absent` `absent_here` in `src/lib.rs`\n")
        bad = check(root, ["docs/c.md"])
        assert [p.split(": ", 1)[0] for p in bad] == ["docs/c.md:2"] * 4, bad
        assert "no such file" in bad[0] and "4 lines" in bad[1] and "not found" in bad[2] and "absent_here" in bad[3], bad
    print("check-links: self-test passed")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    files = tracked_markdown(ROOT)
    problems = check(ROOT, files)
    for problem in problems:
        print(f"check-links: {problem}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"check-links: {len(files)} Markdown files, every relative link resolves")


if __name__ == "__main__":
    main()
