"""Settings → Index-Speicher: SQLite-Datei / PostgreSQL. Switching reindexes into the other
store while questions keep using the old one; a PostgreSQL without pgvector is named as such.

Debian 12's PostgreSQL (Odoo's test server here) has no pgvector: the switch itself runs only
where the test database has it (e.g. ``PGHOST=<tools/pg-test-server's socket> tools/test-odoo``);
the refusal is tested where it has not."""
import psycopg2

from odoo.exceptions import UserError
from odoo.tests import Form, tagged

from ..engine.retrieval.retrieve import retrieve
from ..services import index_access, odoo_settings
from .common import PvAgentCase


def has_pgvector(dbname) -> bool:
    conn = psycopg2.connect(index_access.odoo_dsn(dbname))
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            return cur.fetchone() is not None
    finally:
        conn.close()


def drop_pg_index(dbname):
    """The engine writes through its own connection: its tables outlive the test transaction."""
    conn = psycopg2.connect(index_access.odoo_dsn(dbname))
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE 'pv\\_index\\_%'")
        for (table,) in cur.fetchall():
            cur.execute(f'DROP TABLE IF EXISTS "{table}" CASCADE')
        cur.execute("DROP SEQUENCE IF EXISTS pv_index_build_seq")
    conn.close()


@tagged("post_install", "-at_install")
class TestIndexStore(PvAgentCase):
    def settings_form(self):
        return Form(self.env["res.config.settings"].with_user(self.admin))

    def active(self):
        return index_access.active_store(self.env.cr.dbname, self.env)

    def test_sqlite_file_is_the_default_store(self):
        form = self.settings_form()
        self.assertEqual((form.pv_agent_index_store, form.pv_agent_index_store_active), ("sqlite", "sqlite"))
        self.assertEqual(index_access.index_target(self.env.cr.dbname, self.env), self.sidecar)

    def test_odoo_dsn_points_at_this_database(self):
        dsn = index_access.odoo_dsn(self.env.cr.dbname)
        self.assertTrue(dsn.startswith("postgresql://"))
        conn = psycopg2.connect(dsn)
        with conn.cursor() as cur:
            cur.execute("SELECT current_database()")
            self.assertEqual(cur.fetchone()[0], self.env.cr.dbname)
        conn.close()

    def test_choosing_postgresql_without_pgvector_is_refused_naming_the_extension(self):
        if has_pgvector(self.env.cr.dbname):
            self.skipTest("this PostgreSQL has pgvector")
        self.import_kb()
        self.reindex()
        form = self.settings_form()
        form.pv_agent_index_store = "postgresql"
        with self.assertRaisesRegex(UserError, r"pgvector \(Name 'vector'\) ist auf dem Datenbankserver nicht installiert"):
            form.save().execute()
        self.assertEqual(self.active(), "sqlite")
        self.assertFalse(self.Job.search([("kind", "=", "reindex"), ("state", "=", "queued")]))
        with index_access.using_index(self.env.cr.dbname, self.env) as index:
            self.assertEqual(index.stats()["entries"], 3, "questions keep the sidecar")

    def test_reindex_into_postgresql_without_pgvector_fails_and_the_old_store_keeps_answering(self):
        if has_pgvector(self.env.cr.dbname):
            self.skipTest("this PostgreSQL has pgvector")
        self.import_kb()
        self.reindex()
        # chosen while the extension was there, removed since: the run says what is missing
        self.env["ir.config_parameter"].sudo().set_param(index_access.PARAM_STORE, "postgresql")
        with self.assertLogs("odoo.addons.pv_agent.models.pv_agent_index_job", "ERROR"):
            job = self.reindex()
        self.assertEqual(job.state, "failed")
        self.assertIn("pgvector", job.message)
        self.assertIn("bisherige Index bleibt in Betrieb", job.message)
        self.assertEqual(self.active(), "sqlite")
        with index_access.using_index(self.env.cr.dbname, self.env) as index:
            self.assertEqual(retrieve(index, "Jahressechstel", odoo_settings.engine_settings(self.env)).ids[0], "pv-sz-02")

    def test_switching_to_postgresql_reindexes_and_keeps_answering(self):
        if not has_pgvector(self.env.cr.dbname):
            self.skipTest("no pgvector on this PostgreSQL (Debian 12's has none; see docs/pgstore.md)")
        self.addCleanup(drop_pg_index, self.env.cr.dbname)
        self.import_kb()
        self.reindex()
        form = self.settings_form()
        form.pv_agent_index_store = "postgresql"
        form.save().execute()
        queued = self.Job.search([("kind", "=", "reindex"), ("state", "=", "queued")])
        self.assertEqual(len(queued), 1, "the switch queues a reindex")
        self.assertEqual(self.active(), "sqlite", "questions stay on the sidecar until it completes")
        with index_access.using_index(self.env.cr.dbname, self.env) as index:
            self.assertEqual(index.stats()["path"], self.sidecar)

        self.run_cron("pv_agent.ir_cron_pv_agent_reindex")
        self.assertEqual(queued.state, "done", queued.message)
        self.assertEqual(self.active(), "postgresql")
        settings = odoo_settings.engine_settings(self.env)
        with index_access.using_index(self.env.cr.dbname, self.env) as index:
            stats = index.stats()
            self.assertEqual((stats["store"], stats["entries"], stats["mode"]), ("postgresql", 3, "hybrid"))
            self.assertEqual(retrieve(index, "Jahressechstel", settings).ids[0], "pv-sz-02")
        self.assertEqual(self.settings_form().pv_agent_index_entries, 3)

        # and back: the sidecar is brought up to date, then serves again
        form = self.settings_form()
        form.pv_agent_index_store = "sqlite"
        form.save().execute()
        self.assertEqual(self.active(), "postgresql")
        self.run_cron("pv_agent.ir_cron_pv_agent_reindex")
        self.assertEqual(self.active(), "sqlite")
