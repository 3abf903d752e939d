"""Deterministic archives: the same inputs give the same wheel and sdist bytes.

setuptools leaves file order, timestamps and modes to the build machine.  We
rewrite the archive it made: entries sorted (dist-info last, RECORD at the
very end), every timestamp set to SOURCE_DATE_EPOCH (default 1980-01-01),
modes normalized to 0644/0755, and RECORD recomputed for what we added.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import os
import tarfile
import time
import zipfile
from collections.abc import Mapping
from pathlib import Path

ZIP_EPOCH = 315532800  # 1980-01-01T00:00:00Z, the earliest time a zip can hold


def source_date_epoch() -> int:
    raw = os.environ.get("SOURCE_DATE_EPOCH", "")
    try:
        return max(int(raw), ZIP_EPOCH) if raw else ZIP_EPOCH
    except ValueError:
        return ZIP_EPOCH


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def _wheel_order(name: str, dist_info: str) -> tuple[int, str]:
    if name == f"{dist_info}/RECORD":
        return (2, name)
    return (1 if name.startswith(dist_info + "/") else 0, name)


def rewrite_wheel(path: Path, extra: Mapping[str, bytes]) -> None:
    """Add ``extra`` files (archive path -> bytes) and normalize the wheel in place."""
    files: dict[str, tuple[bytes, bool]] = {}
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            executable = bool((info.external_attr >> 16) & 0o111)
            files[info.filename] = (zf.read(info), executable)
    records = [n for n in files if n.endswith(".dist-info/RECORD")]
    if len(records) != 1:
        raise ValueError(f"{path.name}: expected one .dist-info/RECORD, found {records}")
    dist_info = records[0].rsplit("/", 1)[0]
    del files[records[0]]
    for name, data in extra.items():
        files[name] = (data, False)

    names = sorted(files, key=lambda n: _wheel_order(n, dist_info))
    record_lines = [f"{n},{_record_hash(files[n][0])},{len(files[n][0])}" for n in names]
    record_lines.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = (("\n".join(record_lines) + "\n").encode(), False)
    names.append(f"{dist_info}/RECORD")

    stamp = time.gmtime(source_date_epoch())[:6]
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as out:
        for name in names:
            data, executable = files[name]
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o100755 if executable else 0o100644) << 16
            info.create_system = 3  # unix, so the modes above are honoured
            out.writestr(info, data, compresslevel=9)
    os.replace(tmp, path)


def rewrite_sdist(path: Path, extra: Mapping[str, bytes]) -> None:
    """Add ``extra`` files (paths relative to the sdist's top folder) and normalize the tarball."""
    epoch = source_date_epoch()
    members: dict[str, tuple[tarfile.TarInfo, bytes | None]] = {}
    with tarfile.open(path, "r:gz") as tf:
        top = None
        for m in tf.getmembers():
            top = top or m.name.split("/", 1)[0]
            data = tf.extractfile(m).read() if m.isfile() else None  # type: ignore[union-attr]
            members[m.name] = (m, data)
    assert top is not None, f"{path.name} is empty"
    for rel, data in extra.items():
        info = tarfile.TarInfo(f"{top}/{rel}")
        members[info.name] = (info, data)

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as out:
        for name in sorted(members):
            info, data = members[name]
            info.mtime = epoch
            info.pax_headers = {}
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if info.isdir():
                info.mode = 0o755
                out.addfile(info)
            elif data is not None:
                info.mode = 0o755 if info.mode & 0o111 else 0o644
                info.size = len(data)
                out.addfile(info, io.BytesIO(data))
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write(buf.getvalue())
    os.replace(tmp, path)
