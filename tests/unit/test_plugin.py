"""The Airflow UI plugin: loads through Airflow's plugin loader, validates, serves the reports folder."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from fastapi.testclient import TestClient

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"


def _load_plugin_module(reports: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    # The app is built at import from ATHANOR_REPORTS, as in the api-server.
    monkeypatch.setenv("ATHANOR_REPORTS", str(reports))
    spec = importlib.util.spec_from_file_location("athanor_plugin_under_test", PLUGINS / "athanor_plugin.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def reports(tmp_path: Path) -> Path:
    root = tmp_path / "reports"
    for day in ("2026-11-29", "2026-11-30", "latest"):
        (root / day).mkdir(parents=True)
        (root / day / "report.html").write_text(f"<!DOCTYPE html><title>{day}</title>")
    (root / "latest" / "recommendations.json").write_text('{"schema_version": "1.0"}')
    (tmp_path / "secret.txt").write_text("not yours")
    return root


@pytest.fixture
def client(reports: Path, monkeypatch: pytest.MonkeyPatch) -> TestClient:
    module = _load_plugin_module(reports, monkeypatch)
    return TestClient(module.AthanorPlugin.fastapi_apps[0]["app"])


def test_airflow_loads_and_registers_the_plugin(reports: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow._shared.plugins_manager import _load_plugins_from_plugin_directory, is_valid_plugin
    from airflow.api_fastapi.app import RESERVED_URL_PREFIXES
    from airflow.api_fastapi.core_api.datamodels.plugins import ExternalViewResponse, FastAPIAppResponse

    monkeypatch.setenv("ATHANOR_REPORTS", str(reports))
    plugins, errors = _load_plugins_from_plugin_directory(plugins_folder=str(PLUGINS))
    sys.modules.pop("athanor_plugin", None)
    assert errors == {}
    (plugin,) = [p for p in plugins if p.name == "athanor"]
    assert is_valid_plugin(type(plugin))
    (app,) = plugin.fastapi_apps
    assert not any(app["url_prefix"].startswith(p) for p in RESERVED_URL_PREFIXES)
    FastAPIAppResponse(app=type(app["app"]).__name__, url_prefix=app["url_prefix"], name=app["name"])
    (view,) = plugin.external_views
    parsed = ExternalViewResponse(**view)  # the shape the UI's /plugins endpoint serves
    assert parsed.href == "athanor/latest/report.html"
    assert parsed.href.startswith(app["url_prefix"].lstrip("/") + "/")  # the link points into the app


def test_serves_the_latest_report(client: TestClient) -> None:
    response = client.get("/latest/report.html")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["cache-control"] == "no-cache"
    assert "<title>latest</title>" in response.text
    assert client.get("/latest/recommendations.json").json() == {"schema_version": "1.0"}


def test_index_lists_days_newest_first(client: TestClient) -> None:
    text = client.get("/").text
    assert 'href="latest/report.html"' in text
    assert text.index("2026-11-30") < text.index("2026-11-29")


def test_folder_redirects_to_its_report(client: TestClient) -> None:
    response = client.get("/latest", follow_redirects=False)
    assert response.status_code == 307
    assert response.headers["location"] == "latest/report.html"
    assert client.get("/latest/", follow_redirects=False).headers["location"] == "report.html"


@pytest.mark.parametrize(
    "path", ["/../secret.txt", "/%2e%2e/secret.txt", "/latest/../../secret.txt", "/nope.html"]
)
def test_nothing_outside_the_reports_folder(client: TestClient, path: str) -> None:
    assert client.get(path).status_code == 404


def test_no_reports_yet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = _load_plugin_module(tmp_path / "missing", monkeypatch)
    client = TestClient(module.AthanorPlugin.fastapi_apps[0]["app"])
    assert "No report yet" in client.get("/").text
    assert client.get("/latest/report.html").status_code == 404
