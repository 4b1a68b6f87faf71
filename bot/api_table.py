"""The public API of each harvested release, for checking what an analysis names: which paths resolve
(`burn::tensor::module::avg_pool2d`), which methods exist on which types, and their parameters.

Read from the ecosystem build's `ecosystem.api.jsonl.xz` (one row per file, its API per set of releases, as
`bot/api_surface.py` reads it). A release's module tree is built when first asked for: crate roots
(`<crate>/src/lib.rs`), `mod` declarations to files, and `pub use` re-exports (globs and aliases included)
resolved within the release's repository.
"""

from __future__ import annotations

import gzip
import json
import lzma
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

EMBEDDED_API = "data/ecosystem.api.jsonl.xz"
API_SUFFIXES = (".api.jsonl", ".api.jsonl.gz", ".api.jsonl.xz")
XZ_MAGIC = b"\xfd7zXZ\x00"


@dataclass(frozen=True)
class Signature:
    """A public function or method: `owner` is the type or trait of its `impl` (empty for a free function),
    `receiver` its `self` parameter as written (empty when it has none)."""

    repo: str
    ref: str
    file_path: str
    owner: str
    name: str
    receiver: str
    params: tuple[tuple[str, str], ...]

    @property
    def qualified(self) -> str:
        return f"{self.owner}::{self.name}" if self.owner else self.name

    def shown(self) -> str:
        params = [self.receiver] if self.receiver else []
        params += [f"{name}: {kind}" for name, kind in self.params]
        return f"{self.qualified}({', '.join(params)})"


@dataclass(eq=False)
class _Module:
    crate: str
    file_path: str
    scope: str  # the inline module path inside the file ("" for the file itself)
    parent: _Module | None
    api: Mapping[str, Any]
    public: dict[str, list[_Entry]] | None = None
    busy: bool = False
    external_glob: bool = False  # a `pub use other_crate::path::*`: any name may come through it

    @property
    def folder(self) -> str:
        """Where the files of this module's out-of-line children are."""
        path = self.file_path
        name = path.rsplit("/", 1)[-1]
        base = path.rsplit("/", 1)[0] if name in ("lib.rs", "main.rs", "mod.rs") else path.removesuffix(".rs")
        return "/".join([base, *self.scope.split("::")]) if self.scope else base

    def scope_table(self) -> Mapping[str, list[list[Any]]]:
        scopes: Mapping[str, Mapping[str, list[list[Any]]]] = self.api.get("scopes", {})
        return scopes.get(self.scope, {})


@dataclass(frozen=True, eq=False)
class _Entry:
    # "mod", an item kind (fn, struct, enum, trait, type, const, static, union), or "extern": a name
    # re-exported from a crate of another repository, which these tables cannot look into.
    kind: str
    name: str
    module: _Module


