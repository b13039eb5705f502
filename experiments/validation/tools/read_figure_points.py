#!/usr/bin/env python3
"""Reads the plotted points of the vLLM blog's Figures 1 and 2 from their PNGs (serving.yaml rows
vllm-blog-*): marker centres of one colour, scaled by the horizontal gridlines.

    python3 experiments/validation/tools/read_figure_points.py FIGURE.png Y_ZERO Y_TOP VALUE_TOP RGB...

FIGURE.png comes from vllm-project/vllm-project.github.io (commit c3a01c4a),
assets/figures/2026-01-08-kv-offloading-connector/ (not committed here: third-party images).
Y_ZERO / Y_TOP: the pixel rows of the value axis's 0 and of its top gridline; VALUE_TOP: the top
gridline's value. The gridline rows are printed first (rows with a third of their pixels
217,217,217); their sub-pixel centres are the darkness-weighted mean over the anti-aliased rows
(figure1: 138.43 for 8000 ... 884.23 for 1000, 106.54 px per 1000 ms; the axis line's centre
990.62, the gridlines extrapolate to 990.77: 990.7 taken; figure2: 140.5 for 400,000, 103.43 px
per 50,000, the axis 967.5, extrapolated 967.9: 967.7 taken). The serving.yaml rows were read with

    figure1.png 990.7 138.43 8000 15,158,213 233,113,50   (ms: GPU Compute, Load from CPU)
    figure2.png 967.7 140.5 400000 21,96,130              (tok/s: With CPU Offloading)

and the "Without CPU Offloading" dashed line of figure2.png at pixel row 877.25 (its colour
233,113,50 fills rows 877-878 exactly, 876-878 within a tolerance), i.e.
(967.7 - 877.25) / (967.7 - 140.5) x 400,000 = 43,700 tok/s. Markers are columns holding >= 8
pixels of the colour, centred on the densest run of them; the last point of each list is the
legend's (figure2 also prints one spurious point below the axis, from the legend line).
Pure Python (zlib): 8-bit RGB, RGBA and palette PNGs, not interlaced.
"""
import struct
import sys
import zlib


def load(path):
    d = open(path, "rb").read()
    assert d[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, pal = 8, b"", None
    while pos < len(d):
        (ln,) = struct.unpack(">I", d[pos:pos + 4])
        typ, body = d[pos + 4:pos + 8], d[pos + 8:pos + 8 + ln]
        pos += 12 + ln
        if typ == b"IHDR":
            w, h, bd, ct, _, _, il = struct.unpack(">IIBBBBB", body)
        elif typ == b"IDAT":
            idat += body
        elif typ == b"PLTE":
            pal = [tuple(body[i:i + 3]) for i in range(0, len(body), 3)]
    assert bd == 8 and il == 0, "8-bit, non-interlaced PNGs only"
    bpp = {2: 3, 6: 4, 3: 1}[ct]
    raw, stride, rows, prev, p = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp), 0
    for _ in range(h):
        f, line = raw[p], bytearray(raw[p + 1:p + 1 + stride])
        p += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + ((a + b) >> 1)) & 255
            elif f == 4:
                pp = a + b - c
                pa, pb, pc = abs(pp - a), abs(pp - b), abs(pp - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else (b if pb <= pc else c))) & 255
        rows.append(line)
        prev = line
    if ct == 3:
        return w, h, lambda x, y: pal[rows[y][x]]
    return w, h, lambda x, y: tuple(rows[y][x * bpp:x * bpp + 3])


def main():
    path, y0, y1, v1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    w, h, px = load(path)
    grid = [y for y in range(h)
            if sum(1 for x in range(0, w, 3) if px(x, y) == (217, 217, 217)) > w / 9]
    print("gridline rows:", grid)
    for spec in sys.argv[5:]:
        ref = tuple(int(v) for v in spec.split(","))
        near = lambda c: sum(abs(a - b) for a, b in zip(c, ref)) < 40
        cols = [[y for y in range(h) if near(px(x, y))] for x in range(w)]
        groups = []
        for x in (x for x in range(w) if len(cols[x]) >= 8):
            if groups and x - groups[-1][-1] <= 2:
                groups[-1].append(x)
            else:
                groups.append([x])
        points = []
        for g in groups:
            ys = sorted(y for x in g for y in cols[x])
            best = max(ys, key=lambda yy: sum(1 for q in ys if abs(q - yy) <= 6))
            sel = [q for q in ys if abs(q - best) <= 7]
            yc = sum(sel) / len(sel)
            points.append((round(sum(g) / len(g), 1), round(yc, 1), round((y0 - yc) / (y0 - y1) * v1, 1)))
        print(spec, "(x px, y px, value):", points)


if __name__ == "__main__":
    main()
