"""How many times files are opened, as the kernel reports it (Linux inotify, through ctypes):
an observable of what ffn does with a checkpoint's files, from outside the library."""
import contextlib
import ctypes
import os
import struct

_IN_OPEN, _IN_CLOSE_NOWRITE = 0x20, 0x10


@contextlib.contextmanager
def counted(*paths):
    """Within the block, counts opens of each path; yields a dict path → opens, filled when
    the block ends. Every open is followed by its close before the next (ffn maps a file and
    closes it), so the kernel never merges two open events into one."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "inotify_init1")
    try:
        watches = {}
        for p in paths:
            wd = libc.inotify_add_watch(fd, os.fsencode(p), _IN_OPEN | _IN_CLOSE_NOWRITE)
            if wd < 0:
                raise OSError(ctypes.get_errno(), f"inotify_add_watch {p}")
            watches[wd] = p
        opens = {p: 0 for p in paths}
        yield opens
        while True:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                break
            at = 0
            while at < len(data):
                wd, mask, _cookie, length = struct.unpack_from("iIII", data, at)
                at += 16 + length
                if mask & _IN_OPEN and wd in watches:
                    opens[watches[wd]] += 1
    finally:
        os.close(fd)
