"""The changing tree the backup recipes (restic-backup, borg-backup) back up: a user's home directory.

TREE makes it (not captured) and changes it between two backups, as a day of use would: about 4,600 of
its 120,000 files by a power law over the files (some are edited every day, most never), each appended to (a log, a
mailbox) or rewritten whole (a document saved again), a few new files and a few deleted, and blocks
rewritten in place inside one large file (a virtual disk image). Files have log-normal sizes (median
4 KiB, a few of megabytes); three in five are incompressible (photos, archives), the rest text-like.
"""

PY = "/usr/bin/python3"
DIRS, FILES = 1200, 120_000
IMAGE_MIB = 64

#: argv: root, make | change, random seed (change: the day, so each day changes other files), files,
#: directories, MiB of the image
TREE = r'''import os, random, sys
root, role, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
FILES, DIRS, IMAGE = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]) << 20
rnd = random.Random(seed)
noise = random.Random(0).randbytes(1 << 24)
words = ["%x" % (w * 2654435761 % 999983) for w in range(4096)]
text = (" ".join(random.Random(1).choices(words, k=1 << 19)) + "\n").encode()


def content(size):
    src = noise if rnd.random() < 0.6 else text
    off = rnd.randrange(len(src) - size) if size < len(src) else 0
    return src[off:off + size]


def size():
    return min(int(rnd.lognormvariate(8.3, 1.5)), 8 << 20)


def path(i):
    return os.path.join(root, "d%03d" % (i % DIRS), "f%06d" % i)


if role == "make":
    for d in range(DIRS):
        os.makedirs(os.path.join(root, "d%03d" % d))
    for i in range(FILES):
        with open(path(i), "wb") as f:
            f.write(content(size()))
    with open(os.path.join(root, "disk.img"), "wb") as f:
        for _ in range(IMAGE >> 20):
            f.write(content(1 << 20))
    print("made", FILES, "files")
    sys.exit()
changed = set()
for _ in range(FILES // 20):                    # a power law over the files: rank r is file (r * 7919) mod FILES
    changed.add(min(int(FILES * rnd.random() ** 4), FILES - 1) * 7919 % FILES)
for i in changed:
    p = path(i)
    if not os.path.exists(p) or rnd.random() < 0.4:
        with open(p, "wb") as f:                 # saved again (or made again)
            f.write(content(size()))
    else:
        with open(p, "ab") as f:                 # appended to
            f.write(content(min(size(), 1 << 16)))
for _ in range(FILES // 400):                   # new files, and files deleted
    i = FILES + rnd.randrange(FILES)
    with open(path(i), "wb") as f:
        f.write(content(size()))
    gone = path(rnd.randrange(2 * FILES))
    if os.path.exists(gone):
        os.unlink(gone)
with open(os.path.join(root, "disk.img"), "r+b") as f:   # a guest's writes to its disk image
    hot = rnd.randrange(IMAGE >> 22)
    for _ in range(400):
        block = (hot << 10) + rnd.randrange(1 << 10) if rnd.random() < 0.7 else rnd.randrange(IMAGE >> 12)
        f.seek(block << 12)
        f.write(content(4096))
os.sync()
print("day", seed, "changed", len(changed), "files")
'''
#: TREE's arguments after the seed
SHAPE = [str(FILES), str(DIRS), str(IMAGE_MIB)]
