"""Write docs/performance.md, the users' page of current numbers, from the benchmark results.

`make bench` runs it after `benchmarks/run.py`; by hand:

    python benchmarks/performance_page.py                       # benchmarks/RESULTS*.md -> docs/performance.md
    python benchmarks/performance_page.py --out /tmp/perf.md    # somewhere else
    python benchmarks/performance_page.py --stdout              # print it instead

It reads what the benchmark scripts wrote and nothing else: benchmarks/RESULTS.md (the CPU
groups of `make bench`, up to the notes it copies from NOTES.md), RESULTS_DENOISE.md
(benchmarks/denoise_quality.py), RESULTS_GPU.md and RESULTS_GPU_DENOISE.md (`make
bench-gpu`), and writes one table per area: filters, denoising, augmentation and recipes,
the whole command and folder runs, the GPU. A section a run did not write is named as
missing on the page. Standard library only; it does not import imgproc (so it runs
without JAX, and never changes a number: every figure is copied from a RESULTS file).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MISSING = "–"


# ---------------------------------------------------------------- Markdown in

class Table:
    """A Markdown table: its header cells, its rows, the line of text just above it (the
    caption some results files put there) and the paragraph just below it (footnotes)."""

    def __init__(self, header, rows, caption="", after=()):
        self.header, self.rows, self.caption, self.after = header, rows, caption, list(after)

    def column(self, prefix):
        """Index of the first column whose header starts with ``prefix`` (None if none)."""
        for i, h in enumerate(self.header):
            if h.lower().startswith(prefix.lower()):
                return i
        return None

    def row(self, prefix):
        """The first row whose first cell starts with ``prefix`` (None if none)."""
        for r in self.rows:
            if r and r[0].lower().startswith(prefix.lower()):
                return r
        return None


class Section:
    def __init__(self, level, title):
        self.level, self.title, self.lines = level, title, []

    def tables(self):
        return parse_tables(self.lines)

    def prose(self):
        """The section's text lines before its first table or subsection."""
        out = []
        for line in self.lines:
            if line.startswith("|"):
                break
            out.append(line)
        return "\n".join(out).strip()


def _cells(line):
    line = line.strip().replace("\\|", "\0")
    return [c.strip().replace("\0", "\\|") for c in line.strip("|").split("|")]


def parse_tables(lines):
    tables, i = [], 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.match(r"^\|[\s:|-]+\|?\s*$", lines[i + 1]):
            caption = ""
            j = i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            if j >= 0 and not lines[j].startswith(("|", "#")):
                caption = lines[j].strip()
            header, rows = _cells(lines[i]), []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            # the paragraph after the table: its footnotes, unless it is the next table's caption
            j = i
            while j < len(lines) and not lines[j].strip():
                j += 1
            after = []
            while j < len(lines) and lines[j].strip() and not lines[j].startswith(("|", "#")):
                after.append(lines[j])
                j += 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and lines[j].startswith("|"):
                after = []
            tables.append(Table(header, rows, caption, after))
        else:
            i += 1
    return tables


def parse_sections(text):
    """Every heading as a :class:`Section` holding the lines up to the next heading of any
    level; the lines before the first heading are a level-0 section titled ''."""
    sections = [Section(0, "")]
    for line in text.splitlines():
        m = re.match(r"^(#{1,6})\s+(.*?)\s*$", line)
        if m:
            sections.append(Section(len(m.group(1)), m.group(2)))
        else:
            sections[-1].lines.append(line)
    return sections


def results_part(text, notes_text):
    """RESULTS.md without the notes `benchmarks/run.py` appends (from NOTES.md's first
    heading, or from "## What the numbers say" where NOTES.md is not there)."""
    marks = []
    first = next((ln for ln in (notes_text or "").splitlines() if ln.startswith("#")), None)
    if first:
        marks.append("\n" + first + "\n")
    marks.append("\n## What the numbers say")
    for mark in marks:
        at = text.find(mark)
        if at >= 0:
            return text[:at]
    return text


def subsections(sections, parent):
    """The sections after ``parent`` with a deeper level, up to the next one of its level."""
    i = sections.index(parent)
    out = []
    for s in sections[i + 1:]:
        if s.level <= parent.level:
            break
        out.append(s)
    return out


# ---------------------------------------------------------------- Markdown out

