"""The dashboard's layout as a picture: docs/dashboard.svg, drawn from template.yaml's
`Dashboard` (each widget a box at its place on CloudWatch's 24-column grid, with its title and
what it shows). deploy/test_template.py fails when the committed picture differs from what
this draws, so the picture stays the deployed layout.

    .tools/aws/bin/python deploy/dashboard_svg.py > docs/dashboard.svg
"""

import json
import pathlib
import re
import sys
from html import escape

from cfnlint.decode import decode

ROOT = pathlib.Path(__file__).resolve().parent.parent
COLUMN, ROW = 40, 22


def dashboard(template=None):
    """The dashboard's body as CloudWatch gets it, each `${Ref}` as `<Ref>` (the silence
    alarm's optional entry left out), and `Fn::Sub`'s variables."""
    if template is None:
        template, problems = decode(str(ROOT / "template.yaml"))
        assert not problems, problems
    body, variables = template["Resources"]["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    text = re.sub(r"\$\{([A-Za-z0-9:.]+)\}", lambda m: "" if m.group(1) == "SilenceAlarmEntry" else f"<{m.group(1)}>", body)
    return json.loads(text.replace("${!", "${")), variables


def widgets():
    return dashboard()[0]["widgets"]


def shows(widget):
    """A line or two on what the widget shows."""
    props = widget["properties"]
    if widget["type"] == "text":
        rows = [line.split("|")[1:3] for line in props["markdown"].split("\n") if line.startswith("| ") and "alarm |" not in line]
        return [f"{alarm.strip()}: {first.strip()}".replace("`", "") for alarm, first in rows]
    if widget["type"] == "alarm":
        return [a.strip("<>").split(".")[0] for a in props["alarms"]] + ["SilenceAlarm (when SilenceHours is above 0)"]
    lines = []
    for metric in props["metrics"]:
        if "expression" in metric[0]:
            name = re.search(r'MetricName=\\?"(\w+)"', metric[0]["expression"]).group(1)
            lines.append(f"{name}, a line per " + re.search(r"\{\w+,([\w,]+)\}", metric[0]["expression"]).group(1).replace(",service", "").replace("service", ""))
        else:
            stat = next((m.get("stat") for m in metric if isinstance(m, dict)), props.get("stat", ""))
            named = {"AWS/Lambda": metric[3].strip("<>"), "AWS/DynamoDB": f"of {metric[-2]}"}.get(metric[0], "")
            lines.append(f"{metric[1]} {stat} {named}".strip())
    for note in props.get("annotations", {}).get("horizontal", []):
        lines.append(f"— {note['label']}")
    return lines


def svg():
    out = []
    all_widgets = widgets()
    height = max(w["y"] + w["height"] for w in all_widgets) * ROW
    out.append(f'<svg xmlns="http://www.w3.org/2000/svg" width="{24 * COLUMN}" height="{height}" font-family="sans-serif" font-size="11">')
    out.append(f'<rect width="{24 * COLUMN}" height="{height}" fill="#f3f5f8"/>')
    for w in all_widgets:
        x, y, width, h = w["x"] * COLUMN + 3, w["y"] * ROW + 3, w["width"] * COLUMN - 6, w["height"] * ROW - 6
        title = w["properties"].get("title") or "Runbook: which command answers which alarm"
        out.append(f'<rect x="{x}" y="{y}" width="{width}" height="{h}" rx="3" fill="#fff" stroke="#c9ced8"/>')
        out.append(f'<text x="{x + 8}" y="{y + 16}" font-weight="bold">{escape(title)}</text>')
        fits = (width - 16) // 6
        lines, room = shows(w), (h - 26) // 14
        if len(lines) > room:
            lines = lines[: room - 1] + [f"… and {len(lines) - room + 1} more"]
        for n, line in enumerate(lines):
            line = line if len(line) <= fits else line[: fits - 1] + "…"
            out.append(f'<text x="{x + 8}" y="{y + 32 + 14 * n}" fill="#4a5261">{escape(line)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(svg())
