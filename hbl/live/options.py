"""The options of a live device's controller, in one place: hbl up's flags and their defaults."""
import dataclasses


@dataclasses.dataclass
class Options:
    policy: str = None          # None: the one in the metadata
    params: dict = None         # None: the metadata's
    agent: str = None           # agents file to load (else the device's saved agents, if any)
    interval: float = 0.25      # seconds between migration batches
    max_batch: int = 8          # moves per batch at most
    frontier: int = 4           # unwritten extents after a first write remapped to where new data goes
    copy_rate: int = None       # bytes/s the adaptive copy limit starts at (None: $HBL_COPY_RATE or 64 MiB/s)
    copy_limit: int = None      # bytes/s the copies never exceed (None: the adaptive limit only)
    copy_fixed: int = None      # bytes/s the copies always get (the adaptive limit off)
    copy_depth: int = 2         # a batch's copies in flight at once (each waits behind the HDD's queue)
    seed: int = 1
    # the most of one CPU the agents' online training takes (its thread sleeps after each step in
    # proportion; 0: no limit, it trains every train_every decisions as fast as it can).  Live
    # only: the simulator trains inline on its fixed schedule
    train_budget: float = 0.1