def table_md(header, rows):
    def line(cells):
        return "| " + " | ".join(c if c else " " for c in cells) + " |"

    align = ["---"] + ["---:" if _numeric_column(rows, i) else "---" for i in range(1, len(header))]
    return "\n".join([line(header), "| " + " | ".join(align) + " |"] + [line(r) for r in rows])


def _numeric_column(rows, i):
    values = [r[i] for r in rows if i < len(r) and r[i] not in ("", MISSING)]
    return bool(values) and all(re.match(r"^[\d.,]+\s*(×|%|ms|s)?$", v) for v in values)


def copy_table(t: Table):
    return table_md(t.header, [r + [""] * (len(t.header) - len(r)) for r in t.rows])


def short_title(title):
    """A group title without its parenthesised details: 'Augment 256 uint8 images 224x224x3'."""
    return re.sub(r"\s*\((?:[^()]|\([^()]*\))*\)\s*$", "", title).strip() or title


# ---------------------------------------------------------------- the areas

def _imgproc_rows(t: Table):
    return [r for r in t.rows if r and r[0].lower().startswith("imgproc")]


def _strip_imgproc(label):
    return re.sub(r"^imgproc\s+", "", label)


def _ms(value):
    try:
        return float(value.replace(",", ""))
    except ValueError:
        return None


def filters_area(groups, reuse):
    """One row per filter case: imgproc's first row, the reference the group divides by,
    scipy.ndimage, and the same case in the process that called reuse_host_memory()."""
    rows = []
    for title, t in groups:
        ratio = next((i for i, h in enumerate(t.header) if h.startswith("time ÷")), None)
        ms = t.column("median ms")
        if ratio is None or ms is None:
            continue
        reference = t.header[ratio][len("time ÷"):].strip()
        ours = _imgproc_rows(t)
        ref = t.row(reference)
        scipy = t.row("scipy")
        for k, row in enumerate(ours):
            if k and not re.search(r"jit|device", row[0]):
                continue  # the first imgproc row, and a compiled (jit / device array) one
            again = reuse.get(title)
            with_reuse = MISSING
            if again is not None:
                r2, ref2 = again.row(row[0]), again.row(reference)
                if r2 is not None and ref2 is not None:
                    with_reuse = f"{r2[ms]} ÷ {ref2[ms]} = {r2[ratio]}"
            rows.append([title if k == 0 else "", _strip_imgproc(row[0]), row[ms], reference if k == 0 else "",
                         ref[ms] if ref and k == 0 else "", row[ratio],
                         scipy[ms] if scipy and k == 0 else "", with_reuse])
    if not rows:
        return None
    header = ["case", "imgproc", "ms", "reference", "ms", "imgproc ÷ reference",
              "scipy.ndimage ms", "with `reuse_host_memory()`: imgproc ms ÷ reference ms"]
    return table_md(header, rows)


def rows_area(groups, *, rate=True):
    """Groups of one kind in one table: the group, the implementation, its time, its rate
    and its time ÷ the group's reference."""
    rows = []
    for title, t in groups:
        ms = t.column("median ms")
        if ms is None:
            continue
        per_s = next((i for i, h in enumerate(t.header) if h.endswith("/s")), None)
        ratio = next((i for i, h in enumerate(t.header) if h.startswith("time ÷")), None)
        reference = t.header[ratio][len("time ÷"):].strip() if ratio is not None else ""
        for k, r in enumerate(t.rows):
            rate_cell = f"{r[per_s]} {t.header[per_s]}" if per_s is not None and r[per_s] else MISSING
            cells = [short_title(title) if k == 0 else "", r[0], r[ms]]
            if rate:
                cells.append(rate_cell)
            cells.append(r[ratio] if ratio is not None and r[ratio] else MISSING)
            rows.append(cells)
    if not rows:
        return None
    header = ["workload", "implementation", "median ms"] + (["rate"] if rate else []) + ["time ÷ reference (the 1.00× row)"]
    return table_md(header, rows)


