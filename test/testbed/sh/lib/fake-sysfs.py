#!/usr/bin/python3
"""A writable fake of kernel-wide sysfs knobs for one test-bed host, served over FUSE (stdlib only).

The bed's /sys is the runner's kernel: its kernel-wide knobs (transparent hugepages, KSM, cpufreq)
are read-only in a host, or would leak to the runner and every other bed host. This serves, per
host, the same files with the kernel's formats and write semantics that families depend on:

  transparent_hugepage/enabled, defrag   `always [madvise] never`: writing a word selects it in
                                         brackets; an unknown word is EINVAL (as sysfs)
  ksm/run                                0, 1 or 2, anything else EINVAL
  cpuN/scaling_governor                  one of scaling_available_governors, else EINVAL
  cpuN/scaling_available_governors       read-only (open for writing: EACCES)

State lives in this process only: a host "reboot" (a new pid namespace) starts a new server from
the kernel defaults given on the command line. Not modelled: the kernel effect of a value (no
hugepage is ever made), a write split over several write() calls (sysfs takes each call as a
whole value; so does this), poll/inotify, other files of these directories.

Usage: fake-sysfs.py MOUNTPOINT NCPUS THP_ENABLED THP_DEFRAG
  (THP_* in the kernel's bracket format, the default at boot); prints "ready" once mounted.
"""
import ctypes
import errno
import os
import stat
import struct
import sys
import time

# FUSE opcodes (include/uapi/linux/fuse.h)
LOOKUP, FORGET, GETATTR, SETATTR = 1, 2, 3, 4
OPEN, READ, WRITE, STATFS, RELEASE, FLUSH = 14, 15, 16, 17, 18, 25
INIT, OPENDIR, READDIR, RELEASEDIR, ACCESS = 26, 27, 28, 29, 34
INTERRUPT, DESTROY, BATCH_FORGET = 36, 38, 42
NO_REPLY = {FORGET, INTERRUPT, BATCH_FORGET}
FOPEN_DIRECT_IO = 1  # every read reaches us: the value is never a stale page
IN_HEADER = struct.Struct('<IIQQIIII')  # len, opcode, unique, nodeid, uid, gid, pid, padding
OUT_HEADER = struct.Struct('<IiQ')  # len, error, unique
ATTR = struct.Struct('<QQQQQQIIIIIIIIII')


class Select:
    """A word among choices, shown with the chosen one in brackets."""

    def __init__(self, shown):
        words = shown.split()
        self.choices = [w.strip('[]') for w in words]
        chosen = [w.strip('[]') for w in words if w.startswith('[')]
        self.value = chosen[0] if chosen else self.choices[0]

    def read(self):
        return ' '.join(f'[{c}]' if c == self.value else c for c in self.choices) + '\n'

    def write(self, text):
        if text not in self.choices:
            return errno.EINVAL
        self.value = text
        return 0


class Value:
    """A plain value among the allowed ones (None: read-only)."""

    def __init__(self, value, allowed):
        self.value, self.allowed = value, allowed

    def read(self):
        return self.value + '\n'

    def write(self, text):
        if self.allowed is None:
            return errno.EACCES
        if text not in self.allowed:
            return errno.EINVAL
        self.value = text
        return 0


GOVERNORS = 'conservative ondemand userspace powersave performance schedutil'


def build_tree(ncpus, thp_enabled, thp_defrag):
    """{path: knob or None for a directory}; '' is the root."""
    tree = {'': None, 'transparent_hugepage': None, 'ksm': None}
    tree['transparent_hugepage/enabled'] = Select(thp_enabled)
    tree['transparent_hugepage/defrag'] = Select(thp_defrag)
    tree['ksm/run'] = Value('0', ['0', '1', '2'])
    for c in range(ncpus):
        tree[f'cpu{c}'] = None
        tree[f'cpu{c}/scaling_governor'] = Value('schedutil', GOVERNORS.split())
        tree[f'cpu{c}/scaling_available_governors'] = Value(GOVERNORS, None)
    return tree


