"""Bringing a live device up on this host: device-mapper and eBPF capture usable, the
members the devices the metadata names, the dm device assembled from the mapping."""
import os

from dmsetup import backend
from hbl.errors import HblError
from hbl.live import layout
from hbl.live.meta import parse_superblock, read_head
from hbl.live.stack import Stack


def preflight():
    """Device-mapper and eBPF capture are usable here, or an HblError says why (nothing written yet)."""
    from hbl.capture import check_environment
    if not os.path.exists("/dev/mapper/control"):
        os.system("modprobe dm_mod 2>/dev/null")
    try:
        backend().close()
    except OSError as exc:
        raise HblError("device-mapper is not available here: %s.  (On hosts without it, use the VM: "
                       "hbl vm run -- hbl up ...)" % exc) from None
    check_environment()


# ---- assembling the dm device from metadata ----

def check_members(meta):
    """Each member path carries the superblock of this device at its position."""
    for i, m in enumerate(meta.members):
        try:
            sb = parse_superblock(read_head(m["path"]))
        except OSError as exc:
            raise HblError("%s (member %d of %s): %s" % (m["path"], i, meta.name, exc.strerror)) from None
        if sb is None or sb.get("damaged") or sb["uuid"] != meta.uuid or sb["index"] != i:
            what = "no hbl superblock" if sb is None else "a damaged superblock" if sb.get("damaged") else \
                "member %d of device %s" % (sb["index"], sb["uuid"][:8])
            raise HblError("%s should be member %d of %s (%s) but holds %s: were the devices renamed? "
                           "nothing was changed" % (m["path"], i, meta.name, meta.uuid[:8], what))
        if layout.device_size(m["path"]) < m["size"]:
            raise HblError("%s: smaller than when %s was created" % (m["path"], meta.name))


def assemble(meta, dm=None):
    """Make /dev/mapper/NAME serve the mapping in `meta`: create its devices, or load and resume
    what is left of them; returns the Stack."""
    return Stack(meta, dm or backend()).assemble(meta)