def gpu_area(sections):
    """RESULTS_GPU.md's groups in one table (device times; images/s for augmentation)."""
    rows = []
    for s in sections:
        for t in s.tables():
            ms = t.column("median ms")
            if ms is None:
                continue
            extra = [i for i in range(len(t.header)) if i not in (0, ms)]
            for k, r in enumerate(t.rows):
                notes = "; ".join(f"{r[i]} {t.header[i]}" if t.header[i] != "notes" else r[i]
                                  for i in extra if i < len(r) and r[i])
                rows.append([short_title(s.title) if k == 0 else "", r[0], r[ms], notes])
    if not rows:
        return None
    return table_md(["workload", "implementation", "median ms", "notes"], rows)


# ---------------------------------------------------------------- provenance

def git(*args):
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")  # read only: no index refresh written
    try:
        res = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, env=env, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None, None
    return res.returncode, res.stdout.strip()


def provenance(path: Path):
    """'last committed in abc1234 (2026-11-27)', plus ', changed since' when the working copy differs."""
    rel = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
    code, out = git("log", "-1", "--format=%h (%cs)", "--", rel)
    if code != 0:
        return "not in git"
    text = f"last committed in {out}" if out else "not committed"
    code, _ = git("diff", "--quiet", "HEAD", "--", rel)
    if out and code == 1:
        text += "; changed since (not committed)"
    return text


def written_on(text):
    """'written on 2026-11-27; ' from the first date in a results file's opening lines ('' if none)."""
    m = re.search(r"\b(\d{4}-\d{2}-\d{2})\b", text)
    return f"written on {m.group(1)}; " if m else ""


# ---------------------------------------------------------------- the page