class Server:
    def __init__(self, fd, tree):
        self.fd = fd
        self.tree = tree
        self.paths = list(tree)  # inode = index + 1 (the root is 1)
        self.t = int(time.time())

    def ino(self, path):
        return self.paths.index(path) + 1

    def attr(self, ino):
        knob = self.tree[self.paths[ino - 1]]
        if knob is None:
            mode, size, nlink = stat.S_IFDIR | 0o755, 0, 2
        else:
            writable = not (isinstance(knob, Value) and knob.allowed is None)
            mode, size, nlink = stat.S_IFREG | (0o644 if writable else 0o444), 4096, 1
        t = self.t
        return ATTR.pack(ino, size, 0, t, t, t, 0, 0, 0, mode, nlink, 0, 0, 0, 4096, 0)

    def reply(self, unique, err=0, body=b''):
        os.write(self.fd, OUT_HEADER.pack(OUT_HEADER.size + len(body), -err, unique) + body)

    def serve(self):
        while True:
            try:
                req = os.read(self.fd, 1 << 17)
            except OSError as e:
                if e.errno in (errno.ENOENT, errno.EINTR, errno.EAGAIN):
                    continue
                return  # ENODEV: unmounted
            _, op, unique, node, uid, _, _, _ = IN_HEADER.unpack_from(req)
            arg = req[IN_HEADER.size :]
            if op in NO_REPLY:
                continue
            if op == DESTROY:
                self.reply(unique)
                return
            try:
                err, body = self.handle(op, node, arg)
            except Exception:  # a bug here must not hang the host's readers
                err, body = errno.EIO, b''
            try:
                self.reply(unique, err, body if err == 0 else b'')
            except OSError:
                pass  # the request was interrupted

    def handle(self, op, node, arg):
        if op == INIT:
            major, minor = struct.unpack_from('<II', arg)
            out = struct.pack('<IIIIHHIIHHI', 7, min(minor, 31), 0, 0, 0, 0, 4096, 1, 0, 0, 0)
            return 0, out + b'\0' * (64 - len(out))
        path = self.paths[node - 1] if 0 < node <= len(self.paths) else None
        if path is None:
            return errno.ENOENT, b''
        if op == LOOKUP:
            name = arg.split(b'\0', 1)[0].decode()
            child = f'{path}/{name}' if path else name
            if child not in self.tree:
                return errno.ENOENT, b''
            ino = self.ino(child)
            return 0, struct.pack('<QQQQII', ino, 0, 1, 1, 0, 0) + self.attr(ino)
        if op in (GETATTR, SETATTR):  # SETATTR: the truncate of `>`; sysfs ignores it too
            return 0, struct.pack('<QII', 1, 0, 0) + self.attr(node)
        knob = self.tree[path]
        if op in (OPEN, OPENDIR):
            flags = struct.unpack_from('<I', arg)[0]
            if knob is not None and flags & os.O_ACCMODE != os.O_RDONLY and isinstance(knob, Value) and knob.allowed is None:
                return errno.EACCES, b''
            return 0, struct.pack('<QII', 0, FOPEN_DIRECT_IO if op == OPEN else 0, 0)
        if op == READ:
            _, offset, size = struct.unpack_from('<QQI', arg)
            return 0, knob.read().encode()[offset : offset + size]
        if op == WRITE:
            _, _, size = struct.unpack_from('<QQI', arg)
            data = arg[40 : 40 + size]
            err = knob.write(data.decode(errors='replace').strip())
            return err, struct.pack('<II', size, 0)
        if op == READDIR:
            _, offset, size = struct.unpack_from('<QQI', arg)
            prefix = f'{path}/' if path else ''
            children = [p for p in self.paths if p.startswith(prefix) and p and p != path and '/' not in p[len(prefix) :]]
            out = b''
            for i, child in enumerate(children[offset:], start=offset + 1):
                name = child[len(prefix) :].encode()
                kind = 4 if self.tree[child] is None else 8  # DT_DIR, DT_REG
                ent = struct.pack('<QQII', self.ino(child), i, len(name), kind) + name
                ent += b'\0' * (-len(ent) % 8)
                if len(out) + len(ent) > size:
                    break
                out += ent
            return 0, out
        if op == STATFS:
            return 0, struct.pack('<QQQQQIII', 0, 0, 0, 0, 0, 4096, 255, 4096) + b'\0' * 28
        if op in (RELEASE, RELEASEDIR, FLUSH, ACCESS):
            return 0, b''
        return errno.ENOSYS, b''


def main():
    mountpoint, ncpus, thp_enabled, thp_defrag = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    fd = os.open('/dev/fuse', os.O_RDWR)
    libc = ctypes.CDLL(None, use_errno=True)
    opts = f'fd={fd},rootmode=40000,user_id=0,group_id=0,allow_other,default_permissions'
    MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
    if libc.mount(b'tb-fake-sysfs', mountpoint.encode(), b'fuse', MS_NOSUID | MS_NODEV | MS_NOEXEC, opts.encode()) != 0:
        e = ctypes.get_errno()
        sys.exit(f'fake-sysfs: mount {mountpoint}: {os.strerror(e)}')
    server = Server(fd, build_tree(ncpus, thp_enabled, thp_defrag))
    print('ready', flush=True)
    sys.stdout.close()
    server.serve()


if __name__ == '__main__':
    main()
