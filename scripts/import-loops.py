#!/usr/bin/env python3
"""The import loops of a crate's modules: `scripts/import-loops.py crates/apiserver/src`.

A file imports another when it names something defined there: through `use`, or a path in its
code (`crate::store::meta::name(...)`). A `pub use` re-export is the module's index, not a use: a
path through one is followed to the file that defines the item. `mod` declarations are nesting, not
imports. Test modules (`#[cfg(test)]` onwards) are left out.

Prints every strongly connected component of more than one file, with the imports that close it,
and exits 1 when one is larger than two files, or is two files that do not nest (a parent module
and its own child may use each other: that is how Rust modules are built). Regular expressions,
not a Rust parser: enough for the project's own code, whose `use` trees rustfmt keeps regular.
"""
import os
import re
import sys


def modules(root):
    """Module path (tuple of names) -> file, relative to root."""
    found = {}
    for directory, _, files in os.walk(root):
        for name in files:
            if name.endswith('.rs'):
                path = os.path.relpath(os.path.join(directory, name), root)
                parts = path[:-3].split('/')
                if parts[-1] in ('mod', 'lib', 'main'):
                    parts = parts[:-1]
                found[tuple(parts)] = path
    return found


def expand(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    tree = tree.strip()
    start = tree.find('{')
    if start < 0:
        return [tree]
    prefix, body = tree[:start], tree[start + 1:tree.rfind('}')]
    items, depth, current = [], 0, ''
    for ch in body:
        depth += (ch == '{') - (ch == '}')
        if ch == ',' and depth == 0:
            items.append(current)
            current = ''
        else:
            current += ch
    items.append(current)
    return [prefix + path for item in items if item.strip() for path in expand(item)]


def source(root, path):
    text = re.sub(r'//[^\n]*', '', open(os.path.join(root, path), encoding='utf-8').read())
    text = re.split(r'#\[cfg\(test\)\]', text)[0]
    # `pub(in crate::x)` is a visibility, not a path to an item.
    return re.sub(r'pub\(in [^)]*\)', 'pub', text)


REEXPORT = re.compile(r'\bpub(?:\([^)]*\))?\s+use\s+([^;]+);', re.S)
USE = re.compile(r'\buse\s+([^;]+);', re.S)
PATH = re.compile(r'(?<![:\w])((?:crate|super|\w+)(?:::\w+)+)')


def graph(root):
    mods = modules(root)
    reexports = {}

    def resolve(me, path):
        segments = [s.strip() for s in path.split(' as ')[0].split('::') if s.strip()]
        if not segments:
            return None
        if segments[0] == 'crate':
            base, segments = [], segments[1:]
        elif segments[0] in ('super', 'self'):
            base = list(me)
            while segments and segments[0] in ('super', 'self'):
                if segments[0] == 'super':
                    base = base[:-1]
                segments = segments[1:]
        else:
            # A path starting at a child module of this one; anything else is another crate.
            base = list(me)
            if tuple(base + segments[:1]) not in mods:
                return None
        target = base + segments
        while target and tuple(target) not in mods:
            target = target[:-1]
        rest, found = (base + segments)[len(target):], tuple(target)
        for _ in range(10):
            if not rest or (found, rest[0]) not in reexports:
                break
            found = reexports[(found, rest[0])]
        return found

    for me, path in mods.items():
        for tree in REEXPORT.findall(source(root, path)):
            for exported in expand(tree):
                name = exported.split(' as ')[-1].split('::')[-1].strip()
                target = resolve(me, exported)
                if target is not None and target != me:
                    reexports[(me, name)] = target
    edges = {me: set() for me in mods}
    for me, path in mods.items():
        text = REEXPORT.sub('', source(root, path))
        paths = [p for tree in USE.findall(text) for p in expand(tree)]
        paths += PATH.findall(USE.sub('', text))
        for used in paths:
            target = resolve(me, used)
            if target is not None and target != me:
                edges[me].add(target)
    return mods, edges


def components(edges):
    """Tarjan's strongly connected components."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            found.append(component)

    for v in edges:
        if v not in index:
            visit(v)
    return found


def main():
    failed = False
    for root in sys.argv[1:]:
        mods, edges = graph(root)
        for component in components(edges):
            if len(component) < 2:
                continue
            a, b = component[0], component[-1]
            nests = len(component) == 2 and (a[:-1] == b or b[:-1] == a)
            failed |= not nests
            verdict = 'a parent and its child' if nests else 'a loop'
            print(f'{root}: {len(component)} files, {verdict}:')
            members = set(component)
            for m in sorted(component, key=lambda m: mods[m]):
                print(f'    {mods[m]} -> {", ".join(sorted(mods[t] for t in edges[m] if t in members))}')
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
