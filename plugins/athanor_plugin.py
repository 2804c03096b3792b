"""Airflow UI plugin: the latest Athanor report, one click from the navigation bar.

A small FastAPI app, mounted by the Airflow 3 api-server at /athanor, serves the reports
folder (ATHANOR_REPORTS, default <project>/reports); an external view puts "Athanor
report" in the navigation and shows reports/latest/report.html inside the UI.
Plugin FastAPI apps are not behind Airflow's login: expose the api-server only where
everyone who can reach it may read the fleet's costs.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

from airflow.plugins_manager import AirflowPlugin
from fastapi import FastAPI, HTTPException
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse

URL_PREFIX = "/athanor"
REPORT_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def reports_dir() -> Path:
    """The folder build_report writes to (the same setting the DAGs use)."""
    try:
        from athanor.settings import Settings
    except ImportError:  # the athanor package is not installed in this Airflow image
        return Path(os.environ.get("ATHANOR_REPORTS", "reports")).resolve()
    return Settings.from_env().reports.resolve()


def create_app(reports: Path) -> FastAPI:
    """Serve `reports`: an index of the days at /, the files below it as they are."""
    root = Path(reports).resolve()
    app = FastAPI(title="Athanor reports", docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/", response_class=HTMLResponse)
    def index() -> str:
        found = root.iterdir() if root.is_dir() else []
        days = sorted((p.name for p in found if p.is_dir() and REPORT_DAY.match(p.name)), reverse=True)
        latest = (root / "latest" / "report.html").is_file()
        items = [f'<li><a href="{d}/report.html">{html.escape(d)}</a></li>' for d in days]
        body = (
            '<p><a href="latest/report.html">Latest report</a></p>' if latest else "<p>No report yet.</p>"
        ) + ("<ul>" + "".join(items) + "</ul>" if items else "")
        return f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Athanor reports</title></head><body><h1>Athanor reports</h1>{body}</body></html>"

    @app.get("/{path:path}", response_model=None)
    def serve(path: str) -> FileResponse | RedirectResponse:
        target = (root / path).resolve()
        # resolve() folds any ../ away first, so this refuses every path outside the folder.
        if not target.is_relative_to(root):
            raise HTTPException(status_code=404)
        if target.is_dir() and (target / "report.html").is_file():
            # Relative to the request URL: 'latest/' -> 'report.html', 'latest' -> 'latest/report.html'.
            relative = "report.html" if path.endswith("/") else f"{path.rsplit('/', 1)[-1]}/report.html"
            return RedirectResponse(url=relative)
        if not target.is_file():
            raise HTTPException(status_code=404)
        # latest/ changes every night: browsers must ask again rather than show yesterday's page.
        return FileResponse(target, headers={"Cache-Control": "no-cache"})

    return app


class AthanorPlugin(AirflowPlugin):
    name = "athanor"
    fastapi_apps = [{"app": create_app(reports_dir()), "url_prefix": URL_PREFIX, "name": "Athanor reports"}]
    external_views = [
        {
            "name": "Athanor report",
            # Relative, so the link survives an Airflow served under a base_url prefix.
            "href": f"{URL_PREFIX.lstrip('/')}/latest/report.html",
            "destination": "nav",
            "nav_top_level": True,
            "url_route": "athanor-report",  # shown inside the Airflow UI at /plugin/athanor-report
        }
    ]
