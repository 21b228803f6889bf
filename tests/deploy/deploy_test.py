#!/usr/bin/env python3
"""The installed service (docs/deploy.md): `meson install --destdir TMP --no-rebuild` from the
build directory, then, under TMP:

  programs   every program in BINDIR prints one line `NAME (INSERT) VERSION` for --version
             (each insert-dp subcommand too) - the programs that write records a second,
             `record schema MAJOR.MINOR (docs/records.md)` - and its usage for --help, run
             from there;
  softverbs  libibverbs.so.1 and the provider stand-ins in LIBDIR/insert/softverbs and none of
             them in LIBDIR; through LD_LIBRARY_PATH it is the libibverbs a process maps, and
             it lists its softverbs devices;
  man        a page per program in MANDIR/man1 that man renders with its NAME and SEE ALSO;
  docs       README.md and every docs/*.md in DATADIR/doc/insert, the example configuration
             beside them;
  config     SYSCONFDIR/insert/insert.conf written by the install, and kept by a later one
             once edited;
  units      the three units in the unit directory, naming the installed programs and the
             configuration, accepted by systemd-analyze verify (when it is there); the shell
             lines of insert-dp-inline@ and insert-correlate turn an instance and the
             configuration into the intended command lines (run with a stand-in program).

usage: deploy_test.py KEY=VALUE...   (keys: tests/deploy/meson.build)"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, **kw)


class Install:
    def __init__(self, conf, dest):
        self.conf = conf
        self.dest = dest

    def path(self, *parts):
        """An installed path under DESTDIR (each part may be absolute or relative)."""
        joined = os.path.join(self.conf["prefix"], *parts)
        return os.path.join(self.dest, joined.lstrip("/"))

    def bin(self, name):
        return self.path(self.conf["bindir"], name)


def meson_install(build, dest):
    r = run(["meson", "install", "-C", build, "--destdir", dest, "--no-rebuild", "--quiet"])
    check(r.returncode == 0,
          f"meson install --destdir {dest}: {r.returncode}\n{r.stdout}{r.stderr}")
    return r


# The programs that write records: --version names their schema too (docs/records.md).
RECORD_WRITERS = ("insert-dp", "insert-trace", "insert-correlate")
SCHEMA_LINE = r"record schema \d+\.\d+ \(docs/records\.md\)\n"


def case_programs(inst):
    version = inst.conf["version"]
    for name in inst.conf["programs"]:
        exe = inst.bin(name)
        check(os.access(exe, os.X_OK), f"{exe}: not installed")
        commands = [[exe]]
        if name == "insert-dp":
            commands += [[exe, sub] for sub in ("decode", "replay", "inline", "monitor", "bench")]
        for cmd in commands:
            shown = " ".join([name] + cmd[1:])
            r = run(cmd + ["--version"])
            line = re.escape(f"{name} (INSERT) {version}\n")
            if name in RECORD_WRITERS:
                line += SCHEMA_LINE
            check(r.returncode == 0 and re.fullmatch(line, r.stdout) and r.stderr == "",
                  f"{shown} --version: {r.returncode} {r.stdout!r} {r.stderr!r}")
            r = run(cmd + ["--help"])
            usage = re.search(r"^usage: " + re.escape(shown), r.stdout, re.I | re.M)
            check(r.returncode == 0 and usage and "--version" in r.stdout,
                  f"{shown} --help: {r.returncode}, no usage line naming it or no --version\n"
                  f"{r.stdout}{r.stderr}")
    # Nothing else in BINDIR: the benchmarks and test programs stay in the build tree.
    extra = set(os.listdir(inst.bin(""))) - set(inst.conf["programs"])
    check(not extra, f"{inst.bin('')}: unexpected programs {sorted(extra)}")


SOFTVERBS_PROBE = r"""
import ctypes, sys
lib = ctypes.CDLL("libibverbs.so.1")
lib.ibv_get_device_list.restype = ctypes.POINTER(ctypes.c_void_p)
lib.ibv_get_device_name.restype = ctypes.c_char_p
lib.ibv_get_device_name.argtypes = [ctypes.c_void_p]
n = ctypes.c_int(0)
devices = lib.ibv_get_device_list(ctypes.byref(n))
names = [lib.ibv_get_device_name(devices[i]).decode() for i in range(n.value)]
maps = [l.split()[-1] for l in open("/proc/self/maps") if "libibverbs.so" in l]
print(sorted(set(maps)))
print(names)
"""


def case_softverbs(inst):
    if inst.conf["softverbs"] != "yes":
        print("softverbs: not built here, skipped")
        return
    private = inst.path(inst.conf["libdir"], "insert", "softverbs")
    for lib in ("libibverbs.so.1", "libmlx5.so.1", "libefa.so.1"):
        check(os.path.exists(os.path.join(private, lib)), f"{private}/{lib}: not installed")
        shadow = inst.path(inst.conf["libdir"], lib)
        check(not os.path.lexists(shadow), f"{shadow}: softverbs beside the system's libraries")
    env = dict(os.environ, LD_LIBRARY_PATH=private)
    r = run([sys.executable, "-c", SOFTVERBS_PROBE], env=env)
    check(r.returncode == 0, f"softverbs probe: {r.returncode}\n{r.stdout}{r.stderr}")
    maps, names = (eval(line) for line in r.stdout.splitlines()[:2])  # noqa: S307, our own output
    check(maps and all(m.startswith(private + "/") for m in maps),
          f"LD_LIBRARY_PATH={private}: the process mapped {maps}")
    check(names and all(n.startswith("softverbs") for n in names),
          f"softverbs devices: {names} (expected softverbs0...: one per local IPv4 address)")


def case_man(inst):
    pages = inst.conf["man_pages"]
    if not pages:
        print("man: help2man was not found at configure time, no pages to check")
        return
    man = shutil.which("man")
    for page in pages:
        path = inst.path(inst.conf["mandir"], "man1", page)
        check(os.path.exists(path), f"{path}: not installed")
        source = open(path).read()
        name = page[:-2]
        for other in pages:
            see = ".BR " + other[:-2].replace("-", "\\-") + " (1)"
            check(other == page or see in source, f"{path}: SEE ALSO does not name {other}")
        if not man:
            continue
        r = run([man, "-l", path], env=dict(os.environ, MANPAGER="cat", MANWIDTH="100"))
        check(r.returncode == 0 and "SEE ALSO" in r.stdout
              and re.search(r"^NAME\n\s+" + re.escape(name) + " - ", r.stdout, re.M),
              f"man -l {path}: {r.returncode}\n{r.stdout[:2000]}{r.stderr}")


def case_docs(inst, source):
    docdir = inst.path(inst.conf["datadir"], "doc", "insert")
    wanted = ["README.md"] + sorted(f for f in os.listdir(os.path.join(source, "docs"))
                                    if f.endswith(".md"))
    missing = [f for f in wanted if not os.path.exists(os.path.join(docdir, f))]
    check(not missing, f"{docdir}: not installed: {missing}")
    example = os.path.join(docdir, "examples", "insert.conf")
    check(open(example).read() == open(os.path.join(source, "scripts/deploy/insert.conf")).read(),
          f"{example}: not the example of scripts/deploy")


def case_config(inst, build):
    conf = inst.path(inst.conf["sysconfdir"], "insert", "insert.conf")
    check(os.path.exists(conf), f"{conf}: not installed")
    with open(conf, "a") as f:
        f.write('INSERT_CORRELATE_OPTIONS="--ttl 10"\n')
    edited = open(conf).read()
    meson_install(build, inst.dest)  # an upgrade over it
    check(open(conf).read() == edited, f"{conf}: a second install overwrote the operator's edit")


def unit_lines(path):
    """The unit's settings as (key, value) pairs, in order; a line ending in a backslash
    goes on in the next, the backslash a space (as systemd reads it)."""
    pairs = []
    for line in open(path).read().replace("\\\n", " ").splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            pairs.append((key, value))
    return pairs


def exec_start(path, instance):
    """ExecStart= as systemd hands it to execve: words unquoted, %% and %i expanded, $$ made
    $. A lone $ (systemd's own expansion of a variable) is refused in the shell lines."""
    value = dict(unit_lines(path))["ExecStart"]
    words = []
    for word in shlex.split(value):
        def spec(m):
            check(m.group(1) in "%i", f"{path}: specifier %{m.group(1)} not expected")
            return "%" if m.group(1) == "%" else instance
        word = re.sub(r"%(.)", spec, word)
        check("$" not in word.replace("$$", ""), f"{path}: a $ systemd would expand: {word}")
        words.append(word.replace("$$", "$"))
    return words


def run_shell_line(words, program, stub, env):
    """Runs the unit's `/bin/sh -c SCRIPT PROGRAM ARGS` with a stand-in for PROGRAM."""
    check(words[:2] == ["/bin/sh", "-c"], f"not a shell line: {words}")
    check(words[3] == program, f"the unit runs {words[3]}, not the installed {program}")
    return run([words[0], words[1], words[2], stub] + words[4:], env=env)


def case_units(inst, tmp):
    unitdir = os.path.join(inst.dest, inst.conf["unitdir"].lstrip("/"))
    conf = os.path.join(inst.conf["prefix"], inst.conf["sysconfdir"], "insert", "insert.conf")
    units = ["insert-dp-inline@.service", "insert-trace.service", "insert-correlate.service"]
    for unit in units:
        path = os.path.join(unitdir, unit)
        check(os.path.exists(path), f"{path}: not installed")
        settings = unit_lines(path)
        check(("EnvironmentFile", "-" + conf) in settings, f"{unit}: does not read {conf}")
        check(("Restart", "on-failure") in settings, f"{unit}: no Restart=on-failure")
    # The socket the tracer writes to by default is the one the correlator listens on.
    trace = os.path.join(unitdir, "insert-trace.service")
    check(('Environment', '"INSERT_TRACE_OPTIONS=--unix /run/insert/correlator.sock"')
          in unit_lines(trace), f"{trace}: default output is not the correlator's socket")
    installed = lambda name: os.path.join(inst.conf["prefix"], inst.conf["bindir"], name)  # noqa
    wanted = installed("insert-trace") + " $INSERT_TRACE_OPTIONS"
    check(dict(unit_lines(trace))["ExecStart"] == wanted,
          f"{trace}: ExecStart is not {wanted}")

    stub = os.path.join(tmp, "stub")
    with open(stub, "w") as f:
        f.write('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    os.chmod(stub, 0o755)
    state = os.path.join(tmp, "state")
    os.makedirs(state, exist_ok=True)

    dp = os.path.join(unitdir, "insert-dp-inline@.service")
    # Its records go to the correlator's socket unless INSERT_DP_RECORDS says "file".
    socket_default = "INSERT_DP_RECORDS=unix:/run/insert/correlator.sock"
    check(("Environment", socket_default) in unit_lines(dp),
          f"{dp}: the records do not go to the correlator's socket by default")
    for records, wanted in (("unix:/run/insert/correlator.sock",
                             re.escape("unix:/run/insert/correlator.sock")),
                            ("file", re.escape(state) + r"/dp-eth1:eth2-\d{8}T\d{6}\.jsonl")):
        env = dict(os.environ, STATE_DIRECTORY=state, INSERT_DP_OPTIONS="--workers 2  --quiet",
                   INSERT_DP_EAL_OPTIONS="-l 0-2", INSERT_DP_RECORDS=records)
        r = run_shell_line(exec_start(dp, "eth1:eth2"), installed("insert-dp"), stub, env)
        args = r.stdout.splitlines()
        check(r.returncode == 0 and len(args) == 15
              and args[:6] == ["inline", "--iface", "eth1", "--iface", "eth2", "--records"]
              and re.fullmatch(wanted, args[6])
              and args[7:] == ["--telemetry-prefix", "insert-dp-eth1:eth2", "--workers", "2",
                               "--quiet", "--", "-l", "0-2"],
              f"insert-dp-inline@eth1:eth2 (INSERT_DP_RECORDS={records}) runs insert-dp {args} "
              f"({r.returncode} {r.stderr})")
    r = run_shell_line(exec_start(dp, "eth1"), installed("insert-dp"), stub, env)
    check(r.returncode == 2 and r.stdout == "" and "IFACE1:IFACE2" in r.stderr,
          f"insert-dp-inline@eth1: {r.returncode} {r.stdout!r} {r.stderr!r}")

    correlate = os.path.join(unitdir, "insert-correlate.service")
    env = dict(os.environ, STATE_DIRECTORY=state,
               INSERT_CORRELATE_OPTIONS="--alertmanager http://h:9093")
    r = run_shell_line(exec_start(correlate, ""), installed("insert-correlate"), stub, env)
    args = r.stdout.splitlines()
    check(r.returncode == 0 and args[:3] == ["--listen", "/run/insert/correlator.sock", "--records"]
          and re.fullmatch(re.escape(state) + r"/correlated-\d{8}T\d{6}\.jsonl", args[3])
          and args[4:] == ["--alertmanager", "http://h:9093"],
          f"insert-correlate.service runs insert-correlate {args} {r.stderr}")

    analyze = shutil.which("systemd-analyze")
    if not analyze:
        print("units: systemd-analyze not found, verify skipped")
        return
    # verify checks that each program exists where the unit says: the same units with the
    # DESTDIR in front of the installed paths, and man: references looked up in its pages.
    check_dir = os.path.join(tmp, "verify")
    os.makedirs(check_dir)
    prefix = inst.conf["prefix"].rstrip("/") + "/"
    for unit in units + ["insert-dp-inline@eth1.service"]:
        template = os.path.join(unitdir, re.sub(r"@.+\.", "@.", unit))
        text = open(template).read().replace("=" + prefix, "=" + inst.dest + prefix)
        with open(os.path.join(check_dir, unit), "w") as f:
            f.write(text)
    env = dict(os.environ, MANPATH=inst.path(inst.conf["mandir"]))
    names = [os.path.join(check_dir, u) for u in units + ["insert-dp-inline@eth1.service"]]
    r = run([analyze, "verify"] + names, env=env, cwd=check_dir)
    if r.returncode != 0 and "sysinit.target" in r.stderr:
        print(f"units: systemd-analyze verify cannot run here: {r.stderr.strip()}")
        return
    # Without man pages (help2man missing), man: links cannot resolve: the rest must.
    problems = [l for l in r.stderr.splitlines()
                if inst.conf["man_pages"] or not re.search(r"Command 'man .*' failed", l)]
    check(not problems, f"systemd-analyze verify: {r.returncode}\n{r.stderr}")
    print(f"units: systemd-analyze verify accepts {', '.join(units)} and an instance")


def main(argv):
    conf = dict(a.split("=", 1) for a in argv[1:])
    for key in ("programs", "man_pages"):
        conf[key] = [x for x in conf.get(key, "").split(",") if x]
    build = os.environ["INSERT_BUILD_ROOT"]
    source = os.environ["INSERT_SOURCE_ROOT"]
    with tempfile.TemporaryDirectory(prefix="insert-deploy-") as tmp:
        dest = os.path.join(tmp, "dest")
        meson_install(build, dest)
        inst = Install(conf, dest)
        try:
            case_programs(inst)
            case_softverbs(inst)
            case_man(inst)
            case_docs(inst, source)
            case_config(inst, build)
            case_units(inst, tmp)
        except Failure as e:
            print(f"FAIL: {e}", file=sys.stderr)
            return 1
    print("deploy: installed tree checked")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
