import os

from odoo.tests import tagged

from ..services import index_access
from .common import PvAgentCase


@tagged("post_install", "-at_install")
class TestIndexJob(PvAgentCase):
    def test_reindex_is_queued_not_run_in_the_request(self):
        self.import_kb()
        cron = self.env.ref("pv_agent.ir_cron_pv_agent_reindex")
        triggers_before = self.env["ir.cron.trigger"].search_count([("cron_id", "=", cron.id)])
        action = self.env["res.config.settings"].with_user(self.admin).create({}).action_pv_agent_reindex()
        self.assertEqual(action["tag"], "display_notification")
        job = self.Job.browse(action["job_id"])
        self.assertEqual((job.kind, job.state), ("reindex", "queued"))
        self.assertEqual(self.env["ir.cron.trigger"].search_count([("cron_id", "=", cron.id)]), triggers_before + 1)
        self.assertFalse(os.path.exists(self.sidecar), "nothing is built inside the request")
        # asking again while one is queued does not queue a second job
        again = self.Job.with_user(self.manager).action_queue_reindex()
        self.assertEqual(again["job_id"], job.id)

    def test_reindex_job_builds_sidecar_and_clears_stale(self):
        self.import_kb()
        self.assertTrue(self.Job._index_is_stale())
        job = self.reindex()
        self.assertEqual(job.state, "done", job.message)
        self.assertEqual((job.entries, job.mode), (3, "hybrid"))
        self.assertGreater(job.chunks, 3)
        self.assertEqual(job.embedded, job.chunks)
        self.assertEqual(job.progress, 100.0)
        self.assertTrue(os.path.exists(self.sidecar))
        self.assertFalse(self.Entry.search([("stale", "=", True)]))
        self.assertFalse(self.Job._index_is_stale())

        settings = self.env["res.config.settings"].with_user(self.admin).create({})
        self.assertTrue(settings.pv_agent_index_exists)
        self.assertEqual(settings.pv_agent_index_entries, 3)
        self.assertEqual(settings.pv_agent_index_chunks, job.chunks)
        self.assertTrue(settings.pv_agent_index_vectors)
        self.assertTrue(settings.pv_agent_index_built_at)
        self.assertFalse(settings.pv_agent_index_stale)
        self.assertEqual(settings.pv_agent_last_job_id, job)

    def test_edit_marks_stale_and_incremental_reindex_embeds_only_the_change(self):
        self.import_kb()
        first = self.reindex()
        generation = index_access.index_stats("x")["generation"]
        with index_access.using_index(self.env.cr.dbname) as cached:
            self.assertEqual(cached.generation, generation)
        sz1 = self.Entry.search([("entry_id", "=", "pv-sz-01")])
        sz1.with_user(self.manager).write({"body": sz1.body.replace("Payroll-Relevanz (Odoo)\n",
                                                                    "Payroll-Relevanz (Odoo)\nNeu: Hinweis.\n")})
        self.assertTrue(sz1.stale)
        self.assertTrue(self.Job._index_is_stale())
        self.assertTrue(self.env["res.config.settings"].with_user(self.admin).create({}).pv_agent_index_stale)

        second = self.reindex()
        self.assertNotEqual(second, first)
        self.assertEqual(second.state, "done", second.message)
        self.assertEqual(second.embedded, 1, "only the changed section is embedded again")
        self.assertFalse(sz1.stale)
        self.assertGreater(index_access.index_stats("x")["generation"], generation)
        with index_access.using_index(self.env.cr.dbname) as again:
            self.assertIs(again, cached, "the process keeps its open index")
            self.assertGreater(again.generation, generation, "and notices the new generation")

        sz1.with_user(self.manager).action_archive()
        self.assertTrue(self.Job._index_is_stale(), "archiving takes an entry out of the index")
        self.reindex()
        self.assertEqual(index_access.index_stats("x")["entries"], 2)

    def test_asks_keep_the_old_index_when_the_rebuild_fails(self):
        self.import_kb()
        self.reindex()
        with index_access.using_index(self.env.cr.dbname) as index:
            generation = index.generation
        with self.assertLogs("odoo.addons.pv_agent.models.pv_agent_index_job", "ERROR"):
            with self._broken_build():
                self.Job.with_user(self.manager).action_queue_reindex(full=True)
                self.run_cron("pv_agent.ir_cron_pv_agent_reindex")
        failed = self.Job.search([("kind", "=", "reindex")], limit=1)
        self.assertEqual(failed.state, "failed")
        self.assertIn("bisherige Index bleibt in Betrieb", failed.message)
        self.assertIn("Platte voll", failed.message)
        self.assertTrue(failed.full)
        # index.db.arrays holds the serving generation's search arrays (memory-mapped by readers)
        left = sorted(set(os.listdir(os.path.dirname(self.sidecar))) - {"index.db.arrays"})
        self.assertEqual(left, ["index.db"], "no half-written file left")
        with index_access.using_index(self.env.cr.dbname) as index:
            self.assertEqual(index.generation, generation)
            self.assertEqual(index.stats()["entries"], 3)

    def test_unreachable_embedding_model_gives_lexical_index_with_notice(self):
        self.import_kb()
        self.ollama.embed_status = 500
        job = self.reindex()
        self.assertEqual((job.state, job.mode), ("done", "lexical"))
        self.assertIn("nur lexikalisch", job.message)
        self.assertFalse(self.env["res.config.settings"].with_user(self.admin).create({}).pv_agent_index_vectors)

    def _broken_build(self):
        from unittest.mock import patch

        from ..engine.index import indexer

        def boom(*args, **kwargs):
            raise OSError("Platte voll")

        # fails half-way through writing the new file, after the embeddings
        return patch.object(indexer.SidecarWriter, "insert_entry", boom)
