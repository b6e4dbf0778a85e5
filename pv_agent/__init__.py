# Odoo imports this package as ``odoo.addons.pv_agent``; the command-line tools and the
# engine tests import it as plain ``pv_agent`` on machines without Odoo. Only the Odoo
# layer needs Odoo, so it is loaded only when Odoo is the importer.
if __name__.startswith("odoo.addons."):
    from . import models
