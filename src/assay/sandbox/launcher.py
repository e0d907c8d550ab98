"""The first program in the sandbox (``python -I -c``, stdlib only): unpack the inputs (a tar on
stdin, then ``/dev/null``, so only the scratch copy holds them), drop privileges, limit, exec."""

import errno
import json
import os
import resource
import sys
import tarfile

#: exit status when the inputs do not fit the scratch folder (it is a size-capped tmpfs)
NO_SPACE = 125


def _inside(root, name):
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or name.startswith("/") or ".." in parts:
        return None
    return os.path.join(root, *parts)


def _write(tar, member, path):
    src = tar.extractfile(member)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        while True:
            chunk = src.read(1 << 20)
            if not chunk:
                break
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]
        os.fchmod(fd, member.mode & 0o7777)
    finally:
        os.close(fd)


def unpack(root, stream):
    """Unpack ``stream`` into ``root``; unmakeable entries skipped, a full disk exits NO_SPACE."""
    folders = []
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        for member in tar:
            path = _inside(root, member.name)
            if path is None:
                continue
            try:
                if member.isdir():
                    try:
                        os.mkdir(path, 0o700)
                    except FileExistsError:
                        pass
                    folders.append((path, member.mode & 0o7777))
                elif member.issym():
                    os.symlink(member.linkname, path)
                elif member.isreg():
                    _write(tar, member, path)
            except OSError as e:
                if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                    print("assay sandbox: the inputs do not fit the scratch folder",
                          file=sys.stderr)
                    sys.exit(NO_SPACE)
                # anything else (a name too long, say): that entry is left out
    for path, mode in reversed(folders):  # the deepest first: a read-only folder last
        try:
            os.chmod(path, mode | 0o700)
        except OSError:
            pass


def main():
    cfg = json.loads(sys.argv[1])
    uid = cfg["uid"]
    if uid is not None:
        os.chown(cfg["root"], uid, uid)  # the scratch tmpfs, made by bwrap as root
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    unpack(cfg["root"], sys.stdin.buffer)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.chdir(cfg["work"])
    mb = 1024 * 1024
    lim = cfg["limits"]
    for name, value in (("RLIMIT_CPU", lim["cpu_s"]), ("RLIMIT_AS", lim["memory_mb"] * mb),
                        ("RLIMIT_FSIZE", lim["file_mb"] * mb),
                        ("RLIMIT_NOFILE", lim["open_files"]),
                        ("RLIMIT_NPROC", lim["processes"])):
        resource.setrlimit(getattr(resource, name), (value, value))
    os.execv(cfg["argv"][0], cfg["argv"])


if __name__ == "__main__":
    main()
