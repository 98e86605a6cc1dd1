"""Fetch one file from PyPI by its permanent address and check its SHA-256.

`.ci/run` takes test-only jars from old source distributions this way. `pip download`
would first run the distribution's setup.py to read its metadata, and a 2018 setup.py
fails under today's build tools (pyspark 2.4.8's calls a pypandoc function that no
longer exists), so the file is fetched as bytes instead.

    python .ci/fetch.py URL SHA256 DEST
"""

from __future__ import annotations

import hashlib
import sys
import urllib.request
from pathlib import Path


def fetch(url: str, sha256: str, dest: Path) -> str | None:
    """Write the file at `url` to `dest` if its digest is `sha256`; else why not."""
    partial = dest.with_name(dest.name + ".part")
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=180) as response, open(partial, "wb") as out:
            while chunk := response.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        return f"cannot fetch {url}: {exc}"
    if digest.hexdigest() != sha256:
        partial.unlink()
        return f"{url}: SHA-256 {digest.hexdigest()}, expected {sha256}"
    partial.replace(dest)
    return None


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: python .ci/fetch.py URL SHA256 DEST")
    problem = fetch(sys.argv[1], sys.argv[2], Path(sys.argv[3]))
    if problem:
        sys.exit(f"error: {problem}")
