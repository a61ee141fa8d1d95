#!/usr/bin/env python3
"""`make size`: what the edge Worker's Wasm is made of, by crate and by function.

Builds the Worker as `make build-edge` does but keeps the names section (only the edge crate
is linked again, unstripped), then reads the Wasm: bytes per section, code
bytes per crate (from the demangled function names) and the largest functions. Writes
target/size/report.md and target/size/report.json and prints the tables. Standard library only.
"""
import collections
import gzip
import json
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "target", "size")
NAMED = os.path.join(OUT, "edge")
SECTIONS = {0: "custom", 1: "type", 2: "import", 3: "function", 4: "table", 5: "memory", 6: "global",
            7: "export", 8: "start", 9: "element", 10: "code", 11: "data", 12: "data count", 13: "tag"}


def build_named():
    """The release Worker with function names kept, into target/size/edge."""
    # Only the edge crate is built unstripped (the link keeps the names), so the dependencies
    # the release build compiled are reused: a relink, not a second build.
    done = subprocess.run([os.path.join(ROOT, "scripts/build-edge.sh"), "edge",
                           os.path.relpath(NAMED, os.path.join(ROOT, "edge")),
                           "--config", "profile.release.package.edge.strip=false"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        sys.stdout.write(done.stdout.decode(errors="replace"))
        raise SystemExit("size: the build failed")
    return NAMED


def leb(data, i):
    result = shift = 0
    while True:
        byte = data[i]
        i += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, i


def read_wasm(path):
    """Sections [(name, offset, size)], function bodies [(index, size)] and function names."""
    data = open(path, "rb").read()
    if data[:4] != b"\0asm":
        raise SystemExit(f"size: {path} is not a Wasm module")
    i, sections = 8, []
    while i < len(data):
        sid = data[i]
        size, i = leb(data, i + 1)
        name = SECTIONS.get(sid, str(sid))
        if sid == 0:
            length, j = leb(data, i)
            name = "custom:" + data[j:j + length].decode(errors="replace")
        sections.append((name, i, size))
        i += size
    imported, bodies, names = 0, [], {}
    for name, offset, size in sections:
        if name == "import":
            count, j = leb(data, offset)
            for _ in range(count):
                for _ in range(2):
                    length, j = leb(data, j)
                    j += length
                kind = data[j]
                j += 1
                if kind == 0:
                    imported += 1
                    _, j = leb(data, j)
                elif kind == 1:
                    j += 1
                    flags, j = leb(data, j)
                    _, j = leb(data, j)
                    if flags & 1:
                        _, j = leb(data, j)
                elif kind == 2:
                    flags, j = leb(data, j)
                    _, j = leb(data, j)
                    if flags & 1:
                        _, j = leb(data, j)
                elif kind == 3:
                    j += 2
                elif kind == 4:
                    j += 1
                    _, j = leb(data, j)
        elif name == "code":
            count, j = leb(data, offset)
            for k in range(count):
                length, start = leb(data, j)
                bodies.append((imported + k, length))
                j = start + length
        elif name == "custom:name":
            length, j = leb(data, offset)
            j += length
            end = offset + size
            while j < end:
                sub = data[j]
                sub_size, j = leb(data, j + 1)
                if sub == 1:
                    count, k = leb(data, j)
                    for _ in range(count):
                        index, k = leb(data, k)
                        length, k = leb(data, k)
                        names[index] = data[k:k + length].decode(errors="replace")
                        k += length
                j += sub_size
    return data, sections, bodies, names


def crate_of(name):
    """The crate a demangled Rust symbol belongs to (`<T as trait>` counts for T's crate)."""
    if re.fullmatch(r"function\[\d+\]", name):
        return "(unnamed)"
    name = name.lstrip("<&*")
    name = re.sub(r"^(mut |dyn |impl )", "", name)
    match = re.match(r"([A-Za-z_][A-Za-z0-9_]*)", name)
    if not match:
        return "(other)"
    crate = match.group(1)
    if crate.startswith("__wbg") or crate.startswith("__wbindgen") or crate.startswith("__wasm_bindgen"):
        return "(wasm-bindgen glue)"
    return crate


def analyse(path, top=25):
    data, sections, bodies, names = read_wasm(path)
    by_crate = collections.Counter()
    functions = []
    for index, size in bodies:
        name = names.get(index, f"function[{index}]")
        by_crate[crate_of(name)] += size
        functions.append((size, name))
    functions.sort(reverse=True)
    return {
        "wasm_bytes": len(data),
        "wasm_gzip_bytes": len(gzip.compress(data, 9)),
        "sections": [{"name": n, "bytes": s, "gzip_bytes": len(gzip.compress(data[o:o + s], 9))}
                     for n, o, s in sections],
        "code_bytes": sum(s for _, s in bodies),
        "by_crate": [{"crate": c, "bytes": b} for c, b in by_crate.most_common()],
        "largest_functions": [{"bytes": s, "name": n} for s, n in functions[:top]],
    }


def markdown(report):
    lines = ["# What the edge Worker's Wasm is made of", "",
             f"Built with names kept (`make size`): {report['wasm_bytes']:,} bytes, "
             f"{report['wasm_gzip_bytes']:,} gzip. The upload strips the names section.", "",
             "| section | bytes | gzip alone |", "|---|---:|---:|"]
    lines += [f"| {s['name']} | {s['bytes']:,} | {s['gzip_bytes']:,} |" for s in report["sections"]]
    lines += ["", f"Code by crate ({report['code_bytes']:,} bytes of function bodies; after LTO a "
                  "function inlined into another counts for the caller):", "",
              "| crate | code bytes | share |", "|---|---:|---:|"]
    lines += [f"| {c['crate']} | {c['bytes']:,} | {100 * c['bytes'] / report['code_bytes']:.1f} % |"
              for c in report["by_crate"][:20]]
    lines += ["", "Largest functions:", "", "| bytes | function |", "|---:|---|"]
    lines += [f"| {f['bytes']:,} | `{f['name'][:120]}` |" for f in report["largest_functions"]]
    return "\n".join(lines) + "\n"


def main():
    os.makedirs(OUT, exist_ok=True)
    print("size: building the Worker with names kept", flush=True)
    build_named()
    report = analyse(os.path.join(NAMED, "index_bg.wasm"))
    with open(os.path.join(OUT, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    text = markdown(report)
    with open(os.path.join(OUT, "report.md"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    print(f"size: written to {os.path.relpath(OUT, ROOT)}/report.md and report.json")


if __name__ == "__main__":
    main()
