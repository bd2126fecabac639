"""What gpushare writes, and how: JSON and tables as it prints them (`dumps`, `table`), pictures (`picture_target`,
`pyplot`, `save_picture`), and files written atomically, never over anything gpushare did not write.

A target is written only when it is missing, empty, or a previous gpushare output whose files are as gpushare
wrote them: a tree carries a marker (`.gpushare-output.json`, each file's sha256), a single file a seal with the
sha256 of the rest (`seal`: a manifests file its first line, an SVG picture a closing comment, a PNG one a text
chunk before its end). Anything else (a user's file or folder, a chart with edits, a
symbolic link) is refused naming the path, unless `force`: then the old target is renamed to a sibling backup
that the message names, never deleted. Paths a slip of the keyboard can reach (`''`, `.`, `/`, the home
directory, the current directory and its ancestors) are refused even with `force`. The last component of the
target is never followed: a symbolic link there is replaced (with `force`), not written through. The new output
is built beside the target and swapped in with renames, so an error or an interrupt leaves the old one as it
was; write failures name the target, never a temporary file.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import json
import os
import shutil
import struct
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from gpushare.domain import kinds
from gpushare.domain.kinds import VERSION as __version__
from gpushare.errors import GpushareError, InputError, MissingDependency, raise_if_signalled

Item = TypeVar("Item")

MARKER = ".gpushare-output.json"
HEADER = "# gpushare output, sha256 of what follows: "


class OutputError(GpushareError):
    """A target gpushare may not or could not write; the message names the real path."""


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _marker(digests: dict[str, str]) -> str:
    doc = {
        "apiVersion": kinds.API_VERSION,
        "kind": "RenderOutput",
        "generator": f"gpushare {__version__}",
        "files": dict(sorted(digests.items())),
    }
    return json.dumps(doc, indent=2) + "\n"


#: The seal of an SVG picture: a comment after its root element, where XML allows one.
TRAILER = "<!-- gpushare output, sha256 of what precedes: "
#: A PNG picture's last chunk, which its seal goes before.
_IEND = b"\x00\x00\x00\x00IEND\xaeB`\x82"
_PNG_KEYWORD = b"gpushare-sha256"


def _png_text(keyword: bytes, text: str) -> bytes:
    """A PNG tEXt chunk: length, type, keyword NUL text, CRC of type and data."""
    data = keyword + b"\0" + text.encode("latin-1")
    return struct.pack(">I", len(data)) + b"tEXt" + data + struct.pack(">I", zlib.crc32(b"tEXt" + data))


def seal(name: str | Path, body: bytes) -> bytes:
    """The file as gpushare writes it: `body` and a seal in the file's own format saying it is gpushare's and what
    it held, so a later run may replace it while it is unchanged and refuses to once anyone edited it."""
    suffix = Path(name).suffix.lower()
    if suffix == ".png":
        if not body.endswith(_IEND):
            raise ValueError("a PNG picture ends with its IEND chunk")
        image = body[: -len(_IEND)]
        return image + _png_text(_PNG_KEYWORD, hashlib.sha256(image).hexdigest()) + _IEND
    digest = hashlib.sha256(body).hexdigest()
    if suffix == ".svg":
        return body + f"{TRAILER}{digest} -->\n".encode()
    return f"{HEADER}{digest}\n".encode() + body


def _sealed_body(name: str | Path, data: bytes) -> bytes | None:
    """What a file sealed by gpushare held before its seal, if it carries one where `seal` puts it."""
    suffix = Path(name).suffix.lower()
    if suffix == ".png":
        size = len(_png_text(_PNG_KEYWORD, "0" * 64)) + len(_IEND)
        return data[:-size] + _IEND if len(data) > size else None
    if suffix == ".svg":
        start = data.rfind(TRAILER.encode())
        return data[:start] if start >= 0 else None
    first, newline, rest = data.partition(b"\n")
    return rest if newline and first.startswith(HEADER.encode()) else None


def _absolute(target: Path) -> Path:
    """The target's absolute path, its directory resolved but the last component not followed."""
    absolute = Path(os.path.abspath(target))
    return absolute.parent.resolve() / absolute.name if absolute.name else absolute


def _never(raw: str, target: Path, field: str) -> None:
    """Paths refused even with force: one slip there would replace a home, a project or a whole disk."""
    if raw.strip() in ("", ".", "..", "/", "~"):
        raise InputError(field, raw, "a new or gpushare-written path, not the current, parent or root directory")
    resolved = target.resolve()
    cwd = Path.cwd().resolve()
    protected = {cwd, *cwd.parents, Path.home().resolve(), Path(resolved.anchor)}
    if resolved in protected:
        raise InputError(
            field, raw, f"a path other than {resolved}: the root, home and current directory and its parents"
        )


