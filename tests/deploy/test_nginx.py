"""The host's nginx site (config/nginx/craft-apps.conf): nginx accepts it, and its proxy settings
are the Kubernetes example's, word for word."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.deploy.support import NGINX_SITE, resource

BEGIN, END = "# >>> proxy settings", "# <<< proxy settings"


def proxy_settings(text: str) -> list[str]:
    lines = [line.strip() for line in text.splitlines()]
    assert lines.count(BEGIN) == 1 and lines.count(END) == 1, text
    return lines[lines.index(BEGIN) + 1 : lines.index(END)]


def test_the_host_site_and_the_pods_nginx_proxy_alike():
    pod = proxy_settings(resource("ConfigMap", "craft-apps-nginx")["data"]["nginx.conf"])
    host = proxy_settings(NGINX_SITE.read_text())
    assert host == pod
    assert "proxy_request_buffering on;" in host and "client_body_timeout 10s;" in host


def test_nginx_accepts_the_host_site(tmp_path: Path):
    """Included as Debian's nginx.conf includes sites-enabled/*."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    assert Path(nginx).exists(), "nginx is missing: .ci/setup installs Debian's nginx"
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        f"pid {tmp_path}/nginx.pid;\nevents {{}}\nhttp {{\n"
        + "".join(
            f"    {kind}_temp_path {tmp_path}/{kind};\n"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        + f"    include {NGINX_SITE};\n}}\n"
    )
    done = subprocess.run(
        [nginx, "-t", "-e", str(tmp_path / "error.log"), "-p", str(tmp_path), "-c", str(conf)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert "test is successful" in done.stderr
