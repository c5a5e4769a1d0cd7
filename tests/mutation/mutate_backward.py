#!/usr/bin/env python3
"""mutate_backward.py — proves that the gradient tests catch a backward that is 1% wrong.

For every entry of mutations.txt (next to this script) it multiplies one term of one op's
backward by 1.01, e.g. `da[i] += g * b[i]` -> `da[i] += real(1.01) * g * b[i]`, rebuilds
the float64 test binary of tests/autograd (or, for an entry marked `binary: f32`, the float32
one, for the kernels only float32 has) and runs the Catch2 tests the entry names (a tag
such as [op:matmul]). At least one of them must fail: a silently wrong gradient in any op,
any input of it, any code path, would otherwise go unnoticed. mutations.txt has one entry
per partial derivative of every differentiable op (and per term where a derivative has
several) and says how to add one.

    python3 tests/mutation/mutate_backward.py                # every mutation
    python3 tests/mutation/mutate_backward.py --list         # list them, check the fragments
    python3 tests/mutation/mutate_backward.py --only softmax # those whose label, file or spec
                                                             # contains "softmax"

The working tree is never modified: the script copies autograd/, datasets/ and tests/ to a temporary
directory (under $TMPDIR), compiles every object once (g++ -O1, or $CXX; $CXXFLAGS and
$LDFLAGS are appended) and checks that each spec selects tests that pass unmutated. Then
per mutation it edits the copy, recompiles that one op file, relinks and runs the spec,
twice: first a control with real(1) in place of real(1.01), which must pass (so a failure
is due to the 1% and nothing else), then the mutant; then it restores the file. Everything
runs under nice -n 10. The float32 binary is built instead by the project's CMake in a copy of
the tracked files (its kernels have per-file instruction-set flags that only CMakeLists.txt
knows), once, then again for each of its mutations. A full run takes about 8 minutes on two
cores (the first builds, then 2-15 s per mutation); it is a manual tool, not part of ctest. Prints
a table and `mutations: N caught, M missed`; the exit status is 1 if any mutation was
missed or anything could not be built.

Python 3.9 or newer, standard library only.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MUTATIONS = Path(__file__).resolve().with_name("mutations.txt")
CXX = os.environ.get("CXX", "g++")
CXXFLAGS = ["-std=c++17", "-O1", "-DPATCHGRAD_DOUBLE"] + shlex.split(os.environ.get("CXXFLAGS", ""))
LDFLAGS = ["-pthread"] + shlex.split(os.environ.get("LDFLAGS", ""))
TEST_TIMEOUT = 600  # seconds; a mutant that hangs a test counts as caught
KEYS = ("mutation", "file", "spec", "find", "replace")
OPTIONAL_KEYS = ("binary",)  # f64 (the default) or f32
SCALE = "real(1.01)"  # every replacement scales one term by this


class SetupError(Exception):
    """Something other than a mutation result went wrong; the run stops."""


@dataclasses.dataclass
class Mutation:
    label: str
    file: str
    spec: str
    find: str
    replace: str
    line: int  # where the entry starts in mutations.txt
    binary: str = "f64"


def parse_mutations(path: Path) -> list[Mutation]:
    mutations: list[Mutation] = []
    block: dict[str, str] = {}
    start = 0

    def finish() -> None:
        if not block:
            return
        missing = [k for k in KEYS if k not in block]
        if missing:
            raise SetupError(f"{path.name}:{start}: entry lacks {', '.join(missing)}")
        if SCALE not in block["replace"]:
            raise SetupError(f"{path.name}:{start}: the replacement must scale a term by {SCALE}")
        binary = block.get("binary", "f64")
        if binary not in ("f64", "f32"):
            raise SetupError(f"{path.name}:{start}: binary must be f64 or f32, got {binary!r}")
        mutations.append(Mutation(block["mutation"], block["file"], block["spec"], block["find"],
                                  block["replace"], start, binary))
        block.clear()

    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("#"):
            continue
        if not line.strip():
            finish()
            continue
        key, sep, value = line.partition(": ")
        if not sep or key not in KEYS + OPTIONAL_KEYS:
            raise SetupError(f"{path.name}:{number}: expected one of {', '.join(KEYS + OPTIONAL_KEYS)} "
                             f"followed by ': ', got {line!r}")
        if key in block:
            raise SetupError(f"{path.name}:{number}: {key} given twice in one entry")
        if not block:
            start = number
        block[key] = value.rstrip()
    finish()
    return mutations


def check_fragments(mutations: list[Mutation], root: Path) -> list[str]:
    """Every find must occur exactly once in its file; returns the problems."""
    problems = []
    for m in mutations:
        source = root / m.file
        if not source.is_file():
            problems.append(f"{MUTATIONS.name}:{m.line} ({m.label}): no file {m.file}")
            continue
        count = source.read_text().count(m.find)
        if count != 1:
            where = "not found" if count == 0 else f"found {count} times"
            problems.append(f"{MUTATIONS.name}:{m.line} ({m.label}): fragment {where} in {m.file}: {m.find!r}")
    return problems


def run(cmd: list[str], timeout: float | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)


def catch2_v3() -> bool:
    """Whether tests/catch.h will pick Catch2 v3 (then main comes from libCatch2Main)."""
    probe = "#if __has_include(<catch2/catch_all.hpp>)\nCATCH2_V3\n#endif\n"
    result = subprocess.run([CXX, *CXXFLAGS, "-E", "-P", "-x", "c++", "-"], input=probe,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return "CATCH2_V3" in result.stdout


class Build:
    """The copied tree, its objects, and how to compile and link them."""

    def __init__(self, work: Path):
        self.work = work
        self.src = work / "src"
        self.obj = work / "obj"
        for part in ("autograd", "datasets", "tests"):  # datasets/: headers some tests include
            shutil.copytree(REPO / part, self.src / part)
        # Headers are included as "patchgrad/autograd/...": include/patchgrad/NAME links to the copy.
        (work / "include" / "patchgrad").mkdir(parents=True)
        for part in ("autograd", "datasets"):
            (work / "include" / "patchgrad" / part).symlink_to(self.src / part)
        self.v3 = catch2_v3()
        self.flags = [*CXXFLAGS, f"-I{work / 'include'}", f"-I{self.src}", f"-I{self.src / 'tests'}",
                      f'-DPATCHGRAD_TEST_DATA="{self.src / "tests" / "data"}"']
        # The library's files, in autograd/, its job folders (ops/, cpu/, ...) and theirs
        # (cpu/gemm/, ...), not the demo.
        self.ops = sorted(p.relative_to(self.src).as_posix() for pattern in ("*.cpp", "*/*.cpp", "*/*/*.cpp")
                          for p in (self.src / "autograd").glob(pattern) if p.parent.name != "demo")
        tests = sorted(p.relative_to(self.src).as_posix()
                       for pattern in ("test_*.cpp", "*/test_*.cpp", "*/*/test_*.cpp")
                       for p in (self.src / "tests" / "autograd").glob(pattern) if not p.name.endswith("_f32.cpp"))
        self.sources = self.ops + tests + ([] if self.v3 else ["tests/catch_main.cpp"])

    def object_of(self, source: str) -> Path:
        return self.obj / (source.replace("/", "__")[:-len(".cpp")] + ".o")

    def compile(self, source: str, output: Path) -> subprocess.CompletedProcess:
        return run([CXX, *self.flags, "-c", str(self.src / source), "-o", str(output)])

    def build_all(self, jobs: int) -> None:
        self.obj.mkdir(parents=True)
        # Slowest first: catch_main, then the test files (Catch2 is most of their compile time).
        order = sorted(self.sources, key=lambda s: (not s.endswith("catch_main.cpp"), not s.startswith("tests/"), s))
        print(f"building {len(order)} objects in {self.work} with {jobs} jobs ...", flush=True)
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(self.compile, s, self.object_of(s)): s for s in order}
            for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
                result = future.result()
                if result.returncode != 0:
                    raise SetupError(f"{futures[future]} does not compile unmutated:\n{result.stdout}")
                print(f"  [{done}/{len(order)}] {futures[future]}", flush=True)
        print(f"built in {time.monotonic() - t0:.0f} s", flush=True)

    def link(self, output: Path, replaced: str | None = None, replacement: Path | None = None
             ) -> subprocess.CompletedProcess:
        objects = [str(replacement if s == replaced else self.object_of(s)) for s in self.sources]
        libs = ["-lCatch2Main", "-lCatch2"] if self.v3 else []
        return run([CXX, *objects, "-o", str(output), *LDFLAGS, *libs])

    @property
    def files(self) -> set[str]:
        """The files a mutation may edit: the library's op files."""
        return set(self.ops)

    def rebuild(self, changed: str) -> tuple[subprocess.CompletedProcess, Path]:
        """The test binary with the changed file recompiled: how it went, and its path."""
        obj, binary = self.work / "mutant.o", self.work / "mutant64"
        result = self.compile(changed, obj)
        if result.returncode == 0:
            result = self.link(binary, changed, obj)
        return result, binary


