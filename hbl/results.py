"""hbl.results, a documented import path. The code is hbl.experiments.results
(hbl/experiments/results.py), where it moved when hbl/ was grouped into sub-packages (issue 27);
this module only re-exports its public names, and nothing inside hbl imports it.
(regroup.py: compatibility module)"""
from hbl.experiments.results import (JOURNAL, CELL_COLUMNS, FIRST, FORMATS, flatten, tidy_row,
                                     read_journal, from_compare, from_journal, enrich, write,
                                     parquet_available, read, load)  # noqa: F401
