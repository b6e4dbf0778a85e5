# Odoo imports this package as ``odoo.addons.pv_agent``; the command-line tools and the
# engine tests import it as plain ``pv_agent`` on machines without Odoo. Only the Odoo
# layer needs Odoo, so it is loaded only when Odoo is the importer.
if __name__.startswith("odoo.addons."):
    from . import models


def uninstall_hook(env):
    """Remove what the ORM does not know: the PostgreSQL store's ``pv_index_*`` tables and the
    database's sidecar index (with its folder)."""
    import os
    import shutil

    from .services import index_access

    index_access.forget_indexes()
    cr = env.cr
    cr.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE %s",
               ["pv\\_index\\_%"])
    for (table,) in cr.fetchall():
        cr.execute(f'DROP TABLE IF EXISTS "{table}" CASCADE')  # noqa: S608 - names from pg_tables, quoted
    folder = os.path.dirname(index_access.index_path(cr.dbname))
    shutil.rmtree(folder, ignore_errors=True)
