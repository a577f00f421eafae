"""The kyoto-hash recipe (`hbl workloads capture kyoto-hash`): a hash store updated in place.

Kyoto Cabinet's file hash database keeps a bucket array and the records in one file, reached
through a memory map for its first 64 MiB and pread/pwrite beyond. An update of a record that
keeps its size rewrites it where it is; one that grows moves it to a free block or the end of
the file, and the automatic defragmentation slides records together behind it. Every update
transaction is durable: before a region is changed its old content goes to the write-ahead log,
and the commit syncs the database file and truncates the log. Keys are hashed, so the hot keys
lie anywhere in the file. The disk sees random in-place reads and writes of the same skewed
pages, log appends and a sync each commit: the regime of a write-heavy key-value store, which
the read-mostly LMDB of lmdb-kv is not. Halfway the popularity changes (another skew, other hot keys).
"""
from hbl.trace.recipes.base import Recipe, Step

PY = "/usr/bin/python3"
KEYS = 600_000

#: the database loaded (not captured): KEYS records of 1,000-2,000 bytes in key order, in four times as many
#: buckets (a new key whose bucket is taken reads the record there: at 2.5 M records of 400 B in 5 M buckets
#: the load read at random for minutes)
LOAD = r'''import os, random, sys
import kyotocabinet as kc
path, n = sys.argv[1], int(sys.argv[2])
db = kc.DB()
if not db.open(path + "#bnum=2400000#dfunit=8", kc.DB.OWRITER | kc.DB.OCREATE):
    sys.exit("open %s: %s" % (path, db.error()))
rnd = random.Random(0)
blob = os.urandom(1 << 20)
for i in range(n):
    size = rnd.randrange(1000, 2000)
    off = (i * 7919) % ((1 << 20) - size)
    db.set(b"%016d" % i, blob[off:off + size])
db.synchronize(True)
print("loaded", db.count(), "records,", db.size(), "bytes")
db.close()
'''

#: the mix, one process (the database file is locked to it): reader threads (gets) and a writer thread
#: (transactions of 50 updates to new sizes, committed with a sync); argv: database, keys, exponent,
#: spread, readers, random seed and, for a bounded run, writer transactions (-1: until stopped)
MIX = r'''import math, os, random, signal, sys, threading
import kyotocabinet as kc
path, n, s, spread, readers, seed = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
rounds = int(sys.argv[7]) if len(sys.argv) > 7 else -1
top = n ** (1.0 - s) - 1.0
mult = int(n * spread) | 1          # rank r is key (r * mult) mod n: another spread, other hot keys
while math.gcd(mult, n) != 1:
    mult += 2


def key(rnd):
    """A key by a bounded power law of exponent s over ranks 1..n (inversion of its continuous CDF)."""
    r = int((1.0 + rnd.random() * top) ** (1.0 / (1.0 - s))) - 1
    return b"%016d" % (min(r, n - 1) * mult % n)


db = kc.DB(kc.DB.GCONCURRENT)       # the methods release the interpreter lock: the threads run together
if not db.open(path + "#dfunit=8", kc.DB.OWRITER):
    sys.exit("open %s: %s" % (path, db.error()))
done = threading.Event()
failed = []
# the capture ends a phase with SIGTERM: the writer finishes its transaction and the database is closed, so
# the next phase opens it clean (killed, Kyoto Cabinet rebuilds the whole file at the next open)
signal.signal(signal.SIGTERM, lambda *_: done.set())


def reader(i):
    rnd = random.Random(seed * 100 + i)
    while not done.is_set():
        for _ in range(100):
            db.get(key(rnd))


def writer():
    rnd = random.Random(seed)
    blob = os.urandom(1 << 16)
    todo = rounds
    while todo and not done.is_set():
        todo -= 1
        if not db.begin_transaction(True):
            failed.append(str(db.error()))
            break
        for _ in range(50):
            size = rnd.randrange(1000, 2000)
            off = rnd.randrange((1 << 16) - size)
            db.set(key(rnd), blob[off:off + size])
        if not db.end_transaction(True):
            failed.append(str(db.error()))
            break
    done.set()


threads = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(readers)]
for t in threads:
    t.start()
writer()
for t in threads:
    t.join()
print("records", db.count(), "size", db.size())
if failed or not db.close():
    sys.exit("kyoto-hash: %s" % (failed or [db.error()])[0])
'''


class KyotoHash(Recipe):
    name, application, package = "kyoto-hash", "Kyoto Cabinet (python3-kyotocabinet)", "libkyotocabinet16v5"
    runs = ("a Kyoto Cabinet file hash database of 600,000 records of 1,000-2,000 B (about 0.9 GiB, 2.4 M buckets, "
            "automatic defragmentation): 1 reader thread getting keys by a power law (exponent 0.9, then 1.1 "
            "over other hot keys) and 1 writer thread of transactions of 50 updates to new sizes (1,000-2,000 B) "
            "by the same popularity, each committed with a sync (write-ahead log)")
    expected = "1 M records in about 4 minutes here (4.2 k/s at load 8-10), after about 80 s of loading"
    cache_bound = "memory cgroup of 128 MiB around the process: the database is about 7x it"
    memory_mib = 128
    fs_gib = 5
    binaries = ((PY, "python3"),
                ("/usr/lib/python3/dist-packages/kyotocabinet.cpython-3*.so", "python3-kyotocabinet"))

    def prepare(self, sc):
        sc.mkdir("kyoto", "root")
        sc.run([PY, sc.write_tmp("kyoto-load.py", LOAD), sc.path("kyoto", "db.kch"), str(KEYS)])
        sc.cold_cache()

    def _phase(self, sc, label, s, spread, share):
        mix = sc.write_tmp("kyoto-mix.py", MIX)
        return Step(label, [PY, mix, sc.path("kyoto", "db.kch"), str(KEYS), str(s), str(spread), "1", "7"], share)

    def steps(self, sc):
        return [self._phase(sc, "skew-0.9", 0.9, 0.618034, 0.5), self._phase(sc, "skew-1.1", 1.1, 0.414214, 1.0)]
