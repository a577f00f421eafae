"""The live hybrid block device: `hbl up` / `down` / `status` / `top`.

    decider.py     the C policies deciding for real extents (moves out)
    meta.py        the persistent mapping: versioned, checksummed, atomic
    layout.py      extents, slots and the dm-linear table built from them
    safety.py      refusals: mounted, in use, signatures
    stack.py       the dm-switch over its three views, and routing messages
    copier.py      O_DIRECT copy jobs with a latency-aware bandwidth limit
    paths.py       where a device's files live (state and run directories)
    host.py        dm and eBPF usable, members checked, the device assembled
    options.py     the controller's options (hbl up's flags)
    controller.py  the control loop: capture -> decider -> batches of moves
    observe.py     the records read: observed, or searched while extents are held
    batch.py       one batch of moves: copy, settle, hold, drain, recopy, persist, release, switch
    open_writes.py member writes of unknown completion
    in_flight.py   requests not yet seen completed on a member
    faults.py      members that err or are removed
    status.py      the running device's status file
"""
