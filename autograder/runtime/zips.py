"""Reading a zip that a student (or a class export) handed in, before and while zipfile parses it.

The one set of rules for a submission zip (`autograder.runtime.intake`) and a class or export zip
(`autograder.batch.submissions`): the central directory is measured before zipfile builds an object per
record (`zip_directory_problem`, `open_zip`); a member is skipped for what its name or type is
(`member_skip`: folders, absolute or '..' paths, hidden parts, links) and read only when stored or deflate
and not encrypted (`member_problem`).
"""

from __future__ import annotations

import os
import struct
import zipfile
from pathlib import PurePosixPath
from typing import IO

SKIPPED_DIRS = ("__MACOSX", "__pycache__")
MAX_ZIP_MEMBERS = 20000  # a zip with more entries is not opened (its directory alone costs memory)
MAX_ZIP_DIRECTORY_BYTES = 16 * 2**20  # a zip whose central directory is larger is not opened
# the zip methods read: zipfile bounds what deflate returns per read, not what bzip2 or lzma return (one
# read of 64 KiB of bzip2 can be gigabytes), so a member compressed otherwise is not read
ZIP_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
OTHER_ZIP_METHODS = {zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "lzma"}  # named in the sentence, never read
_ZIP64_END_BYTES = 56 + 20  # the zip64 end record and its locator, between the directory and the end record
# zipfile's own reader of the end-of-central-directory record (zip64 included): the pre-check reads what
# zipfile will read. Private, so looked up here once: a Python without it fails at import, not silently.
_END_RECORD = vars(zipfile)["_EndRecData"]


def hidden(part: str) -> bool:
    """A name part the intake passes over: a dot file or folder, or one of SKIPPED_DIRS."""
    return part.startswith(".") or part in SKIPPED_DIRS


def member_path(info: zipfile.ZipInfo) -> PurePosixPath:
    """A zip member's path, with "\\" read as "/" (what zips made on Windows may hold)."""
    return PurePosixPath(info.filename.replace("\\", "/"))


def member_skip(info: zipfile.ZipInfo) -> str:
    """Why a zip member is passed over whatever its name, else '': "folder" (a folder entry, or no name),
    "unsafe" (an absolute path or a '..'), "hidden" (a part starting with "." or a SKIPPED_DIRS name),
    "link" (stored as a symbolic link). The one rule of the intake and of a class zip's unpacking; a member
    not skipped is still read only when `member_problem` says nothing."""
    name = member_path(info)
    if info.filename.replace("\\", "/").endswith("/") or not name.parts:
        return "folder"
    if name.is_absolute() or ".." in name.parts:
        return "unsafe"
    if any(hidden(part) for part in name.parts):
        return "hidden"
    if (info.external_attr >> 16) & 0o170000 == 0o120000:  # a symbolic link stored in the zip
        return "link"
    return ""


def member_problem(info: zipfile.ZipInfo) -> str:
    """'' when a zip member may be read (not encrypted, stored or deflate), else why not (words after its name)."""
    if info.flag_bits & 0x1:
        return "is encrypted (password-protected) in the zip; zip your files again without a password"
    if info.compress_type not in ZIP_METHODS:
        method = f"zip method {info.compress_type}"
        if info.compress_type in OTHER_ZIP_METHODS:
            method += f", {OTHER_ZIP_METHODS[info.compress_type]}"
        return (
            f"is compressed with a method the grader does not read ({method}); "
            "zip your files again with the usual (deflate) compression"
        )
    return ""


def zip_directory_problem(
    fh: IO[bytes], max_members: int = MAX_ZIP_MEMBERS, max_bytes: int = MAX_ZIP_DIRECTORY_BYTES
) -> str:
    """'' when zipfile may read this zip's central directory, else why not (words after "The zip").

    zipfile builds a member object for every record of the directory before anyone can count them (5
    million records: 2.6 GB and 37 s), and reads the directory whole. So the end record (zip64 included)
    is read first: more than `max_members` entries declared, or a directory larger than `max_bytes`, is
    refused; then the records' fixed headers are stepped over, at most `max_members` + 1 of them (the
    declared count need not be true). A zip whose end record is unreadable is left to zipfile to refuse.
    """
    try:
        end = _END_RECORD(fh)
        if not end:
            return ""
        entries, size, location = end[4], end[5], end[9]
        if entries > max_members:
            return f"holds {entries} entries, more than the {max_members} the grader opens"
        if size > max_bytes:
            return f"has a directory of {size / 2**20:.0f} MiB, more than the {max_bytes // 2**20} MiB the grader reads"
        start = _directory_start(fh, location, size, zip64=end[0] == b"PK\x06\x06")
        if start < 0:
            return ""
        seen = done = 0
        while done < size:
            fh.seek(start + done)
            head = fh.read(46)
            if len(head) < 46 or head[:4] != b"PK\x01\x02":
                return ""  # damaged: zipfile says so
            seen += 1
            if seen > max_members:
                return f"holds more than the {max_members} entries the grader opens"
            done += 46 + sum(struct.unpack_from("<HHH", head, 28))  # name, extra field and comment lengths
    except (OSError, ValueError, struct.error, zipfile.BadZipFile):
        return ""
    return ""


def _directory_start(fh: IO[bytes], location: int, size: int, *, zip64: bool) -> int:
    """Where zipfile reads the central directory of `size` bytes, -1 when no record is there (damaged: left
    to zipfile). `location` from `_EndRecData` is the end record's offset on a CPython before the
    CVE-2025-8291 fix (October 2025 patch releases; its zipfile then subtracts the zip64 records itself)
    and the zip64 end record's after it: both starts are tried, the first holding a directory record
    (and, for zip64, followed by the zip64 end record, as the directory always is) is taken."""
    starts = [location - size] + ([location - size - _ZIP64_END_BYTES] if zip64 else [])
    for start in starts:
        if start < 0:
            continue
        fh.seek(start)
        if fh.read(4) != b"PK\x01\x02":
            continue
        fh.seek(start + size)
        if zip64 and fh.read(4) != b"PK\x06\x06":
            continue
        return start
    return -1


def is_zip(fd: int) -> bool:
    """Whether the regular file open as `fd` has a zip's end record (read through a new descriptor)."""
    with os.fdopen(os.dup(fd), "rb") as fh:
        return zipfile.is_zipfile(fh)


class ZipRefused(ValueError):
    """A zip whose directory is beyond the caps; the message is words after "The zip"."""


def open_zip(
    fh: IO[bytes], max_members: int = MAX_ZIP_MEMBERS, max_bytes: int = MAX_ZIP_DIRECTORY_BYTES
) -> zipfile.ZipFile:
    """A ZipFile on the open zip `fh`, its directory measured first (`zip_directory_problem`) and its members
    counted after: ZipRefused beyond the caps; a damaged directory raises what zipfile raises (many types).
    `fh` stays the caller's to close (ZipFile leaves a file object it was handed open)."""
    problem = zip_directory_problem(fh, max_members, max_bytes)
    if problem:
        raise ZipRefused(problem)
    fh.seek(0)
    zf = zipfile.ZipFile(fh)
    count = len(zf.infolist())
    if count > max_members:  # the pre-check's walk stops at a damaged record: zipfile may read on
        zf.close()
        raise ZipRefused(f"holds {count} entries, more than the {max_members} the grader opens")
    return zf
