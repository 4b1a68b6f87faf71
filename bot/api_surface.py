"""What one Rust file offers to other crates: its modules, `pub use` re-exports, public items, enum variants
and every public function's and method's parameters (names and types, as written), read with tree-sitter.

Facts only, for checking analyses (`bot/example_check.py`): no bodies, no doc text. The shape is plain JSON
so that the ecosystem build can keep it per file version (`ecosystem.api.jsonl.xz`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import tree_sitter_rust
from tree_sitter import Language, Node, Parser

_RUST = Language(tree_sitter_rust.language())
_SPACES = re.compile(r"\s+")
_ITEM_KINDS = {
    "struct_item": "struct",
    "enum_item": "enum",
    "trait_item": "trait",
    "type_item": "type",
    "const_item": "const",
    "static_item": "static",
    "union_item": "union",
}

# One scope (the file's root, or an inline `mod NAME { ... }` under it, keyed `a::b`):
#   mods:  [[name, public]]          child modules declared there (inline ones have their own scope)
#   uses:  [[path, alias, public]]   alias "*" for a glob, else the name it binds
#   items: [[name, kind]]            public structs, enums, traits, types, consts, statics, free functions
# and for the file:
#   fns:      [[scope, owner, name, self, params]]   owner "" for a free function; self "" when none;
#                                                    params [[name, type], ...]
#   variants: [[scope, enum, [names]]]
FileApi = dict[str, Any]


def _text(node: Node, data: bytes) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", errors="replace")


def _one_line(text: str) -> str:
    return _SPACES.sub(" ", text).strip().replace("< ", "<").replace(" >", ">")


def _visibility(node: Node, data: bytes) -> str | None:
    for child in node.children:
        if child.type == "visibility_modifier":
            return _text(child, data).replace(" ", "")
    return None


def _is_test_only(node: Node, data: bytes) -> bool:
    """`#[cfg(test)]` (or `#[test]`) right above the item."""
    before = node.prev_named_sibling
    while before is not None and before.type in ("attribute_item", "line_comment", "block_comment"):
        if before.type == "attribute_item":
            attribute = _text(before, data).replace(" ", "")
            if attribute in ("#[test]", "#[cfg(test)]") or attribute.startswith("#[cfg(all(test"):
                return True
        before = before.prev_named_sibling
    return False


def use_paths(node: Node, data: bytes, prefix: str) -> Iterator[tuple[str, str]]:
    """(path, alias) for every name a use tree binds; alias "*" for a glob."""
    kind = node.type
    if kind in ("identifier", "crate", "self", "super", "scoped_identifier", "metavariable"):
        path = _text(node, data).replace(" ", "")
        full = f"{prefix}::{path}" if prefix else path
        name = full.rsplit("::", 1)[-1]
        if name == "self":  # `use a::{self}` binds `a`
            full = full.rsplit("::", 1)[0]
            name = full.rsplit("::", 1)[-1]
        yield full, name
    elif kind == "use_as_clause":
        target, alias = node.child_by_field_name("path"), node.child_by_field_name("alias")
        if target is not None and alias is not None:
            text = _text(target, data).replace(" ", "")
            yield (f"{prefix}::{text}" if prefix else text), _text(alias, data)
    elif kind == "use_wildcard":
        text = _text(node, data).replace(" ", "").removesuffix("*").removesuffix("::")
        yield (f"{prefix}::{text}" if prefix and text else text or prefix), "*"
    elif kind == "scoped_use_list":
        head, items = node.child_by_field_name("path"), node.child_by_field_name("list")
        inner = _text(head, data).replace(" ", "") if head is not None else ""
        joined = f"{prefix}::{inner}" if prefix and inner else inner or prefix
        if items is not None:
            yield from use_paths(items, data, joined)
    elif kind == "use_list":
        for child in node.named_children:
            yield from use_paths(child, data, prefix)


def _parameters(node: Node | None, data: bytes) -> tuple[str, list[list[str]]]:
    receiver = ""
    params: list[list[str]] = []
    if node is None:
        return receiver, params
    for child in node.named_children:
        if child.type == "self_parameter":
            receiver = _one_line(_text(child, data))
        elif child.type == "parameter":
            pattern, kind = child.child_by_field_name("pattern"), child.child_by_field_name("type")
            name = _one_line(_text(pattern, data)) if pattern is not None else "_"
            params.append(
                [name.removeprefix("mut "), _one_line(_text(kind, data)) if kind is not None else ""]
            )
        elif child.type in ("variadic_parameter", "type_identifier", "generic_type", "reference_type"):
            params.append(["_", _one_line(_text(child, data))])
    return receiver, params


def _type_head(node: Node | None, data: bytes) -> str:
    """`Autodiff<B, C>` -> `Autodiff`, `crate::a::B` -> `B`, `&T` -> `T`."""
    if node is None:
        return ""
    text = _one_line(_text(node, data)).lstrip("&").removeprefix("mut ").removeprefix("dyn ")
    return text.split("<", 1)[0].rsplit("::", 1)[-1].strip()


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.scopes: dict[str, dict[str, list[list[Any]]]] = {}
        self.fns: list[list[Any]] = []
        self.variants: list[list[Any]] = []

    def scope(self, key: str) -> dict[str, list[list[Any]]]:
        return self.scopes.setdefault(key, {"mods": [], "uses": [], "items": []})

    def read(self, container: Node, key: str) -> None:
        scope = self.scope(key)
        data = self.data
        for node in container.named_children:
            kind = node.type
            if _is_test_only(node, data):
                continue
            public = _visibility(node, data) == "pub"
            name_node = node.child_by_field_name("name")
            name = _text(name_node, data) if name_node is not None else ""
            if kind == "mod_item":
                scope["mods"].append([name, public])
                body = node.child_by_field_name("body")
                if body is not None:
                    self.read(body, f"{key}::{name}" if key else name)
            elif kind == "use_declaration" and public:
                argument = node.child_by_field_name("argument")
                if argument is not None:
                    scope["uses"].extend([path, alias, True] for path, alias in use_paths(argument, data, ""))
            elif kind in ("function_item", "function_signature_item") and public:
                scope["items"].append([name, "fn"])
                self.function(node, key, "")
            elif kind in _ITEM_KINDS and public:
                scope["items"].append([name, _ITEM_KINDS[kind]])
                if kind == "enum_item":
                    body = node.child_by_field_name("body")
                    names = [
                        _text(v.child_by_field_name("name"), data)  # type: ignore[arg-type]
                        for v in (body.named_children if body is not None else [])
                        if v.type == "enum_variant" and v.child_by_field_name("name") is not None
                    ]
                    self.variants.append([key, name, names])
                elif kind == "trait_item":
                    self.members(node, key, name, every=True)
            elif kind == "impl_item":
                owner = _type_head(node.child_by_field_name("type"), data)
                # A trait's methods are callable wherever the trait is: no `pub` on them.
                self.members(node, key, owner, every=node.child_by_field_name("trait") is not None)

    def members(self, node: Node, key: str, owner: str, *, every: bool) -> None:
        body = node.child_by_field_name("body")
        if body is None or not owner:
            return
        for member in body.named_children:
            if member.type not in ("function_item", "function_signature_item"):
                continue
            if every or _visibility(member, self.data) == "pub":
                self.function(member, key, owner)

    def function(self, node: Node, key: str, owner: str) -> None:
        name = node.child_by_field_name("name")
        if name is None:
            return
        receiver, params = _parameters(node.child_by_field_name("parameters"), self.data)
        self.fns.append([key, owner, _text(name, self.data), receiver, params])


def read_file_api(text: str) -> FileApi:
    """The public surface of one Rust file (see `FileApi`); code under `#[cfg(test)]` is left out."""
    data = text.removeprefix("\ufeff").encode("utf-8", "surrogatepass")
    reader = _Reader(data)
    reader.read(Parser(_RUST).parse(data).root_node, "")
    scopes = {key: scope for key, scope in reader.scopes.items() if any(scope.values())}
    api: FileApi = {}
    if scopes:
        api["scopes"] = scopes
    if reader.fns:
        api["fns"] = reader.fns
    if reader.variants:
        api["variants"] = reader.variants
    return api