@dataclass
class ReleaseApi:
    """One release's crates, modules and signatures."""

    repo: str
    ref: str
    files: dict[str, tuple[str, Mapping[str, Any]]]  # path -> (crate, api)
    roots: dict[str, _Module] = field(default_factory=dict)  # crate ident -> root module
    _modules: dict[tuple[str, str], _Module] = field(default_factory=dict)
    _reachable: dict[str, list[_Module]] | None = None
    _items: dict[str, list[_Entry]] | None = None
    _by_owner: dict[tuple[str, str], list[Signature]] | None = None
    _by_name: dict[str, list[Signature]] | None = None

    def __post_init__(self) -> None:
        for path, (crate, api) in self.files.items():
            if path.endswith("src/lib.rs") and path.count("/src/") <= 1:
                ident = crate.replace("-", "_")
                self.roots.setdefault(ident, self._module(crate, path, "", None, api))

    def _module(
        self, crate: str, path: str, scope: str, parent: _Module | None, api: Mapping[str, Any]
    ) -> _Module:
        key = (path, scope)
        module = self._modules.get(key)
        if module is None:
            module = self._modules[key] = _Module(crate, path, scope, parent, api)
        return module

    def child(self, module: _Module, name: str) -> _Module | None:
        """The module `name` declared in `module` (inline, or in its own file), public or not."""
        declared = {row[0] for row in module.scope_table().get("mods", [])}
        if name not in declared:
            return None
        scope = f"{module.scope}::{name}" if module.scope else name
        if scope in module.api.get("scopes", {}):
            return self._module(module.crate, module.file_path, scope, module, module.api)
        for path in (f"{module.folder}/{name}.rs", f"{module.folder}/{name}/mod.rs"):
            found = self.files.get(path)
            if found is not None:
                return self._module(found[0], path, "", module, found[1])
        return None

    # -- namespaces --

    def public_names(self, module: _Module) -> dict[str, list[_Entry]]:
        """What other crates can name through `module`: its public child modules and items, and what its
        `pub use`s bring."""
        if module.public is not None:
            return module.public
        if module.busy:  # a cycle of re-exports: what is known so far
            return {}
        module.busy = True
        names: dict[str, list[_Entry]] = defaultdict(list)
        table = module.scope_table()
        for name, public in table.get("mods", []):
            if public and (child := self.child(module, name)) is not None:
                names[name].append(_Entry("mod", name, child))
        for name, kind in table.get("items", []):
            names[name].append(_Entry(kind, name, module))
        for path, alias, _ in table.get("uses", []):
            segments = path.split("::")
            resolved = self._resolve_use(module, segments)
            if not resolved and self._external(module, segments[0]):
                # Re-exported from a crate these tables do not hold (burn-wgpu's `pub use cubecl::...`, the
                # `half` crate's `f16`): the name exists, what it is cannot be checked here.
                if alias == "*":
                    module.external_glob = True
                else:
                    names[alias].append(_Entry("extern", alias, module))
            for entry in resolved:
                if alias == "*":
                    if entry.kind == "mod":
                        for name, entries in self.public_names(entry.module).items():
                            names[name].extend(entries)
                    elif entry.kind == "enum":
                        for variant in self.variants(entry):
                            names[variant].append(_Entry("variant", variant, entry.module))
                else:
                    names[alias].append(_Entry(entry.kind, entry.name, entry.module))
        module.busy = False
        module.public = dict(names)
        return module.public

    def _first(self, module: _Module, segment: str) -> list[_Entry]:
        """What the first segment of a path written in `module` names."""
        if segment == "crate":
            root = self.roots.get(module.crate.replace("-", "_"))
            return [_Entry("mod", segment, root)] if root is not None else []
        if segment == "self":
            return [_Entry("mod", segment, module)]
        if segment == "super":
            return [_Entry("mod", segment, module.parent)] if module.parent is not None else []
        child = self.child(module, segment)
        if child is not None:
            return [_Entry("mod", segment, child)]
        own = self.public_names(module).get(segment) if not module.busy else None
        if own:
            return own
        root = self.roots.get(segment)
        return [_Entry("mod", segment, root)] if root is not None else []

    def _external(self, module: _Module, first: str) -> bool:
        """Whether a `use` path starting with `first`, written in `module`, starts in a crate of another
        repository (not one of this release's crates, nor a module or item of its own)."""
        if first in ("crate", "self", "super", "std", "core", "alloc") or first in self.roots:
            return False
        if self.child(module, first) is not None:
            return False
        return not any(row[0] == first for row in module.scope_table().get("items", []))

    def _resolve_use(self, module: _Module, segments: Sequence[str]) -> list[_Entry]:
        segments = [s for s in segments if s]
        if not segments:
            return []
        current = self._first(module, segments[0])
        for segment in segments[1:]:
            current = self._step(current, segment, module.crate)
        return current

    def _step(self, entries: Iterable[_Entry], segment: str, crate: str | None = None) -> list[_Entry]:
        found: list[_Entry] = []
        for entry in entries:
            if entry.kind == "extern":  # inside another repository's item or module: not checked
                found.append(_Entry("extern", segment, entry.module))
                continue
            if entry.kind == "mod":
                if segment == "super" and entry.module.parent is not None:
                    found.append(_Entry("mod", segment, entry.module.parent))
                    continue
                found.extend(self.public_names(entry.module).get(segment, []))
                # Inside its own crate a path may go through private modules.
                if crate is not None and entry.module.crate == crate and not found:
                    child = self.child(entry.module, segment)
                    if child is not None:
                        found.append(_Entry("mod", segment, child))
                if not found and entry.module.external_glob:
                    found.append(_Entry("extern", segment, entry.module))
            elif entry.kind == "enum" and segment in self.variants(entry):
                found.append(_Entry("variant", segment, entry.module))
        return found

    def variants(self, entry: _Entry) -> list[str]:
        for scope, enum, names in entry.module.api.get("variants", []):
            if scope == entry.module.scope and enum == entry.name:
                return list(names)
        return []

    def resolve(self, segments: Sequence[str]) -> list[_Entry]:
        """What a path that starts with a crate's name (`burn::tensor::module::avg_pool2d`) names."""
        root = self.roots.get(segments[0]) if segments else None
        if root is None:
            return []
        current = [_Entry("mod", segments[0], root)]
        for segment in segments[1:]:
            current = self._step(current, segment)
        return current

    # -- indexes over what is reachable --

    def reachable_modules(self) -> dict[str, list[_Module]]:
        """Every module other crates can reach, by each name it is reachable under."""
        if self._reachable is None:
            by_name: dict[str, list[_Module]] = defaultdict(list)
            items: dict[str, list[_Entry]] = defaultdict(list)
            seen: set[int] = set()
            queue = [(ident, root) for ident, root in self.roots.items()]
            while queue:
                name, module = queue.pop()
                by_name[name].append(module)
                if id(module) in seen:
                    continue
                seen.add(id(module))
                for child_name, entries in self.public_names(module).items():
                    for entry in entries:
                        if entry.kind == "mod":
                            queue.append((child_name, entry.module))
                        else:
                            items[child_name].append(entry)
            self._reachable, self._items = dict(by_name), dict(items)
        return self._reachable

    def items_named(self, name: str) -> list[_Entry]:
        self.reachable_modules()
        return (self._items or {}).get(name, [])

    def _signatures(self) -> Iterator[Signature]:
        for path, (_, api) in self.files.items():
            for _scope, owner, name, receiver, params in api.get("fns", []):
                yield Signature(
                    self.repo, self.ref, path, owner, name, receiver, tuple((p[0], p[1]) for p in params)
                )

    def methods(self, owner: str | None, name: str) -> list[Signature]:
        """Functions named `name` of the impls and traits of `owner` (any owner when None)."""
        if self._by_owner is None or self._by_name is None:
            self._by_owner, self._by_name = defaultdict(list), defaultdict(list)
            for signature in self._signatures():
                self._by_owner[(signature.owner, signature.name)].append(signature)
                self._by_name[signature.name].append(signature)
        if owner is None:
            return self._by_name.get(name, [])
        return self._by_owner.get((owner, name), [])

    def functions_of(self, entry: _Entry) -> list[Signature]:
        """The signatures of a free function entry."""
        return [
            Signature(
                self.repo,
                self.ref,
                entry.module.file_path,
                "",
                name,
                receiver,
                tuple((param[0], param[1]) for param in params),
            )
            for scope, owner, name, receiver, params in entry.module.api.get("fns", [])
            if scope == entry.module.scope and not owner and name == entry.name
        ]

    def defines(self, name: str) -> list[str]:
        """Where `name` is defined as a function, method, type, trait or enum variant (file paths)."""
        places = [s.file_path for s in self.methods(None, name)]
        for path, (_, api) in self.files.items():
            for scope in api.get("scopes", {}).values():
                if any(item[0] == name for item in scope.get("items", [])):
                    places.append(path)
            for _, enum, names in api.get("variants", []):
                if name in names or name == enum:
                    places.append(path)
        return sorted(set(places))


