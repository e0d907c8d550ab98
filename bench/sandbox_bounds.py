"""What one sandboxed run may take as a whole, measured: prints JSON.

``python bench/sandbox_bounds.py`` runs three attacks through :func:`assay.sandbox.run_python`
(the real bubblewrap sandbox) and reports, for each, the bound the run recorded and what the
code managed:

* memory: three children each touching 900 MB, against ``memory_mb=2048`` (the issue's
  reproduction held 2,338 MB); how many held their block at once, the run's peak;
* disk: 960 MB written to the scratch in 48 MB files (``disk_mb=512``): how much was written
  before the file system said no, and whether any of it reached the host's disk;
* processes: a fork bomb (children that sleep) against ``processes=64``: how many it started.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import time

from assay.sandbox import Limits, describe_isolation, run_python

MEMORY = """
import os
ready_r, ready_w = os.pipe()
release_r, release_w = os.pipe()
children = []
for i in range(3):
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        block = bytearray(900 * 1024 * 1024)
        for k in range(0, len(block), 4096):
            block[k] = 1
        os.write(ready_w, b"h")
        os.close(ready_w)
        os.read(release_r, 1)
        os._exit(0)
    children.append(pid)
os.close(ready_w)
held = 0
while os.read(ready_r, 1):
    held += 1
alive = [p for p in children if os.waitpid(p, os.WNOHANG) == (0, 0)]
print(held, len(alive), flush=True)
for p in children:
    try:
        os.kill(p, 9)
    except ProcessLookupError:
        pass
"""

DISK = """
import errno, os
written = 0
chunk = b"x" * (1024 * 1024)
try:
    for i in range(20):
        with open(f"f{i}", "wb") as f:
            for _ in range(48):
                f.write(chunk)
                f.flush()
                written += 1
except OSError as e:
    print(written, errno.errorcode.get(e.errno, e.errno))
else:
    print(written, "none")
"""

FORKS = """
import os, time
n = 0
while n < 1000:  # far past the bound, short of harm where nothing bounds it
    try:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
    except OSError as e:
        break
    n += 1
print(n, flush=True)
os._exit(0)
"""


async def main() -> dict:
    out: dict = {"sandbox": describe_isolation()}
    lim = Limits(timeout_s=120, cpu_s=60, memory_mb=2048)
    t0 = time.perf_counter()
    r = await run_python("m.py", files={"m.py": MEMORY}, limits=lim)
    words = r.stdout.split()
    out["memory"] = {"tried": "3 children x 900 MB touched", "bound": r.bounds["memory"],
                     "held_in_turn": int(words[0]) if words else None,
                     "held_at_once": int(words[1]) if len(words) > 1 else None,
                     "peak_mb": r.peak_memory_mb, "exit_code": r.exit_code,
                     "seconds": round(time.perf_counter() - t0, 2)}
    lim = Limits(timeout_s=120, cpu_s=60, disk_mb=512)
    free_before = shutil.disk_usage(tempfile.gettempdir()).free
    t0 = time.perf_counter()
    r = await run_python("d.py", files={"d.py": DISK}, limits=lim)
    words = r.stdout.split()
    out["disk"] = {"tried": "960 MB in 20 files of 48 MB", "bound": r.bounds["disk"],
                   "written_mb": int(words[0]) if words else None,
                   "stopped_by": words[1] if len(words) > 1 else r.stderr[-200:],
                   "host_disk_change_mb": round(
                       (free_before - shutil.disk_usage(tempfile.gettempdir()).free) / 2**20),
                   "seconds": round(time.perf_counter() - t0, 2)}
    lim = Limits(timeout_s=120, cpu_s=60, processes=64)
    t0 = time.perf_counter()
    r = await run_python("f.py", files={"f.py": FORKS}, limits=lim)
    out["processes"] = {"tried": "fork until refused (each child sleeps)",
                        "bound": r.bounds["processes"], "started": r.stdout.strip(),
                        "seconds": round(time.perf_counter() - t0, 2)}
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main()), indent=2))