class CMakeBuild:
    """The float32 test binary, built by the project's CMake in a copy of the tracked files."""

    def __init__(self, work: Path, jobs: int):
        self.src = work / "repo"
        self.dir = work / "build32"
        self.jobs = jobs
        tracked = run(["git", "-C", str(REPO), "ls-files", "-z"])
        if tracked.returncode != 0:
            raise SetupError(f"git ls-files fails (a float32 mutation needs a git checkout):\n{tracked.stdout}")
        self.files = {name for name in tracked.stdout.split("\0") if name and (REPO / name).is_file()}
        for name in self.files:
            (self.src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, self.src / name)
        self.binary = self.dir / "tests" / "patchgrad_tests32"

    def build_all(self) -> None:
        launcher = ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"] if shutil.which("ccache") else []
        print(f"configuring and building the float32 tests in {self.dir} ...", flush=True)
        t0 = time.monotonic()
        result = run(["cmake", "-S", str(self.src), "-B", str(self.dir), "-DCMAKE_BUILD_TYPE=Release",
                      "-DPATCHGRAD_BUILD_TUTORIALS=OFF", *launcher])
        if result.returncode == 0:
            result = self.build()
        if result.returncode != 0:
            raise SetupError(f"the float32 tests do not build unmutated:\n{result.stdout[-4000:]}")
        print(f"built in {time.monotonic() - t0:.0f} s", flush=True)

    def build(self) -> subprocess.CompletedProcess:
        return run(["cmake", "--build", str(self.dir), "--target", "patchgrad_tests32", "-j", str(self.jobs)])

    def rebuild(self, changed: str) -> tuple[subprocess.CompletedProcess, Path]:
        """As Build.rebuild: CMake recompiles what the changed file touches."""
        return self.build(), self.binary


