#!/usr/bin/env python3
"""Every relative link in the repository's Markdown resolves (`make test`).

For each tracked `*.md` file (README.md, docs/, ARCHITECTURE.md, SECURITY.md, ...), every
inline link or image `[text](target)` whose target is not a URL (`http:`, `https:`,
`mailto:`) must name a file or folder that exists, relative to the linking file; a `#anchor`
(alone, or after a Markdown file) must be a heading of that file, by GitHub's rule (lowercase;
letters, digits, spaces, `-` and `_` kept; spaces to `-`; a repeated heading gets `-1`, `-2`).
Links inside code (fenced blocks and `backticks`) are not links and are skipped.

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
    """The anchors GitHub gives the headings of a Markdown text (code spans kept in headings)."""
    seen, result = {}, set()
    fenced = False
    for line in raw.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        match = None if fenced else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(1))
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def check(root, files):
    """The broken links of `files` (paths relative to `root`), as messages."""
    problems = []
    for name in files:
        path = os.path.join(root, name)
        with open(path, encoding="utf-8") as f:
            raw = f.read()
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
            "[c](https://example.com/x) [d](#where-to-go-next) ![img](docs/pic.svg)\n\n"
            "```\n[not a link](missing.md)\n```\n`[code](missing.md)`\n",
            "docs/a.md": "# A\n\n## The part\n\n[up](../README.md#title)\n",
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
