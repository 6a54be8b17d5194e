"""Static files are sent by the ASGI application before Django (winni_site/static.py): the same
bytes and caching headers WhiteNoise decides, and a quiet console. Through Django, under uvicorn,
every file printed "StreamingHttpResponse must consume synchronous iterators…" (issue #47.6)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import django.contrib.admin
import httpx
import pytest
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.live

BASE_CSS = Path(django.contrib.admin.__file__).parent / "static" / "admin" / "css" / "base.css"


@pytest.fixture
def staff(transactional_db: Any) -> tuple[str, str]:
    get_user_model().objects.create_superuser("static-root", "root@example.com", "pw-static-123")
    return "static-root", "pw-static-123"


def _log_in(client: httpx.Client, username: str, password: str) -> None:
    client.get("/admin/login/")
    response = client.post("/admin/login/?next=/admin/", data={
        "username": username, "password": password, "csrfmiddlewaretoken": client.cookies["csrftoken"],
        "next": "/admin/"})
    assert response.status_code == 302, response.text[:300]


def test_admin_pages_static_files_and_api_docs_print_no_warning(winni_server: Any, staff: tuple[str, str]):
    log = Path(winni_server.log.name)
    start = log.stat().st_size
    with httpx.Client(base_url=winni_server.url, timeout=30) as client:
        _log_in(client, *staff)
        page = client.get("/admin/conversations/conversation/")
        assert page.status_code == 200
        assets = re.findall(r'(?:href|src)="(/static/[^"]+)"', page.text)
        docs = client.get("/api/docs/")
        assert docs.status_code == 200
        assets += re.findall(r'(?:href|src)="(/static/[^"]+)"', docs.text)
        assert any("swagger" in asset for asset in assets) and any(asset.startswith("/static/admin/") for asset in assets)
        for asset in assets:
            response = client.get(asset)
            assert response.status_code == 200 and response.content, asset

        css = client.get("/static/admin/css/base.css")
        assert css.content == BASE_CSS.read_bytes() and css.headers["content-type"].startswith("text/css")
        assert "x-request-id" in css.headers and css.headers["etag"]
        assert client.get("/static/admin/css/base.css", headers={"If-None-Match": css.headers["etag"]}).status_code == 304
        head = client.head("/static/admin/css/base.css")
        assert head.status_code == 200 and head.content == b""
        assert head.headers["content-length"] == str(BASE_CSS.stat().st_size)
        ranged = client.get("/static/admin/css/base.css", headers={"Range": "bytes=0-9"})
        assert ranged.status_code == 206 and ranged.content == BASE_CSS.read_bytes()[:10]
        assert client.get("/static/no/such/file.css").status_code == 404
    written = log.read_bytes()[start:].decode("utf-8", "replace")
    assert "StreamingHttpResponse" not in written and "synchronous iterators" not in written, written[-2000:]
