#!/usr/bin/env python3
"""Where the bytes of a .wasm go: its sections, its function bodies summed by
area of the code, and its largest functions.

Function names come from the name section, which a link with
--profiling-funcs adds without changing the code or data (scripts/README.md:
"Where a .wasm's bytes go"). Without names only the sections are printed.

Usage: scripts/wasm_sizes.py FILE.wasm [--top N] [--area NAME=REGEX]...
--area adds an area ahead of the built-in ones; a function belongs to the
first area whose regex its name matches (re.search).
"""
import argparse
import re
import sys

SECTIONS = {0: 'custom', 1: 'type', 2: 'import', 3: 'function', 4: 'table', 5: 'memory',
            6: 'global', 7: 'export', 8: 'start', 9: 'element', 10: 'code', 11: 'data',
            12: 'data count', 13: 'tag'}

# This project's areas, by the names binaryen keeps (demangled).
AREAS = [
    ('kernels', r'(Highway|Xsimd|Scalar)Ops\b|KernelTable\(\)'),
    ('backward, optimizers', r'Backward|Gradient|Optimizer|\bSgd\b|\bAdam\b|Trainable|Training'),
    ('tiny model', r'Tiny(Transformer|Model|Layer)'),
    ('Embind glue', r'^emscripten::|bindings::|embind'),
    ('libc++, exceptions', r'^std::|__cxa|__cxxabiv1|_Unwind|^operator (new|delete)|terminate'),
    ('libc, malloc', r'^(__)?(rem_pio2|sin|cos|pow|exp|log|logf|scalbn|mem\w+|strlen|sbrk|'
     r'emmalloc\w*|malloc|free|claim_more_memory|attempt_allocate)\b'),
    ('layers', r'TransformerEncoderLayer|TransformerDecoderLayer|FeedForward|LayerNorm|Residual|'
     r'PositionalEncoding'),
    ('attention API', r'MultiHeadAttention|AttentionCall|KVCache|KVRows|Precomputed|ScaledDot|'
     r'Pack|Weight|TorchState|Mask'),
    ('checks, messages', r'Check|Refuse|Throw|String\(|\bCat\(|ArgNames|Checked|Judge|MaxAbs'),
]


def leb(data, i):
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7f) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def read(path):
    """(sections [(name, bytes)], functions [(name, body bytes)])."""
    data = open(path, 'rb').read()
    if data[:4] != b'\0asm':
        sys.exit(f'{path}: not a .wasm file')
    sections, bodies, names, imported = [], [], {}, 0
    i = 8
    while i < len(data):
        sid = data[i]
        size, i = leb(data, i + 1)
        end = i + size
        name = SECTIONS.get(sid, str(sid))
        if sid == 0:
            n, j = leb(data, i)
            name = data[j:j + n].decode()
            j += n
            while name == 'name' and j < end:  # subsection 1: function names
                sub = data[j]
                sub_size, j = leb(data, j + 1)
                if sub == 1:
                    count, k = leb(data, j)
                    for _ in range(count):
                        index, k = leb(data, k)
                        n, k = leb(data, k)
                        names[index] = data[k:k + n].decode(errors='replace')
                        k += n
                j += sub_size
        elif sid == 2:  # imports: functions take the first indices
            count, j = leb(data, i)
            for _ in range(count):
                for _ in range(2):  # module, field
                    n, j = leb(data, j)
                    j += n
                kind = data[j]
                j += 1
                if kind == 0:  # function: type index
                    _, j = leb(data, j)
                    imported += 1
                elif kind in (1, 2):  # table (element type first), memory: limits
                    j += kind == 1
                    flags = data[j]
                    _, j = leb(data, j + 1)
                    if flags & 1:
                        _, j = leb(data, j)
                elif kind == 3:  # global: value type, mutability
                    j += 2
                else:  # tag: attribute, type index
                    _, j = leb(data, j + 1)
        elif sid == 10:
            count, j = leb(data, i)
            for _ in range(count):
                size_of_body, k = leb(data, j)
                bodies.append(k - j + size_of_body)
                j = k + size_of_body
        sections.append((name, size))
        i = end
    functions = [(names.get(imported + n, ''), b) for n, b in enumerate(bodies)]
    return len(data), sections, functions


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('wasm')
    parser.add_argument('--top', type=int, default=40, help='largest functions to list')
    parser.add_argument('--area', action='append', default=[], metavar='NAME=REGEX')
    args = parser.parse_args()
    total, sections, functions = read(args.wasm)
    print(f'{total:8}  {args.wasm}')
    for name, size in sections:
        print(f'{size:8}  section {name}')
    if not any(name for name, _ in functions):
        print('(no function names: link with --profiling-funcs for the rest)')
        return
    areas = [tuple(a.split('=', 1)) for a in args.area] + AREAS
    sums = {name: [0, 0] for name, _ in areas + [('other', '')]}
    for name, size in functions:
        area = next((a for a, regex in areas if re.search(regex, name)), 'other')
        sums[area][0] += size
        sums[area][1] += 1
    print('\nfunction bodies by area (first match in this order)')
    for area, (size, count) in sums.items():
        print(f'{size:8}  {area} ({count} functions)')
    print(f'\nthe {args.top} largest functions')
    for name, size in sorted(functions, key=lambda f: -f[1])[:args.top]:
        print(f'{size:8}  {name[:160]}')


if __name__ == '__main__':
    main()
