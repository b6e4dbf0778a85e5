"""Measuring: retrieval metrics and answer metrics on the goldset, the HTML report."""
