#!/usr/bin/env python3
"""check-layering.py ROOT [--stamp FILE] FOLDER=USED,USED... ...

Every library folder declares, in its meson.build, the library folders whose headers it
includes (`layer_uses`; meson.build passes them here as FOLDER=USED,...). This checks,
for every C/C++ file directly in each declared folder, that each project #include
names a header of the folder itself or of a folder it declared, that every declared
folder is included somewhere (declarations stay exact), and that the declarations have no
cycle. A violation is one line naming the file, the line and the
undeclared folder; exit 1 (the build fails). With --stamp, FILE is written on success
(the build's output of this check).
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = (".c", ".cpp", ".h", ".hpp")


def folder_of(path, folders):
    """The longest declared folder that contains `path` (a header or a source)."""
    best = None
    for f in folders:
        if path.startswith(f + "/") and (best is None or len(f) > len(best)):
            best = f
    return best


def find_cycle(uses):
    state = {}  # folder -> 1 visiting, 2 done

    def visit(f, path):
        if state.get(f) == 2:
            return None
        if state.get(f) == 1:
            return path[path.index(f):] + [f]
        state[f] = 1
        for u in uses.get(f, []):
            cycle = visit(u, path + [f])
            if cycle:
                return cycle
        state[f] = 2
        return None

    for f in sorted(uses):
        cycle = visit(f, [])
        if cycle:
            return cycle
    return None


def main(argv):
    args = argv[1:]
    stamp = None
    if "--stamp" in args:
        i = args.index("--stamp")
        stamp = args[i + 1]
        del args[i:i + 2]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    root = args[0]
    uses = {}
    for spec in args[1:]:
        folder, _, used = spec.partition("=")
        uses[folder] = [u for u in used.split(",") if u]
    folders = set(uses) | {u for us in uses.values() for u in us}

    errors = []
    cycle = find_cycle(uses)
    if cycle:
        errors.append("layering: a cycle of declared uses: " + " -> ".join(cycle))
    for folder in sorted(uses):
        directory = os.path.join(root, folder)
        if not os.path.isdir(directory):
            errors.append(f"layering: {folder}: declared in meson but not a folder")
            continue
        allowed = set(uses[folder]) | {folder}
        used = set()
        for name in sorted(os.listdir(directory)):
            if not name.endswith(SOURCES):
                continue
            rel = f"{folder}/{name}"
            with open(os.path.join(directory, name), encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = folder_of(m.group(1), folders)
                    if target is None:
                        if os.path.exists(os.path.join(root, m.group(1))):
                            errors.append(f"{rel}:{number}: includes {m.group(1)}, which is "
                                          "in no declared library folder")
                        continue  # a header of its own folder by a relative name, or generated
                    used.add(target)
                    if target not in allowed:
                        errors.append(f"{rel}:{number}: includes {m.group(1)} but {folder}'s "
                                      f"meson.build does not declare {target} in its uses")
        for unused in sorted(set(uses[folder]) - used):
            errors.append(f"layering: {folder}'s meson.build declares {unused}, which none "
                          "of its files includes")
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        return 1
    if stamp:
        with open(stamp, "w") as f:
            f.write("".join(f"{k}: {' '.join(v)}\n" for k, v in sorted(uses.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
