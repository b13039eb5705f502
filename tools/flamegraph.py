#!/usr/bin/env python3
"""A small flame graph: `perf script` output in, an SVG out (issue 24; no Debian package has one).

  perf record -F 2000 --call-graph dwarf -o perf.data build/rel/kappasim run CONFIG --out DIR
  perf script -i perf.data | python3 tools/flamegraph.py --title "..." > flame.svg

Stacks are folded (root first, one count per sample) and drawn as in Brendan Gregg's flame
graphs: x is the share of samples, y the call depth, frames sorted by name at each level (so the
picture is deterministic for the same samples). Frames below --min-width of the total are cut.
Colours are a hash of the frame's name (warm hues), not a measure of anything.
"""
import argparse
import html
import re
import sys
import zlib


def folded_stacks(lines):
    """Yields one root-first list of frame names per sample of `perf script` text."""
    stack = []
    in_sample = False
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if in_sample and stack:
                yield list(reversed(stack))
            stack, in_sample = [], False
            continue
        if not line.startswith((" ", "\t")):
            in_sample = True  # the sample's header line: comm pid time event
            stack = []
            continue
        parts = line.strip().split(None, 1)
        if len(parts) < 2:
            continue
        name = re.sub(r"\+0x[0-9a-f]+$", "", parts[1].rsplit(" (", 1)[0])
        name = re.sub(r"\(anonymous namespace\)::", "", name)
        if name == "[unknown]":
            continue
        stack.append(name)
    if in_sample and stack:
        yield list(reversed(stack))


def build_tree(stacks):
    root = {"n": 0, "c": {}}
    for s in stacks:
        root["n"] += 1
        node = root
        for f in s:
            node = node["c"].setdefault(f, {"n": 0, "c": {}})
            node["n"] += 1
    return root


def short(name, width_px):
    name = re.sub(r"<[^<>]*>", "<>", name)  # template arguments shortened
    chars = int(width_px / 6.5)
    if chars < 3:
        return ""
    return name if len(name) <= chars else name[: chars - 2] + ".."


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--title", default="Flame graph")
    ap.add_argument("--width", type=int, default=1200)
    ap.add_argument("--min-width", type=float, default=0.002, help="fraction of all samples")
    a = ap.parse_args()
    root = build_tree(folded_stacks(sys.stdin))
    total = root["n"]
    if total == 0:
        sys.exit("flamegraph.py: no samples on stdin (perf script output expected)")
    row_h, top = 16, 40
    rects = []
    depth_max = 0

    def walk(node, x, depth):
        nonlocal depth_max
        for name in sorted(node["c"]):
            child = node["c"][name]
            if child["n"] / total >= a.min_width:
                rects.append((name, x, depth, child["n"]))
                depth_max = max(depth_max, depth)
                walk(child, x, depth + 1)
            x += child["n"]

    walk(root, 0, 0)
    height = top + (depth_max + 2) * row_h + 10
    scale = (a.width - 20) / total
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{a.width}" height="{height}" '
        f'font-family="monospace" font-size="11">',
        f'<rect width="100%" height="100%" fill="#f8f8f8"/>',
        f'<text x="{a.width // 2}" y="20" text-anchor="middle" font-size="15">'
        f"{html.escape(a.title)}</text>",
        f'<text x="10" y="34" font-size="11">{total} samples; width = share of samples, '
        f"bottom = outermost frame; hover a frame for its name and share</text>",
    ]
    for name, x, depth, n in rects:
        px, w = 10 + x * scale, n * scale
        y = height - 10 - (depth + 1) * row_h
        h = zlib.crc32(name.encode()) & 0xFFFF
        fill = f"rgb({205 + h % 50},{(h >> 4) % 180 + 50},{(h >> 8) % 55})"
        label = html.escape(short(name, w))
        tip = html.escape(f"{name} ({n} samples, {100.0 * n / total:.1f}%)")
        out.append(
            f'<g><title>{tip}</title><rect x="{px:.1f}" y="{y}" width="{max(w - 0.5, 0.1):.1f}" '
            f'height="{row_h - 1}" fill="{fill}" rx="2"/>'
            + (f'<text x="{px + 3:.1f}" y="{y + 12}">{label}</text>' if label else "")
            + "</g>"
        )
    out.append("</svg>")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
