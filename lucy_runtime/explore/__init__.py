"""What learners look at: tables, a restart experiment, saved evidence and an explorer widget.

Nothing here judges anything; the checker does. These are windows onto the files.
One module per job: ``views`` (the tables), ``restart`` (the restart experiment),
``evidence`` (predictions and observations saved beside the notebook) and ``widget``
(the explorer). The notebooks import every name from here.
"""

from .evidence import Evidence
from .restart import after_restart
from .views import show, table_names, tables, tables_html
from .widget import Explorer

__all__ = ["Evidence", "Explorer", "after_restart", "show", "table_names", "tables", "tables_html"]
