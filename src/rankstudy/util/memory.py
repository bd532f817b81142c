"""Saying "out of memory" when a job runs out of it. Under a memory limit the failure rarely
says so: numba's import ends in "Could not find/load shared object file 'libllvmlite.so'",
scipy's in "seems to be broken", a thread in "can't start new thread". This module recognises
those symptoms (anywhere in an exception's chain), reads the limits in effect and words one
message with what to do. Standard library only: it must work when numpy itself cannot load."""

from __future__ import annotations

import errno
import os
import resource
import sys
from pathlib import Path

# what running out of memory looks like besides MemoryError and ENOMEM: a shared library
# (numpy's, scipy's, numba's llvmlite) whose segments cannot be mapped, a failed mmap, a thread
# that cannot get its stack
_SYMPTOMS = ("cannot allocate memory", "can't start new thread", "failed to map segment", "out of memory")
_UNLIMITED = 2**62  # cgroup v1 writes "no limit" as a number near 2**63


def exception_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling, outermost first."""
    chain: list[BaseException] = []
    while exc is not None and exc not in chain:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    return chain


def memory_symptom(exc: BaseException) -> BaseException | None:
    """The exception in ``exc``'s chain that shows memory ran out, or None; the innermost one,
    which names what could not be loaded rather than repeating it in a longer story."""
    for link in reversed(exception_chain(exc)):
        if isinstance(link, MemoryError) or getattr(link, "errno", None) == errno.ENOMEM:
            return link
        if isinstance(link, (OSError, ImportError, RuntimeError)) and any(
                text in str(link).lower() for text in _SYMPTOMS):
            return link
    return None


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


def _cgroup_memory_max(root: Path = Path("/sys/fs/cgroup"), proc_cgroup: Path = Path("/proc/self/cgroup")) -> int | None:
    """This process's cgroup memory limit in bytes (cgroup v2 memory.max, else v1
    memory.limit_in_bytes), or None when there is none or it cannot be read."""
    candidates = []
    try:
        for line in proc_cgroup.read_text().splitlines():
            hierarchy, controllers, path = line.split(":", 2)
            if hierarchy == "0":
                candidates.append(root / path.lstrip("/") / "memory.max")
    except (OSError, ValueError):
        pass
    candidates += [root / "memory.max", root / "memory" / "memory.limit_in_bytes"]
    for candidate in candidates:
        try:
            text = candidate.read_text().strip()
        except OSError:
            continue
        return None if text == "max" or int(text) >= _UNLIMITED else int(text)
    return None


def memory_limits() -> str:
    """The memory limits this process runs under, in words."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    address_space = "unlimited" if soft == resource.RLIM_INFINITY else _mib(soft)
    cgroup = _cgroup_memory_max()
    return (f"address-space limit (ulimit -v) {address_space}, "
            f"cgroup memory limit {'none' if cgroup is None else _mib(cgroup)}")


def out_of_memory_message(what: str, exc: BaseException, rule: str | None = None, mem_mb: int | None = None) -> str:
    """One message for ``exc`` (which memory_symptom recognised): what failed, the limits in
    effect and what to do."""
    symptom = memory_symptom(exc) or exc
    asked = f"more than its mem_mb={mem_mb}" if mem_mb else "more memory"
    return (f"out of memory: {what} failed with {type(symptom).__name__}: {str(symptom) or 'no memory left'}; "
            f"limits in effect: {memory_limits()}. Raise the limit, run fewer jobs or threads at once "
            f"(a lower --cores), or, on a cluster, give the rule {asked} "
            f"(--set-resources {rule or 'RULE'}:mem_mb=N); then run again")


# Snakemake itself, before any job, needs about this much address space: with 2 cores it could
# not start its job threads at a 781 MiB limit ("can't start new thread") and ran the default
# pipeline on one fold at 1074 MiB
WORKFLOW_MIN_ADDRESS_SPACE = 2**30