def test_case_count(output: str) -> int:
    """The number of test cases Catch2's summary line reports (v2 and v3 agree on it)."""
    found = re.findall(r"in (\d+) test cases?", output)
    return int(found[-1]) if found else 0


def check_baseline(binary: Path, specs: list[str]) -> None:
    """Each spec must select at least one test, and the tests must pass before mutating."""
    for spec in specs:
        result = run([str(binary), spec], timeout=TEST_TIMEOUT)
        if result.returncode != 0:
            raise SetupError(f"{spec} fails before any mutation:\n{result.stdout[-4000:]}")
        count = test_case_count(result.stdout)
        if count == 0:
            raise SetupError(f"{spec} selects no test case:\n{result.stdout[-2000:]}")
        print(f"  unmutated {spec}: {count} test cases pass", flush=True)


def build_and_test(build: Build | CMakeBuild, m: Mutation, text: str, what: str) -> int | None:
    """Writes text as m.file into the copy, rebuilds, runs m.spec: the exit code, or None
    (and a message) when it does not build; a timeout counts as a failure (1)."""
    (build.src / m.file).write_text(text)
    result, binary = build.rebuild(m.file)
    if result.returncode != 0:
        print(f"\n{m.label}: the {what} does not build:\n{result.stdout}", file=sys.stderr)
        return None
    try:
        return run([str(binary), m.spec], timeout=TEST_TIMEOUT).returncode
    except subprocess.TimeoutExpired:
        return 1


