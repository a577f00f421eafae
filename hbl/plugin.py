"""hbl.plugin, a documented import path. The code is hbl.sim.plugin
(hbl/sim/plugin.py), where it moved when hbl/ was grouped into sub-packages (issue 27);
this module only re-exports its public names, and nothing inside hbl imports it.
(regroup.py: compatibility module)"""
from hbl.sim.plugin import (View, Policy, attach, PluginError, check, hbl_py_place, hbl_py_migrate,
                            load_policy)  # noqa: F401
