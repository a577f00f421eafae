"""The fio jobs of the live bench and the simulator check, by name (bench_live.py runs them in the
guest, scripts/simcheck.py names them on the host).  Every job is one fio job of 4 KiB random
reads and writes at queue depth 4 from seed 42, so its offsets follow from the seed alone and a
capture on another disk sees the same sequence; offset and size are of the live device's logical
space (1519 MiB: 506 extents of 1 MiB on the NVMe, the rest on the HDD, the first ones fast)."""

DEFAULT = "zipf70"
JOBS = {
    # the live bench's job: 70% reads, Zipf(1.2) over 800 MiB that starts on the HDD (1.6x the fast device)
    "zipf70": {"rwmixread": 70, "zipf": 1.2, "offset_mib": 600, "size_mib": 800},
    # the simulator check's second workload, chosen before any figure: read-mostly (90%), a weaker skew
    # (Zipf 0.9) over 1400 MiB, 2.8x the fast device, 406 MiB of it on the NVMe at first: a hot set
    # larger than the fast device, where the first job's fits in it
    "zipf90-wide": {"rwmixread": 90, "zipf": 0.9, "offset_mib": 100, "size_mib": 1400},
}


def describe(name):
    j = JOBS[name]
    return "fio randrw %d%% reads, 4 KiB, zipf:%g over %d MiB from %d MiB, qd 4" % (
        j["rwmixread"], j["zipf"], j["size_mib"], j["offset_mib"])


def fio_args(name):
    """fio's options for the job (its offset aside: the caller's device decides it)."""
    j = JOBS[name]
    return ["--rw=randrw", "--rwmixread=%d" % j["rwmixread"], "--bs=4k", "--iodepth=4",
            "--size=%d" % (j["size_mib"] << 20), "--random_distribution=zipf:%g" % j["zipf"], "--randseed=42"]
