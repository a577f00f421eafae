"""The lmdb-kv recipe (`hbl workloads capture lmdb-kv`): a memory-mapped B+tree read by popularity.

LMDB maps its database file and serves reads straight from the page cache: a read of a key not
in the cache is a page fault that reads one 4 KiB page (readahead off, as LMDB advises for a
database larger than memory). Three reader processes look keys up by a Zipf-like popularity
(a bounded power law, the hot keys spread over the file) with now and then a short range scan,
while one writer updates keys of the same popularity in small transactions, each committed with
a sync (LMDB's copy-on-write: the updated pages are written to free pages, then the meta page).
The database is 11 times the memory cgroup, so the disk sees the cache's misses: skewed
re-reads of the warm keys that do not fit, at distances a fast device of a tenth of the footprint
holds (in a 256 MiB cgroup most of them were longer: results/workloads/lmdb-kv.txt), the regime
where keeping a page that was read once pays. Halfway the popularity changes (another skew, other hot keys).
"""
from hbl.trace.recipes.base import Recipe

PY = "/usr/bin/python3"
KEYS = 3_000_000
VALUE = 400

#: the database loaded in key order (not captured): append-mode puts, a commit every 50,000
LOAD = r'''import os, sys
import lmdb
db, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
env = lmdb.open(db, map_size=16 << 30, readahead=False)
blob = os.urandom(1 << 20)
for lo in range(0, n, 50000):
    with env.begin(write=True) as txn:
        for i in range(lo, min(n, lo + 50000)):
            off = (i * 7919) % ((1 << 20) - size)
            txn.put(b"%016d" % i, blob[off:off + size], append=True)
env.sync(True)
print("loaded", env.stat())
'''

#: one process of the mix: a reader (lookups and scans) or the writer (update transactions); argv: database,
#: role, keys, exponent, spread, random seed and, for a bounded run, transactions
MIX = r'''import math, os, random, sys, time
import lmdb
db, role, n, s, spread, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
rounds = int(sys.argv[7]) if len(sys.argv) > 7 else -1     # transactions to run (-1: until stopped)
rnd = random.Random(seed)
top = n ** (1.0 - s) - 1.0
# rank r is key (r * mult) mod n, mult about spread * n and coprime to n: the hot keys spread over the
# whole file, one to a page, and a phase of another spread has other hot keys
mult = int(n * spread) | 1
while math.gcd(mult, n) != 1:
    mult += 2


def key():
    """A key by a bounded power law of exponent s over ranks 1..n (inversion of its continuous CDF)."""
    r = int((1.0 + rnd.random() * top) ** (1.0 / (1.0 - s))) - 1
    return b"%016d" % (min(r, n - 1) * mult % n)


if role == "keys":     # the keys the others would ask for, one a line (tests/test_workloads.py)
    sys.stdout.write("".join(key().decode() + "\n" for _ in range(rounds)))
    sys.exit()
env = lmdb.open(db, map_size=16 << 30, readahead=False, max_readers=64)
if role == "writer":
    blob = os.urandom(1 << 16)
    while rounds:
        rounds -= 1
        with env.begin(write=True) as txn:
            for _ in range(20):
                off = rnd.randrange((1 << 16) - 400)
                txn.put(key(), blob[off:off + 400])
        time.sleep(0.05)
else:
    while rounds:
        rounds -= 1
        with env.begin(buffers=True) as txn:
            for _ in range(100):
                if rnd.random() < 0.03:
                    cur = txn.cursor()
                    cur.set_range(key())
                    for _ in range(50):
                        if not cur.next():
                            break
                else:
                    txn.get(key())
'''

#: the step: three readers and the writer, until the capture stops them (Recipe.together)
ROUNDS = r"""for i in 1 2 3; do {py} {mix} {db} reader {n} {s} {spread} $i & done
{py} {mix} {db} writer {n} {s} {spread} 9 &
"""


class LmdbKv(Recipe):
    name, application, package = "lmdb-kv", "LMDB (py-lmdb)", "liblmdb0"
    runs = ("LMDB with 3 M keys x 400 B loaded in order (about 1.4 GiB, readahead off): 3 reader processes "
            "looking keys up by a power law (exponent 0.9, then 1.1 over other hot keys), 3% of them 50-key "
            "range scans, and 1 writer updating 20 keys of the same popularity a transaction, a synced commit "
            "and a 50 ms pause after each")
    expected = "1 M requests in about 2 minutes here (7-11 k/s at load 5), after about 10 s of loading"
    cache_bound = ("memory cgroup of 128 MiB around the readers and the writer (their own memory in it too): the "
                   "database is 11x the cgroup, and a fast device of 10% of the footprint is larger than the cache")
    memory_mib = 128
    fs_gib = 6
    binaries = ((PY, "python3"), ("/usr/lib/python3/dist-packages/lmdb/__init__.py", "python3-lmdb"))

    def prepare(self, sc):
        sc.mkdir("lmdb", "root")
        sc.run([PY, sc.write_tmp("lmdb-load.py", LOAD), sc.path("lmdb"), str(KEYS), str(VALUE)])
        sc.cold_cache()

    def _phase(self, sc, label, s, spread, share):
        mix = sc.write_tmp("lmdb-mix.py", MIX)
        script = ROUNDS.format(py=PY, mix=mix, db=sc.path("lmdb"), n=KEYS, s=s, spread=spread)
        return self.together(sc, label, script, share)

    def steps(self, sc):
        return [self._phase(sc, "skew-0.9", 0.9, 0.618034, 0.5), self._phase(sc, "skew-1.1", 1.1, 0.414214, 1.0)]