def workflow_memory_problem(exc: BaseException | None = None) -> str | None:
    """Why Snakemake cannot load or run the workflow for lack of memory, in words, or None: an
    address-space limit below :data:`WORKFLOW_MIN_ADDRESS_SPACE`, or ``exc`` (raised loading the
    Snakefile's imports) showing memory ran out."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY and soft < WORKFLOW_MIN_ADDRESS_SPACE:
        why = f"the address-space limit (ulimit -v) is {_mib(soft)}, too little for Snakemake itself"
    elif exc is not None and (symptom := memory_symptom(exc)) is not None:
        why = f"loading the workflow failed with {type(symptom).__name__}: {symptom}"
    else:
        return None
    return (f"rankstudy: out of memory: {why} (it needs about {_mib(WORKFLOW_MIN_ADDRESS_SPACE)} before any "
            f"job starts, and each job more); limits in effect: {memory_limits()}. Raise the limit "
            f"(ulimit -v unlimited) and run again")


def thread_start_message(who: str = "snakemake") -> str:
    """What to do when ``who`` could not start a thread ("can't start new thread"): under a memory
    or process limit that is how running out shows, without a word about memory."""
    processes = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    return (f"rankstudy: out of memory: {who} could not start a thread: too little address space or too many "
            f"processes for the limits it runs under ({memory_limits()}, ulimit -u "
            f"{'unlimited' if processes == resource.RLIM_INFINITY else processes}). Raise them (ulimit -v "
            f"unlimited), or run fewer jobs at once (--cores 1, or CORES=1 with bootstrap.py run); then run again")


def thread_start_failed(log_files) -> bool:
    """Whether a Snakemake log (a path in ``log_files``) shows that Snakemake itself could not start
    a thread: its error as Snakemake words it ("RuntimeError in file ...:" then the message alone)
    or a traceback's last line, not a failed job's own line (``rankstudy RULE: out of memory:
    ... can't start new thread``, which a shown job log repeats)."""
    for path in log_files:
        try:
            lines = Path(path).read_text(errors="replace").splitlines()
        except OSError:
            continue
        if any(line.strip() in ("can't start new thread", "RuntimeError: can't start new thread") for line in lines):
            return True
    return False


def say_at_exit_if_a_thread_could_not_start(log_files) -> None:
    """At exit, print :func:`thread_start_message` if Snakemake's log (``log_files()``, read
    then) shows it could not start a thread: its scheduler raises then, and no hook of the
    Snakefile runs (no onerror), so the last line says what ran out and what to do."""
    import atexit

    def say() -> None:
        if thread_start_failed(log_files()):
            print(thread_start_message(), file=sys.stderr)

    atexit.register(say)


# glibc's M_ARENA_MAX (malloc.h): how many malloc arenas threads share
_M_ARENA_MAX = -8


def spare_address_space() -> bool:
    """Under an address-space limit (ulimit -v), make each thread of this process and of the jobs it
    starts reserve less of it. glibc gives a thread that allocates its own 64 MiB malloc arena
    (reserved, not used, but counted by the limit): Snakemake, which holds a thread per running job
    besides numpy's OpenBLAS threads, reached 1.4 GiB of address space on the default study with 2
    cores, and under ``ulimit -v 1048576`` could not start its threads. Here threads share two
    arenas (``mallopt`` for this process, ``MALLOC_ARENA_MAX`` for the jobs). Returns whether a
    limit is in effect."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return False
    os.environ.setdefault("MALLOC_ARENA_MAX", "2")
    try:
        import ctypes

        ctypes.CDLL(None).mallopt(_M_ARENA_MAX, int(os.environ["MALLOC_ARENA_MAX"]))
    except (OSError, AttributeError, ValueError):  # not glibc: nothing to tune
        pass
    return True


def current_job():
    """The ``snakemake`` object of the Snakemake job script being run, or None outside one."""
    job = getattr(sys.modules.get("__main__"), "snakemake", None)
    return job if hasattr(job, "rule") and hasattr(job, "log") else None


def _explaining_hook(previous):
    def hook(kind, exc, traceback):
        previous(kind, exc, traceback)
        job = current_job()
        if job is not None and memory_symptom(exc) is not None:
            rule = str(job.rule)
            mem_mb = getattr(getattr(job, "resources", None), "mem_mb", None)
            print(f"rankstudy {rule}: " + out_of_memory_message(f"starting the {rule} job", exc, rule, mem_mb),
                  file=sys.stderr)
    hook.explains_memory_errors = True
    return hook


def explain_memory_errors_of_jobs() -> None:
    """In a Snakemake job script, follow an uncaught memory error (say, numpy failing to import
    under a small limit, before the job's own error handling has started) with the message
    above. Elsewhere nothing changes."""
    if current_job() is not None and not getattr(sys.excepthook, "explains_memory_errors", False):
        sys.excepthook = _explaining_hook(sys.excepthook)