def build(results_dir: Path) -> str:
    paths = {name: results_dir / name for name in
             ("RESULTS.md", "RESULTS_DENOISE.md", "RESULTS_GPU.md", "RESULTS_GPU_DENOISE.md")}
    texts = {name: p.read_text(encoding="utf-8") for name, p in paths.items() if p.exists()}
    if "RESULTS.md" not in texts:
        raise SystemExit(f"{paths['RESULTS.md']}: not found; run `make bench` first")
    notes = results_dir / "NOTES.md"
    main = parse_sections(results_part(texts["RESULTS.md"], notes.read_text(encoding="utf-8") if notes.exists() else ""))
    preamble = main[0].lines

    # the CPU groups of RESULTS.md, by kind
    filters, reuse, augment, command = [], {}, [], []
    gpu_in_main, denoise_in_main = [], []
    for s in main[1:]:
        if s.level != 2:
            continue
        title = s.title
        tables = s.tables()
        if title.startswith("GPU") or title.startswith("Denoising on the GPU"):
            gpu_in_main.append(s)
            continue
        if title.startswith("Denoising quality"):
            denoise_in_main.append(s)
            continue
        if not tables or title.startswith("Targets"):
            continue
        m = re.match(r"^With imgproc\.reuse_host_memory\(\) in the process:\s*(.*)$", title)
        if m:
            reuse[m.group(1)] = tables[0]
        elif title.startswith(("Augment", "ImageNet training recipe", "One epoch of")):
            augment.append((title, tables[0]))
        elif "whole command" in title or "whole job" in title or title.startswith("Folder"):
            command.append((title, tables[0]))
        else:
            filters.append((title, tables[0]))

    out = ["# Performance", "",
           "<!-- Generated by `make bench` (python benchmarks/performance_page.py). Do not edit: "
           "edit the script or run the benchmarks again. -->", "",
           "The current numbers, one table per area. This page is generated by `make bench` "
           "(`python benchmarks/performance_page.py`, after `benchmarks/run.py`); every figure is copied "
           "from the benchmark results files:", ""]
    code, head = git("rev-parse", "--short", "HEAD")
    for name, p in paths.items():
        if name in texts:
            rel = p.relative_to(ROOT) if p.is_relative_to(ROOT) else p
            out.append(f"- `{rel}`: {written_on(texts[name][:4000])}{provenance(p)}")
        else:
            out.append(f"- `{name}`: not there (not measured)")
    out += ["", f"Generated at commit {head}." if code == 0 and head else "Generated outside a git checkout.", ""]
    machine = [ln[2:].strip() for ln in preamble if ln.startswith("- machine:") or ln.startswith("- python")]
    if machine:
        out += ["CPU tables: " + "; ".join(machine) + ".", ""]
    out += [
        "How to read them: each time is a median of repeated runs after a warm-up, the implementations of a "
        "group timed in turns in one process; compilation is excluded except in the whole-command and "
        "folder rows. Lower is better, and a ratio below 1.00× means imgproc took less time than the "
        "reference. Absolute times on a shared machine move between runs; compare the ratios of one run. "
        "All the tables, the project's targets and what was tried: "
        "[benchmarks/RESULTS.md](../benchmarks/RESULTS.md), [benchmarks/NOTES.md](../benchmarks/NOTES.md).",
        "",
    ]

    out += ["## Filters on CPU, against OpenCV and scipy.ndimage", ""]
    table = filters_area(filters, reuse)
    out += [table if table else "_Not in this run._", ""]
    if table:
        out += ["\"imgproc\" is the library's first row of the case (an eager call on a NumPy image, "
                "or the pipeline on NumPy input) and, where measured, the same work compiled with `jax.jit` "
                "on a device array; the reference is the library the case divides by. The last column is "
                "the same case in a second process that called `imgproc.reuse_host_memory()` (as the "
                "`imgproc` command does).", ""]

    out += ["## Denoising on CPU", ""]
    denoise = parse_sections(texts["RESULTS_DENOISE.md"]) if "RESULTS_DENOISE.md" in texts else denoise_in_main
    dtables = [t for s in denoise for t in s.tables()]
    quality = next((t for t in dtables if t.header and t.header[0] == "method"), None)
    speed = next((t for t in dtables if t.column("imgproc ms") is not None), None)
    if quality is None and speed is None:
        out += ["_Not in this run._", ""]
    if quality is not None:
        intro = next((s.prose() for s in denoise if s.title.startswith("Denoising quality")), "")
        out += ["Quality: mean PSNR (dB) / SSIM over four 256×256 crops, and speed in ms per megapixel. "
                + (intro.replace("Written by", "From").strip() if intro else ""), "",
                copy_table(quality), ""]
        if quality.after:
            out += quality.after + [""]
    if speed is not None:
        out += ["Speed against the reference implementations (warm, median ms, the same run):", "",
                copy_table(speed), ""] + (speed.after + [""] if speed.after else [])

    out += ["## Augmentation and training recipes on CPU, against albumentations and augmax", ""]
    table = rows_area(augment)
    out += [table if table else "_Not in this run._", ""]
    if table:
        out += ["Workloads: " + "; ".join(f"*{short_title(t)}*: {t[len(short_title(t)):].strip(' ()') or t}"
                                          for t, _ in augment) + ".", ""]

    out += ["## The whole command and folder runs on CPU", ""]
    table = rows_area(command)
    out += [table if table else "_Not in this run._", ""]

    gpu_sections = parse_sections(texts["RESULTS_GPU.md"]) if "RESULTS_GPU.md" in texts else gpu_in_main[:1]
    runs = [s for s in gpu_sections if s.level == 2]  # one "## GPU: ..." section per run
    out += ["## GPU", ""]
    if not runs:
        out += ["_Not measured: `make bench-gpu` on a machine with an NVIDIA GPU writes it._", ""]
    for top in runs:
        device = re.sub(r"^GPU:\s*", "", top.title)
        out += [f"{device}. {top.prose()}", ""]
        table = gpu_area(subsections(gpu_sections, top) or [top])
        out += [table if table else "_No tables in RESULTS_GPU.md._", ""]
    gdenoise = (parse_sections(texts["RESULTS_GPU_DENOISE.md"]) if "RESULTS_GPU_DENOISE.md" in texts
                else [s for s in gpu_in_main if s.title.startswith("Denoising on the GPU")])
    gtop = next((s for s in gdenoise if s.level == 2), None)
    if gtop is not None:
        out += [f"### {gtop.title}", "", gtop.prose(), ""]
        for s in subsections(gdenoise, gtop):
            if s.title.startswith("Quality"):
                continue  # the same numbers as the CPU quality table above
            for t in s.tables():
                out += [f"{s.title}:", "", copy_table(t), ""] + (t.after + [""] if t.after else [])
    return "\n".join(out).rstrip() + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results-dir", default=str(HERE), help="where RESULTS*.md are (default: benchmarks/)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "performance.md"))
    parser.add_argument("--stdout", action="store_true", help="print the page instead of writing --out")
    args = parser.parse_args(argv)
    page = build(Path(args.results_dir).resolve())
    if args.stdout:
        sys.stdout.write(page)
        return
    out = Path(args.out)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
