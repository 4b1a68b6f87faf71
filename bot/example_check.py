"""Checks of an analysis against the code it talks about: the example fix parses as Rust, each path it names
from the crates involved resolves in a release that raises the record, each call to their functions has the
right number of arguments (and, where the parameters' names and types tell them apart, the right order),
and a claim that something "does not implement" or "no longer has" X holds in those releases.

Pure: the releases' public API comes in as an `ApiTable` (bot/api_table.py), the releases of a record from the
catalog's release table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import tree_sitter_rust
from tree_sitter import Language, Node, Parser

from bot.api_surface import use_paths
from bot.api_table import ApiTable, ReleaseApi, Signature
from bot.releases import ReleaseTable, version_key

_RUST = Language(tree_sitter_rust.language())
_FENCE = re.compile(r"^```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
RUST_FENCES = frozenset({"", "rust", "rs"})
OTHER_FENCES = frozenset({"sh", "bash", "shell", "console", "toml", "text", "txt", "ini", "yaml", "json"})
_WRAP = "fn __example() {\n"
# Methods of std (and of iterators, options, results) that crates of the ecosystem also define with another
# arity: a call of these says nothing about which crate's method is meant.
STD_METHODS = frozenset(
    [
        "clone",
        "unwrap",
        "expect",
        "map",
        "and_then",
        "unwrap_or",
        "unwrap_or_else",
        "unwrap_or_default",
        "ok",
        "err",
        "iter",
        "iter_mut",
        "into_iter",
        "collect",
        "into",
        "try_into",
        "from",
        "to_string",
        "to_owned",
        "as_ref",
        "as_mut",
        "borrow",
        "borrow_mut",
        "len",
        "is_empty",
        "get",
        "get_mut",
        "insert",
        "remove",
        "push",
        "pop",
        "extend",
        "contains",
        "first",
        "last",
        "join",
        "split",
        "lock",
        "read",
        "write",
        "send",
        "recv",
        "try_recv",
        "next",
        "fmt",
        "eq",
        "ne",
        "cmp",
        "partial_cmp",
        "hash",
        "default",
        "drop",
        "min",
        "max",
        "sum",
        "product",
        "filter",
        "fold",
        "zip",
        "rev",
        "enumerate",
        "chain",
        "take",
        "skip",
        "count",
        "spawn",
        "find",
        "any",
        "all",
        "position",
        "sort",
        "sort_by",
        "dedup",
        "retain",
        "as_str",
        "as_slice",
        "to_vec",
        "parse",
        "trim",
        "lines",
        "chars",
        "bytes",
        "format",
        "debug",
        "display",
    ]
)
_CLAIM = re.compile(
    r"\b(?P<verb>does not|doesn't|do not|don't|no longer|never|cannot|can't)\s+"
    r"(?:implement|implements|have|has|provide|provides|define|defines|exist|exists|contain|contains|"
    r"support|supports|differentiate)\b(?P<rest>[^.;:]*)",
    re.IGNORECASE,
)
_NO_LONGER_EXISTS = re.compile(
    r"(?P<name>`?[A-Za-z_][A-Za-z0-9_:]*`?)\s+(?:no longer exists|was removed|has been removed|is gone)",
    re.IGNORECASE,
)
_CODE_NAME = re.compile(r"`?\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+)\b`?")
_THIS_ONE = re.compile(
    r"\b(?:this|the same|that) (?:variant|error|panic|check|message|case)\b", re.IGNORECASE
)
_GONE = re.compile(r"\b(?:removed|no longer|is gone|dropped|deleted)\b", re.IGNORECASE)
# A sentence ends at `.`, `!` or `?` before a space or the end (not inside `0.19` or `a.b()`).
_SENTENCE = re.compile(r"(?:[^.!?\n]|[.!?](?=\S))+(?:[.!?](?=\s|$)|$)")


@dataclass(frozen=True)
class Problem:
    check: str
    reason: str


@dataclass(frozen=True)
class _Call:
    path: tuple[str, ...]  # a function path (`module::f`), or () for a method call
    method: str | None
    args: tuple[Node, ...]
    line: int


def rust_blocks(example: str) -> list[tuple[int, str]]:
    """(first line, code) of each Rust part of an example: its ```rust fences, or the whole text when it has
    none; fences of a shell, TOML or other language are left out."""
    fences = list(_FENCE.finditer(example))
    if not fences:
        return [(1, example)]
    blocks = []
    for fence in fences:
        if fence.group(1).lower() in RUST_FENCES:
            blocks.append((example.count("\n", 0, fence.start(2)) + 1, fence.group(2)))
    return blocks


def unknown_fences(example: str) -> list[str]:
    return [
        f.group(1) for f in _FENCE.finditer(example) if f.group(1).lower() not in RUST_FENCES | OTHER_FENCES
    ]


def _first_error(node: Node) -> Node | None:
    if node.type == "ERROR" or node.is_missing:
        return node
    if not node.has_error:
        return None
    for child in node.children:
        found = _first_error(child)
        if found is not None:
            return found
    return node


def parse_rust(code: str) -> tuple[Node | None, int, str | None]:
    """The tree of a Rust example (a file, or statements as a function body), the number of lines added
    in front of it, and the first syntax error's description when it parses neither way."""
    data = code.encode("utf-8")
    tree = Parser(_RUST).parse(data)
    if not tree.root_node.has_error:
        return tree.root_node, 0, None
    wrapped = Parser(_RUST).parse((_WRAP + code + "\n}\n").encode("utf-8"))
    if not wrapped.root_node.has_error:
        return wrapped.root_node, 1, None
    bad = _first_error(tree.root_node)
    assert bad is not None
    near = data[bad.start_byte : bad.start_byte + 40].decode("utf-8", errors="replace").split("\n")[0]
    what = "missing " + bad.type if bad.is_missing else "cannot parse"
    return None, 0, f"line {bad.start_point.row + 1}: {what} near `{near.strip()}`"


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", errors="replace")


def _walk(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _use_aliases(root: Node) -> dict[str, tuple[str, ...]]:
    """Names the example's `use` declarations bind, to their full paths."""
    aliases: dict[str, tuple[str, ...]] = {}
    data = root.text or b""  # the root starts at byte 0: node offsets index it
    for node in _walk(root):
        if node.type == "use_declaration" and (argument := node.child_by_field_name("argument")) is not None:
            for path, alias in use_paths(argument, data, ""):
                if alias != "*":
                    aliases[alias] = tuple(path.split("::"))
    return aliases


def _own_functions(root: Node) -> set[str]:
    """Functions and closures the example defines itself."""
    names = set()
    for node in _walk(root):
        if node.type == "function_item" and (name := node.child_by_field_name("name")) is not None:
            names.add(_text(name))
        elif node.type == "let_declaration" and (pattern := node.child_by_field_name("pattern")) is not None:
            names.add(_text(pattern))
    return names


def _path_of(node: Node) -> tuple[str, ...]:
    if node.type == "generic_function":
        inner = node.child_by_field_name("function")
        return _path_of(inner) if inner is not None else ()
    text = _text(node)
    # `Tensor::<B, 4>::from_data` -> Tensor::from_data
    text = re.sub(r"::<[^()]*?>", "", text).replace(" ", "")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*", text):
        return ()
    return tuple(text.split("::"))


def _calls(root: Node, shift: int) -> list[_Call]:
    calls = []
    for node in _walk(root):
        if node.type != "call_expression":
            continue
        function, arguments = node.child_by_field_name("function"), node.child_by_field_name("arguments")
        if function is None or arguments is None:
            continue
        args = tuple(arguments.named_children)
        args = tuple(a for a in args if a.type not in ("line_comment", "block_comment"))
        line = node.start_point.row + 1 - shift
        if function.type == "field_expression":
            field = function.child_by_field_name("field")
            if field is not None and field.type == "field_identifier":
                calls.append(_Call((), _text(field), args, line))
        elif function.type in ("identifier", "scoped_identifier", "generic_function"):
            path = _path_of(function)
            if path:
                calls.append(_Call(path, None, args, line))
    return calls


def _bare(name: str) -> str:
    return name.lstrip("_")


def _arity_ok(signature: Signature, count: int, *, ufcs: bool) -> bool:
    return len(signature.params) + (1 if ufcs and signature.receiver else 0) == count


def _order_problem(signatures: Sequence[Signature], args: Sequence[Node], ufcs: bool) -> str | None:
    """An argument named as another parameter of a distinct type (`weight` passed where `mask` goes), or a
    reference passed where a value is taken, in every signature that fits the call."""
    fitting = [s for s in signatures if _arity_ok(s, len(args), ufcs=ufcs)]
    if not fitting:
        return None
    found: list[str] = []
    for signature in fitting:
        params = list(signature.params)
        if ufcs and signature.receiver:
            params.insert(0, ("self", "Self"))
        names = [_bare(name) for name, _ in params]
        problem = None
        for position, arg in enumerate(args):
            text = _text(arg)
            if arg.type == "identifier" and text in names and names.index(text) != position:
                other = names.index(text)
                if params[other][1] != params[position][1]:
                    problem = (
                        f"passes `{text}` as argument {position + 1}, where {signature.qualified} takes "
                        f"`{names[position]}: {params[position][1]}` (`{text}` is argument {other + 1})"
                    )
                    break
            if arg.type == "reference_expression":
                kind = params[position][1]
                if kind[:1].isupper() and "<" in kind and not kind.startswith(("&", "impl ", "Option<&")):
                    problem = (
                        f"passes `{text}` as argument {position + 1}, where {signature.qualified} takes "
                        f"`{names[position]}: {kind}` by value"
                    )
                    break
        if problem is None:
            return None
        found.append(problem)
    return found[0]


class ExampleChecker:
    """Checks one record's analysis against the releases that raise it."""

    def __init__(self, api: ApiTable, releases: ReleaseTable | None = None) -> None:
        self.api = api
        self.releases = releases
        self.crate_repos = api.crate_repos()
        self._known = {
            (release.repo, release.ref): release
            for listed in (releases.releases.values() if releases is not None else ())
            for release in listed
        }

    def order(self, world: ReleaseApi) -> tuple[int, tuple[int, int, int, int, str]]:
        """Oldest first: by the release table's order where it knows the release, else by version."""
        release = self._known.get((world.repo, world.ref))
        return (release.order if release is not None else -1, version_key(world.ref))

    def name(self, world: ReleaseApi) -> str:
        release = self._known.get((world.repo, world.ref))
        if release is not None:
            return release.name
        return world.ref[:10] if re.fullmatch(r"[0-9a-f]{40}", world.ref) else world.ref

    # -- which releases --

    def worlds(self, repo: str, record_id: str, file_path: str | None) -> list[ReleaseApi]:
        """The releases of the record's repository that raise it (else that have its file, else all)."""
        refs: list[str] = []
        if self.releases is not None:
            refs = [site.release.ref for site in self.releases.sites_of(record_id)]
        known = [ref for _, ref in self.api.refs(repo)]
        if not refs and file_path:
            refs = [
                ref for ref in known if (found := self.api.release(repo, ref)) and file_path in found.files
            ]
        if not refs and not known:
            return self.everywhere()  # std's panics (rust-lang/rust) happen in programs of any crate
        refs = refs or known
        return [found for ref in dict.fromkeys(refs) if (found := self.api.release(repo, ref)) is not None]

    def knows_repo(self, repo: str) -> bool:
        return bool(self.api.refs(repo))

    def everywhere(self) -> list[ReleaseApi]:
        """Every release of every repository of the table."""
        return [found for repo, ref in self.api.refs() if (found := self.api.release(repo, ref)) is not None]

    def _other_repo(self, crate: str) -> list[ReleaseApi]:
        return [
            found
            for repo in sorted(self.crate_repos.get(crate, ()))
            for r, ref in self.api.refs(repo)
            if (found := self.api.release(r, ref)) is not None
        ]

    # -- the example --

    def check_example(self, example: str, worlds: Sequence[ReleaseApi], *, own: bool = True) -> list[Problem]:
        """`own`: the worlds are the record's own repository's releases, so that a bare function or a method
        call can be taken for theirs; else (std's panics) only the paths the example spells out are checked.
        """
        problems = [
            Problem(
                "example-fence", f"a ```{lang} fence: mark Rust as ```rust, a shell or TOML snippet as such"
            )
            for lang in unknown_fences(example)
        ]
        for first_line, code in rust_blocks(example):
            root, shift, error = parse_rust(code)
            if root is None:
                problems.append(Problem("example-syntax", f"the example does not parse as Rust ({error})"))
                continue
            aliases = _use_aliases(root)
            defined = _own_functions(root)
            problems.extend(self._check_uses(aliases, worlds))
            for call in _calls(root, shift):
                if not own and (
                    call.method is not None or (len(call.path) == 1 and call.path[0] not in aliases)
                ):
                    continue
                problem = self._check_call(call, aliases, defined, worlds)
                if problem is not None:
                    line = first_line + call.line - 1
                    problems.append(Problem(problem.check, f"line {line}: {problem.reason}"))
        return problems

    def _span(self, worlds: Sequence[ReleaseApi]) -> str:
        ordered = sorted(worlds, key=self.order)
        if not ordered:
            return "no release"
        if len({w.repo for w in ordered}) > 1:
            return "any harvested release"
        repo = ordered[0].repo.rsplit("/", 1)[-1]
        first, last = self.name(ordered[0]), self.name(ordered[-1])
        return f"{repo} {first}" if first == last else f"{repo} {first} to {last}"

    def _worlds_for(self, first: str, worlds: Sequence[ReleaseApi]) -> list[ReleaseApi]:
        if any(first in w.roots for w in worlds):
            return list(worlds)
        return self._other_repo(first)

    def _check_uses(self, aliases: dict[str, tuple[str, ...]], worlds: Sequence[ReleaseApi]) -> list[Problem]:
        problems = []
        for path in aliases.values():
            where = self._worlds_for(path[0], worlds)
            if where and not any(w.resolve(path) for w in where):
                problems.append(
                    Problem("example-path", f"`use {'::'.join(path)}` names nothing in {self._span(where)}")
                )
        return problems

    def _check_call(
        self,
        call: _Call,
        aliases: dict[str, tuple[str, ...]],
        own_functions: set[str],
        worlds: Sequence[ReleaseApi],
    ) -> Problem | None:
        if call.method is not None:
            if call.method in STD_METHODS:
                return None
            candidates = [s for w in worlds for s in w.methods(None, call.method) if s.receiver]
            return self._fits(call.method, candidates, call.args, ufcs=False, where=worlds)
        path = call.path
        if path[0] in aliases:
            path = aliases[path[0]] + path[1:]
        if len(path) == 1:
            if path[0] in own_functions:
                return None
            # A bare call of a public function of the crates (imported by a `use` the example leaves out).
            found = [(w, e) for w in worlds for e in w.items_named(path[0]) if e.kind == "fn"]
            signatures = [s for w, e in found for s in w.functions_of(e)]
            return self._fits(path[0], signatures, call.args, ufcs=False, where=worlds)
        shown = "::".join(call.path)
        where = self._worlds_for(path[0], worlds)
        if any(path[0] in w.roots for w in where):
            entries = [(w, e) for w in where for e in w.resolve(path)]
            if not entries:
                parent = [w for w in where if w.resolve(path[:-1])]
                if parent and path[-2][:1].isupper():
                    # The type the path names lives in these crates: another crate's type of the same name
                    # (onnx-ir's `Conv2dConfig` beside burn-core's) says nothing of its methods.
                    crates = {e.module.crate for w in parent for e in w.resolve(path[:-1])}
                    return self._method_call(path[-2], path[-1], call, shown, parent, crates)
                return Problem("example-path", f"`{shown}` names nothing in {self._span(where)}")
            signatures = [s for w, e in entries if e.kind == "fn" for s in w.functions_of(e)]
            return self._fits(shown, signatures, call.args, ufcs=False, where=where)
        qualifier, name = path[-2], path[-1]
        if qualifier[:1].isupper():
            return self._method_call(qualifier, name, call, shown, worlds)
        modules = [(w, m) for w in worlds for m in w.reachable_modules().get(qualifier, [])]
        if not modules:
            return None  # a module of the user's own
        found = [(w, e) for w, m in modules for e in w.public_names(m).get(name, [])]
        if not found and len(elsewhere := self.everywhere()) > len(worlds):
            modules = [(w, m) for w in elsewhere for m in w.reachable_modules().get(qualifier, [])]
            found = [(w, e) for w, m in modules for e in w.public_names(m).get(name, [])]
        if not found:
            return Problem(
                "example-path",
                f"`{shown}`: no public `{qualifier}` module has `{name}` in {self._span(worlds)}",
            )
        signatures = [s for w, e in found if e.kind == "fn" for s in w.functions_of(e)]
        return self._fits(shown, signatures, call.args, ufcs=False, where=worlds)

    def _method_call(
        self,
        owner: str,
        name: str,
        call: _Call,
        shown: str,
        worlds: Sequence[ReleaseApi],
        crates: set[str] | None = None,
    ) -> Problem | None:
        """`Owner::name(...)`; `crates`, when the path resolved the type: the crates that define it."""
        # A type re-exported from another repository's crate (`extern`) is as unknown as a generic one.
        known_type = any(e.kind != "extern" for w in worlds for e in w.items_named(owner))
        own = [s for w in worlds for s in w.methods(owner, name)]
        if crates is not None and own:
            own = [s for w in worlds for s in w.methods(owner, name) if w.files[s.file_path][0] in crates]
            if not own:
                # Only a same-named type of another crate has it: the one named here gets it from a derive
                # (burn's `#[derive(Config)]` writes `new`) or a trait the tables cannot see.
                return None
        if not own:
            variants = any(
                name in w.variants(e) for w in worlds for e in w.items_named(owner) if e.kind == "enum"
            )
            if variants or not known_type:
                # A variant, or a generic parameter (`B::f`): any method of that name may be meant.
                own = [] if variants else [s for w in worlds for s in w.methods(None, name)]
                if not own:
                    return None
            else:
                anywhere = [s for w in worlds for s in w.methods(None, name)]
                traits = {
                    e.name
                    for w in worlds
                    for s in anywhere
                    for e in w.items_named(s.owner)
                    if e.kind == "trait"
                }
                if traits:
                    own = [s for s in anywhere if s.owner in traits]
                elif (elsewhere := self.everywhere()) and len(elsewhere) > len(worlds):
                    # The user's program may hold types of several repositories (Burn's `Tensor` in a
                    # program whose panic comes from cubecl): another repository's type of that name counts.
                    return self._method_call(owner, name, call, shown, elsewhere)
                else:
                    return Problem(
                        "example-path", f"`{shown}`: `{owner}` has no `{name}` in {self._span(worlds)}"
                    )
        return self._fits(shown, own, call.args, ufcs=True, where=worlds)

    def _fits(
        self,
        shown: str,
        signatures: Sequence[Signature],
        args: Sequence[Node],
        *,
        ufcs: bool,
        where: Sequence[ReleaseApi],
    ) -> Problem | None:
        if not signatures:
            return None
        if not any(_arity_ok(s, len(args), ufcs=ufcs) for s in signatures):
            shapes = sorted({s.shown() for s in signatures})
            more = f" (and {len(shapes) - 2} more)" if len(shapes) > 2 else ""
            return Problem(
                "example-arity",
                f"`{shown}` is called with {len(args)} argument{'s' if len(args) != 1 else ''}, but in "
                f"{self._span(where)} it is {' or '.join(shapes[:2])}{more}",
            )
        order = _order_problem(signatures, args, ufcs)
        return Problem("example-order", f"`{shown}` {order}") if order else None

    # -- claims of absence --

    def check_claims(
        self, texts: Iterable[str], worlds: Sequence[ReleaseApi], own_names: Sequence[str] = ()
    ) -> list[Problem]:
        """A sentence that says X is not implemented, not had, or gone, where X is defined in the releases
        (the record's; for "no longer", the newest of each repository as well). `own_names` are what "this
        variant" or "this error" stand for: the code names of the record's own message and error class."""
        problems: list[Problem] = []
        newest = self._newest()
        seen: set[str] = set()
        for text in texts:
            for sentence in _SENTENCE.findall(text):
                for name, later in _claimed_absent(sentence, own_names):
                    if name in seen:
                        continue
                    # "No longer": the newest release of any repository that has it refutes it (a type that
                    # moved to another crate is still there); "does not": the record's releases.
                    candidates = newest if later else worlds
                    places = [(w, files) for w in candidates if (files := w.defines(name))]
                    if not places:
                        continue
                    seen.add(name)
                    release, files = max(places, key=lambda p: self.order(p[0]))
                    quoted = " ".join(sentence.split())[:120]
                    problems.append(
                        Problem(
                            "claims-absence",
                            f'says `{name}` is missing or gone ("{quoted}"), but {release.repo} '
                            f"{self.name(release)} defines it in {files[0]}",
                        )
                    )
        return problems

    def _newest(self) -> list[ReleaseApi]:
        newest: dict[str, ReleaseApi] = {}
        for repo, ref in self.api.refs():
            found = self.api.release(repo, ref)
            if found is not None and (repo not in newest or self.order(found) > self.order(newest[repo])):
                newest[repo] = found
        return list(newest.values())


def own_code_names(*texts: str | None) -> list[str]:
    """The code names in a record's message and error class (`CubeCountTooLarge`, `BufferTooBig`)."""
    return list(dict.fromkeys(name for text in texts if text for name in _CODE_NAME.findall(text)))


def _claimed_absent(sentence: str, own_names: Sequence[str] = ()) -> Iterator[tuple[str, bool]]:
    """(code name, whether the claim is "no longer") for each thing a sentence says is absent."""
    if _THIS_ONE.search(sentence) and _GONE.search(sentence):
        for name in own_names:
            yield name, True
    for match in _CLAIM.finditer(sentence):
        later = match.group("verb").lower() == "no longer"
        # The thing claimed absent is named right after the verb (within a few words).
        words = match.group("rest").split()[:6]
        for name in _CODE_NAME.findall(" ".join(words)):
            yield name, later
    for match in _NO_LONGER_EXISTS.finditer(sentence):
        name = match.group("name").strip("`").rsplit("::", 1)[-1]
        if _CODE_NAME.fullmatch(name):
            yield name, True
    lower = sentence.lower()
    if "no longer exists" in lower or "was removed" in lower or "has been removed" in lower:
        for name in _CODE_NAME.findall(sentence):
            yield name, True
