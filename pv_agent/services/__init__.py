"""The one seam between Odoo and the engine (plain functions, no models).

- ``odoo_settings``: engine settings from Odoo's config parameters, the knowledge-base folder, the
  time budget of a cron run;
- ``cron_budget``: when the current batch of cron jobs began (Odoo's watchdog counts from there);
- ``index_access``: where the index lives (sidecar file or Odoo's PostgreSQL), this thread's open
  handle (``using_index``), statistics;
- ``engine_calls``: the engine names and calls the models use, engine failures worded for the UI;
- ``answer_html``: an answer's markdown as safe HTML with citation links.

Models (``pv_agent/models``) call the engine only through these modules; the seam never imports
a model module (tests/test_layout.py checks both).
"""
