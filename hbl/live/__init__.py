"""The live hybrid block device: `hbl up` / `down` / `status` / `top`.

    engine.py      the C policies deciding for real extents (moves out)
    meta.py        the persistent mapping: versioned, checksummed, atomic
    layout.py      extents, slots and the dm-linear table built from them
    safety.py      refusals: mounted, in use, signatures
    copier.py      O_DIRECT copy jobs with a latency-aware bandwidth limit
    controller.py  capture -> engine -> copy + suspend/remap/persist/resume
"""
