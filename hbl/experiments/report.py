"""`hbl report RESULT -o report.html`: one self-contained HTML page of a result, to send or to open
from a remote host: the summary per HSS (the figures `hbl compare` prints), the per-workload table
(click a column's header to sort by it, again to reverse) and the figures (hbl/experiments/plot.py), inline as
SVG. Nothing is fetched: the style and the sorting script are in the page."""
import datetime
import html
import os

from hbl import __version__
from hbl.experiments import figures, plot, tables
from hbl.errors import HblError

CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 72em; padding: 0 1em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-variant-numeric: tabular-nums; }
th, td { padding: 0.15em 0.6em; text-align: right; border-bottom: 1px solid #eee; }
th:first-child, td:first-child { text-align: left; }
thead th { border-bottom: 2px solid #999; vertical-align: bottom; }
table.sortable thead th { cursor: pointer; user-select: none; }
table.sortable thead th[aria-sort=ascending]::after { content: " \\25B2"; }
table.sortable thead th[aria-sort=descending]::after { content: " \\25BC"; }
tfoot td { border-top: 2px solid #999; font-weight: bold; }
td.best { background: #e3f0fa; } td.beats { background: #fbe9d9; }
tr.best-policy td:first-child { font-weight: bold; }
.note { color: #555; font-size: 0.9em; max-width: 60em; }
figure { margin: 1em 0; } figure svg { width: 40em; max-width: 100%; height: auto; }   /* one column is small on a screen */
.scroll { overflow-x: auto; }
"""

# sorts a table's body by the column clicked: numbers by data-v (missing ones last), text otherwise
JS = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("thead th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var up = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("thead th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", up ? "ascending" : "descending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var key = function (row) {
        var cell = row.cells[col], v = cell.getAttribute("data-v");
        return v === null ? cell.textContent : (v === "" ? null : parseFloat(v));
      };
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === null || y === null) { return (x === null) - (y === null); }
        var c = typeof x === "number" ? x - y : String(x).localeCompare(String(y));
        return up ? c : -c;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""


def esc(text):
    return html.escape(str(text), quote=True)


def summary_table(c):
    """The summary of one HSS as `hbl compare` prints it, the best non-learning policy in bold."""
    if not c["rows"]:
        return "<p>No policy ran on every workload with a %s run.</p>" % tables.BASELINE
    head, cells = tables.summary_cells(c)
    out = ["<table class='summary'><thead><tr>%s</tr></thead><tbody>" % "".join("<th>%s</th>" % esc(h) for h in head)]
    for r, row in zip(c["rows"], cells):
        cls = " class='best-policy'" if r["variant"] == c["best"] else ""
        out.append("<tr%s>%s</tr>" % (cls, "".join("<td>%s</td>" % esc(x) for x in row)))
    out.append("</tbody></table>")
    if c["incomplete"]:
        out.append("<p class='note'>Not on every workload, so not above: %s.</p>" % esc(", ".join(c["incomplete"])))
    return "".join(out)


def workload_table(c):
    """Workloads as rows, policies as columns: average latency / Fast-Only (a learning policy's mean
    over its seeds, its min-max in the cell's tooltip), sortable; the geomean at the foot."""
    order = [r["variant"] for r in c["rows"]] + c["incomplete"]
    vs = [v for v in order if v != tables.BASELINE]
    if not vs or not c["workloads"]:
        return ""
    beaten = {(b["workload"], b["variant"]) for b in c["beats"]}
    contender = {v: c["policies"][v] not in tables.REFERENCES for v in vs}
    out = ["<div class='scroll'><table class='sortable workloads'><thead><tr><th>workload</th>%s</tr></thead><tbody>"
           % "".join("<th>%s</th>" % esc(v) for v in vs)]
    for w in c["workloads"]:
        per = c["normalized"][w]
        top = min([per[v]["mean"] for v in per if v in contender and contender[v]], default=None)
        cells = []
        for v in vs:
            s = per.get(v)
            if s is None:
                cells.append("<td data-v=''>-</td>")
                continue
            cls = "beats" if (w, v) in beaten else "best" if contender[v] and s["mean"] == top else ""
            tip = " title='%d seeds: %s-%s'" % (s["n"], tables.num(s["min"]), tables.num(s["max"])) if s["n"] > 1 else ""
            cells.append("<td data-v='%r'%s%s>%s</td>" % (s["mean"], " class='%s'" % cls if cls else "", tip,
                                                          tables.num(s["mean"])))
        out.append("<tr><td>%s</td>%s</tr>" % (esc(w), "".join(cells)))
    out.append("</tbody><tfoot><tr><td>geomean</td>%s</tr></tfoot></table></div>" % "".join(
        "<td>%s</td>" % (tables.num(c["geomean"][v]) if v in c["geomean"] else "-") for v in vs))
    return "".join(out)


def page(result):
    """The HTML of a result read by plot.read."""
    drawn = plot.figures_of(result)
    svgs = {name: plot.svg(fig, name) for name, fig in drawn}
    plt = figures.pyplot()
    for _, fig in drawn:
        plt.close(fig)
    title = "hbl report: %s" % os.path.basename(os.path.normpath(result.path))
    body = ["<h1>%s</h1>" % esc(title),
            "<p class='note'>From %s, drawn %s by hbl %s.</p>" % (
                esc(os.path.abspath(result.path)), datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), __version__)]
    if result.kind == "runs":
        summaries = result.summaries()
        for h, c, t in summaries:
            body.append("<section><h2>%s: %d workload%s</h2>" % (esc(t), len(c["workloads"]),
                                                                  "" if len(c["workloads"]) == 1 else "s"))
            body.append("<h3>Geomean of average latency / Fast-Only (lower is better)</h3>" + summary_table(c))
            body.append("<h3>Average latency / Fast-Only per workload</h3>" + workload_table(c))
            name = "latency-" + plot.slug(h)
            if name in svgs:
                body.append(_figure(svgs.pop(name), "%s: average latency / Fast-Only per workload" % t))
            body.append("</section>")
        body.append("<p class='note'>%s %s</p>" % (esc(tables.SUMMARY_NOTE), esc(tables.WORKLOADS_NOTE)))
        body.append("<section><h2>Geomean per HSS</h2>")
    else:
        body.append("<section><h2>Figures</h2>")
    body += [_figure(s, n) for n, s in svgs.items()]
    body.append("</section>")
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>%s</title>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'><style>%s</style></head>"
            "<body>%s<script>%s</script></body></html>\n" % (esc(title), CSS, "\n".join(body), JS))


def _figure(svg, caption):
    return "<figure>%s<figcaption class='note'>%s</figcaption></figure>" % (svg, esc(caption))


def write(path, out):
    """The report of the result in path, written to out (atomically)."""
    if os.path.isdir(out):
        raise HblError("%s: is a directory" % out)
    if not os.path.isdir(os.path.dirname(os.path.abspath(out))):
        raise HblError("%s: no such directory" % os.path.dirname(os.path.abspath(out)))
    text = page(plot.read(path))
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, out)
    return out
