#!/usr/bin/env python3
"""Which files of a folder call each other in both directions.

  tools/check-calls.py DIR [DIR...]

For each .c file in DIR, the functions it defines (a name at the start of a
line followed by " (" — GStreamer style puts the return type on the line
above) and the calls it makes to functions defined in the other files.
Prints each pair of files that call each other both ways with one example
each way, and exits 1 if there is any; `--list` prints every file's outgoing
calls too.
"""
import os
import re
import sys

DEF = re.compile(r'^([A-Za-z_][A-Za-z0-9_]*) \(', re.M)
CALL = re.compile(r'\b([A-Za-z_][A-Za-z0-9_]*)\s*\(')
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
STRING = re.compile(r'"(\\.|[^"\\])*"')


def scan(folder):
    files = sorted(f for f in os.listdir(folder) if f.endswith('.c'))
    defs, text = {}, {}
    for f in files:
        src = open(os.path.join(folder, f), encoding='utf-8').read()
        src = STRING.sub('""', COMMENT.sub(' ', src))
        text[f] = src
        for name in DEF.findall(src):
            # MACRO (x); at the start of a line (GST_DEBUG_CATEGORY_STATIC,
            # G_DEFINE_TYPE…) defines no function of this file
            if not name.isupper():
                defs.setdefault(name, f)
    calls = {f: {} for f in files}
    for f in files:
        for name in CALL.findall(text[f]):
            owner = defs.get(name)
            if owner and owner != f:
                calls[f].setdefault(owner, name)
    return files, calls


def main(argv):
    show = '--list' in argv
    dirs = [a for a in argv if a != '--list']
    if not dirs:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    bad = 0
    for d in dirs:
        files, calls = scan(d)
        if show:
            for f in files:
                print(f'{d}/{f} -> ' + (', '.join(sorted(calls[f])) or '(none)'))
        for i, a in enumerate(files):
            for b in files[i + 1:]:
                if b in calls[a] and a in calls[b]:
                    bad += 1
                    print(f'{d}: {a} <-> {b}: {a} calls {calls[a][b]}(), '
                          f'{b} calls {calls[b][a]}()')
    if not bad:
        print('check-calls: no two files call each other both ways in ' +
              ', '.join(dirs))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