def run_mutation(build: Build | CMakeBuild, m: Mutation) -> str:
    """caught, MISSED or ERROR. First a control, the same edit with real(1) for real(1.01),
    must pass: then a failure of the mutant is due to the 1% and nothing else. The file is
    restored afterwards whatever happens."""
    if m.file not in build.files:
        raise SetupError(f"{MUTATIONS.name}:{m.line}: {m.file} is not one of the compiled files")
    source = build.src / m.file
    original = source.read_text()
    try:
        control = build_and_test(build, m, original.replace(m.find, m.replace.replace(SCALE, "real(1)"), 1),
                                 "control")
        if control != 0:
            if control is not None:
                print(f"\n{m.label}: the control ({SCALE} -> real(1)) fails {m.spec}", file=sys.stderr)
            return "ERROR"
        mutant = build_and_test(build, m, original.replace(m.find, m.replace, 1), "mutant")
        if mutant is None:
            return "ERROR"
        return "caught" if mutant != 0 else "MISSED"
    finally:
        source.write_text(original)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--list", action="store_true", help="list the mutations and check their fragments")
    parser.add_argument("--only", metavar="SUBSTRING",
                        help="run only the mutations whose label, file or spec contains SUBSTRING")
    parser.add_argument("--jobs", type=int, default=2, help="parallel compiles for the first build (default 2)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()

    os.nice(10)
    try:
        mutations = parse_mutations(MUTATIONS)
        if args.only:
            needle = args.only.lower()
            mutations = [m for m in mutations if needle in f"{m.label}\n{m.file}\n{m.spec}".lower()]
            if not mutations:
                raise SetupError(f"no mutation matches --only {args.only!r}")
        problems = check_fragments(mutations, REPO)
        if problems:
            raise SetupError("fragments must occur exactly once:\n  " + "\n  ".join(problems))
    except SetupError as e:
        print(f"mutate_backward: {e}", file=sys.stderr)
        return 1

    w_file = max(len("file"), *(len(m.file) for m in mutations))
    w_label = max(len("mutation"), *(len(m.label) for m in mutations))
    w_spec = max(len("spec"), *(len(m.spec) for m in mutations))

    def row(file: str, label: str, spec: str, rest: str = "") -> str:
        return f"{file:<{w_file}}  {label:<{w_label}}  {spec:<{w_spec}}  {rest}".rstrip()

    if args.list:
        print(row("file", "mutation", "spec"))
        for m in mutations:
            print(row(m.file, m.label, m.spec))
        print(f"{len(mutations)} mutations, every fragment found exactly once")
        return 0

    work = Path(tempfile.mkdtemp(prefix="patchgrad-mutation-"))
    results: list[str] = []
    t_start = time.monotonic()
    try:
        builds: dict[str, Build | CMakeBuild] = {}
        if any(m.binary == "f64" for m in mutations):
            build = Build(work)
            build.build_all(args.jobs)
            baseline = build.work / "tests64"
            result = build.link(baseline)
            if result.returncode != 0:
                raise SetupError(f"the unmutated test binary does not link:\n{result.stdout}")
            check_baseline(baseline, sorted({m.spec for m in mutations if m.binary == "f64"}))
            builds["f64"] = build
        if any(m.binary == "f32" for m in mutations):
            build32 = CMakeBuild(work, args.jobs)
            build32.build_all()
            check_baseline(build32.binary, sorted({m.spec for m in mutations if m.binary == "f32"}))
            builds["f32"] = build32
        print()
        print(row("file", "mutation", "spec", f"{'result':<7}  seconds"))
        for m in mutations:
            t0 = time.monotonic()
            result = run_mutation(builds[m.binary], m)
            results.append(result)
            print(row(m.file, m.label, m.spec, f"{result:<7}  {time.monotonic() - t0:7.1f}"), flush=True)
    except SetupError as e:
        print(f"mutate_backward: {e}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    caught, missed, errors = results.count("caught"), results.count("MISSED"), results.count("ERROR")
    print()
    for m, result in zip(mutations, results):
        if result != "caught":
            print(f"{result}: {m.label} ({m.file}, {MUTATIONS.name}:{m.line}) with {m.spec}")
    print(f"total time {time.monotonic() - t_start:.0f} s")
    if errors:
        print(f"{errors} mutation(s) could not be built or failed their control (see above)")
    print(f"mutations: {caught} caught, {missed} missed")
    return 1 if missed or errors else 0


if __name__ == "__main__":
    sys.exit(main())
