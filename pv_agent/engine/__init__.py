"""The answering engine: plain Python, no Odoo imports. Stages as packages, see docs/architecture.md."""