class ApiTable:
    """Every release's API, from the rows of `ecosystem.api.jsonl.xz`."""

    def __init__(self, rows: Iterable[Mapping[str, Any]]) -> None:
        self._files: dict[tuple[str, str], dict[str, tuple[str, Mapping[str, Any]]]] = defaultdict(dict)
        for row in rows:
            repo, path = str(row["repo"]), str(row["filePath"])
            for version in row.get("versions", []):
                for ref in version.get("refs", []):
                    self._files[(repo, ref)][path] = (str(version.get("crate", "")), version.get("api", {}))
        self._releases: dict[tuple[str, str], ReleaseApi] = {}

    @classmethod
    def from_lines(cls, lines: Iterable[str]) -> ApiTable:
        return cls(json.loads(line) for line in lines if line.strip())

    def __bool__(self) -> bool:
        return bool(self._files)

    def refs(self, repo: str | None = None) -> list[tuple[str, str]]:
        return [key for key in self._files if repo is None or key[0] == repo]

    def release(self, repo: str, ref: str) -> ReleaseApi | None:
        key = (repo, ref)
        if key not in self._files:
            return None
        found = self._releases.get(key)
        if found is None:
            found = self._releases[key] = ReleaseApi(repo, ref, self._files[key])
        return found

    def crate_repos(self) -> dict[str, set[str]]:
        """Crate identifier (`burn_tensor`) -> the repositories that have a crate of that name."""
        repos: dict[str, set[str]] = defaultdict(set)
        for (repo, _), files in self._files.items():
            for crate, _api in files.values():
                if crate:
                    repos[crate.replace("-", "_")].add(repo)
        return repos


def api_table_files(paths: Sequence[Path | str]) -> list[Path]:
    """The API tables beside the given catalog files (`X.api.jsonl[.gz|.xz]` for `X.jsonl[.gz]`) and in the
    given folders."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*.api.jsonl*") if p.name.endswith(API_SUFFIXES)))
        elif path.is_file():
            stem = path.name.removesuffix(".gz").removesuffix(".jsonl").removesuffix(".json")
            found.extend(p for s in API_SUFFIXES if (p := path.with_name(stem + s)).is_file())
    return list(dict.fromkeys(found))


def load_api_table(paths: Sequence[Path | str]) -> ApiTable:
    """The API tables beside `paths`, or the embedded ecosystem's when there is none (examples are
    checked against the ecosystem whatever catalog holds them)."""
    files = api_table_files([p for p in paths if str(p) != "default"])
    if not files:
        embedded = resources.files("bot").joinpath(EMBEDDED_API)
        if not embedded.is_file():
            return ApiTable(())
        return ApiTable.from_lines(_text(embedded.read_bytes()).splitlines())
    lines: list[str] = []
    for file in files:
        lines.extend(_text(file.read_bytes()).splitlines())
    return ApiTable.from_lines(lines)


def _text(data: bytes) -> str:
    """An API table's text: gzipped, xz-compressed (the embedded one: 45 % smaller than gzip) or plain."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    elif data[: len(XZ_MAGIC)] == XZ_MAGIC:
        data = lzma.decompress(data, format=lzma.FORMAT_XZ)
    return data.decode("utf-8")