def _tree_is_ours(target: Path) -> bool:
    """A directory holding exactly what gpushare wrote there (any edit, extra file or link makes it the user's)."""
    marker = target / MARKER
    if marker.is_symlink() or not marker.is_file():
        return False
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8")).get("files")
    except (OSError, ValueError, AttributeError):
        return False
    if not isinstance(recorded, dict):
        return False
    found = set()
    for root, dirs, names in os.walk(target):
        for name in names + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            path = Path(root, name)
            rel = path.relative_to(target).as_posix()
            if rel == MARKER:
                continue
            if path.is_symlink() or rel not in recorded:
                return False
            try:
                if hashlib.sha256(path.read_bytes()).hexdigest() != recorded[rel]:
                    return False
            except OSError:
                return False
            found.add(rel)
    return found == set(recorded)


def _file_is_ours(target: Path) -> bool:
    try:
        data = target.read_bytes()
    except OSError:
        return False
    body = _sealed_body(target, data)
    return body is not None and seal(target, body) == data


@dataclass(frozen=True)
class Plan:
    """What writing the target does to what is there: nothing, replace gpushare's own output, or keep a backup."""

    target: Path
    exists: bool
    backup: Path | None  # where the old target goes when it is not (only) gpushare's


def plan(
    output: str | Path, tree: bool, force: bool = False, field: str = "--output", force_flag: str | None = "--force"
) -> Plan:
    """Decide, before anything is written, whether and how the target may be written; raise if it may not. `field`
    names the flag that gave the path, `force_flag` the one that would keep a backup (None: the command has none)."""
    raw = str(output)
    target = _absolute(Path(raw).expanduser())
    _never(raw, target, field)
    if not os.path.lexists(target):
        return Plan(target, False, None)
    link = target.is_symlink()
    if not link and tree and target.is_dir() and (not any(target.iterdir()) or _tree_is_ours(target)):
        return Plan(target, True, None)
    if not link and not tree and target.is_file() and _file_is_ours(target):
        return Plan(target, True, None)
    if not force:
        what = (
            "a symbolic link (gpushare never writes through one)"
            if link
            else "a directory gpushare did not write, or one with changes since"
            if target.is_dir()
            else "a file gpushare did not write, or one with changes since"
        )
        keep = f" ({force_flag} keeps it as a backup beside it)" if force_flag else ""
        raise InputError(
            field, raw, f"a missing or empty path, or an unchanged gpushare output; {target} is {what}{keep}"
        )
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = target.with_name(f"{target.name}.gpushare-backup-{stamp}")
    n = 1
    while os.path.lexists(backup):
        backup = target.with_name(f"{target.name}.gpushare-backup-{stamp}-{n}")
        n += 1
    return Plan(target, True, backup)


@contextlib.contextmanager
def _failures(target: Path) -> Iterator[None]:
    """OS errors name the target and say why, never the temporary path they happened on."""
    try:
        yield
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from None


def _make_parent(target: Path) -> None:
    existing = next(p for p in target.parents if os.path.lexists(p))
    if not existing.is_dir():
        raise OutputError(f"cannot write {target}: {existing} is not a directory")
    target.parent.mkdir(parents=True, exist_ok=True)


def _swap(new: Path, step: Plan) -> None:
    """Put `new` in place of the target: the old one goes to the backup, or is removed once the new is in."""
    raise_if_signalled()  # an interrupt a finalizer swallowed still leaves nothing written
    target = step.target
    if not step.exists:
        os.rename(new, target)
        return
    if step.backup is None and new.is_file():
        os.replace(new, target)  # one file over gpushare's own: atomic
        return
    if step.backup is not None:
        os.rename(target, step.backup)
        os.rename(new, target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
    os.rename(target, old / "previous")
    try:
        os.rename(new, target)
    except BaseException:
        os.rename(old / "previous", target)
        raise
    finally:
        shutil.rmtree(old, ignore_errors=True)


class Staged:
    """A tree being built beside its target: each file written whole or streamed, and hashed as it is written, for
    the marker that later lets gpushare tell its own output from a user's."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.digests: dict[str, str] = {}
        #: How the target was written, once it is (None until the swap).
        self.plan: Plan | None = None

    def _path(self, rel: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def write(self, rel: str, text: str) -> None:
        self._path(rel).write_text(text, encoding="utf-8")
        self.digests[rel] = _sha(text)

    @contextlib.contextmanager
    def stream(self, rel: str) -> Iterator[Callable[[bytes], None]]:
        """A function that appends bytes to the file, for output too large to hold (a cluster's pods)."""
        digest = hashlib.sha256()
        with open(self._path(rel), "wb") as handle:

            def append(chunk: bytes) -> None:
                handle.write(chunk)
                digest.update(chunk)

            yield append
        self.digests[rel] = digest.hexdigest()


@contextlib.contextmanager
def staged_tree(output: str | Path, force: bool = False, field: str = "--output") -> Iterator[Staged]:
    """A directory target written as one swap: the files go to a staging directory beside it, then the marker, then
    the renames; an error or an interrupt on the way removes the staging directory and leaves the target as it
    was."""
    step = plan(output, tree=True, force=force, field=field)
    with _failures(step.target):
        _make_parent(step.target)
        staging = Path(tempfile.mkdtemp(prefix=f".{step.target.name}.", dir=step.target.parent))
        try:
            staged = Staged(staging)
            yield staged
            (staging / MARKER).write_text(_marker(staged.digests), encoding="utf-8")
            os.chmod(staging, 0o755)
            _swap(staging, step)
            staged.plan = step
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise


def write_tree(output: str | Path, files: dict[str, str], force: bool = False) -> Plan:
    """Write `files` under the target directory, with the marker, as one swap."""
    with staged_tree(output, force) as staged:
        for rel, text in files.items():
            staged.write(rel, text)
    assert staged.plan is not None
    return staged.plan


def write_file(
    output: str | Path,
    content: str | bytes,
    force: bool = False,
    field: str = "--output",
    force_flag: str | None = "--force",
) -> Plan:
    """Write one file (text is written as UTF-8), sealed, as one rename."""
    step = plan(output, tree=False, force=force, field=field, force_flag=force_flag)
    body = content.encode("utf-8") if isinstance(content, str) else content
    with _failures(step.target):
        _make_parent(step.target)
        fd, tmp = tempfile.mkstemp(prefix=f".{step.target.name}.", dir=step.target.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(seal(step.target, body))
            os.chmod(tmp, 0o644)
            _swap(Path(tmp), step)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return step


# --- text ------------------------------------------------------------------------------------------------------------


def dumps(doc: Any) -> str:
    """`doc` as indented JSON text (what `json.dumps(doc, indent=2, ensure_ascii=False)` means). A placement of
    100,000 pods is tens of megabytes of JSON: msgspec writes it in C, where the standard library's indenting writer
    runs in Python (seconds)."""
    import msgspec  # imported on first use: the commands that print no JSON never load it

    try:
        return msgspec.json.format(msgspec.json.encode(doc), indent=2).decode()
    except (TypeError, msgspec.EncodeError):  # a value msgspec does not encode: the standard library may
        return json.dumps(doc, indent=2, ensure_ascii=False)


def alike(items: Iterable[Item], same: Callable[[Item, Item], bool]) -> list[tuple[Item, int]]:
    """Items in order, each run of items `same` as the run's first told once with its count: a burst's hundred
    identical rows are one."""
    runs: list[tuple[Item, int]] = []
    for item in items:
        if runs and same(runs[-1][0], item):
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((item, 1))
    return runs


def counted_key(key: str, count: int) -> str:
    """A row's first column for a run of `count` alike items (`alike`)."""
    return key if count == 1 else f"{key} and {count - 1} more alike"


def replica_stem(namespace: str, name: str) -> tuple[str, str]:
    """A pod's workload as the dry run names replicas: its namespace and name without the `-<i>` its controller
    added (the pod's own name for a bare Pod)."""
    stem, _, index = name.rpartition("-")
    return namespace, stem if stem and index.isdigit() else name


def table(rows: list[list[str]]) -> list[str]:
    """Rows as aligned columns, two spaces apart, no trailing blanks (the first row is the header, if any)."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


# --- pictures --------------------------------------------------------------------------------------------------------


def picture_target(path: str | Path, field: str) -> Path:
    """A picture's path, refused before any work when gpushare cannot or may not write it: not a .png or .svg name,
    no matplotlib, or a file there that gpushare did not write (or that was changed since; pictures take no
    --force)."""
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg"):
        raise InputError(field, str(path), "a .png or .svg file name")
    if importlib.util.find_spec("matplotlib") is None:
        raise _no_matplotlib(field)
    plan(path, tree=False, field=field, force_flag=None)
    return path


def pyplot(field: str) -> tuple[Any, Any, Any]:
    """matplotlib's pyplot, Patch and Rectangle, drawing to files only; its absence said in one line."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        matplotlib.rcParams["svg.fonttype"] = "none"  # SVG text stays text: searchable, selectable
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch, Rectangle
    except ImportError:
        raise _no_matplotlib(field) from None
    return plt, Patch, Rectangle


def save_picture(plt: Any, figure: Any, path: Path, field: str) -> Path:
    """The figure written to `path` atomically and sealed as gpushare's, room kept for the legend below."""
    figure.tight_layout(rect=(0, 0.07, 1, 1))
    picture = io.BytesIO()
    figure.savefig(picture, format=path.suffix.lower()[1:])
    plt.close(figure)
    return write_file(path, picture.getvalue(), field=field, force_flag=None).target


def _no_matplotlib(field: str) -> MissingDependency:
    return MissingDependency(field, "matplotlib", "pip install 'gpushare[plot]'")
