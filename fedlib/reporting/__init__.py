"""Reporting for the reproduction pipeline: paper reference values, tables, figures, claim checks, report pages.

Modules:
  profiles       read an artefact's settings block from params.yaml (profile + overrides), check notebook parameters
  tables         rounds/communication-to-target aggregation over seeds, "> cap" cells, markdown tables
  figures        seaborn style, curve and cost plots, PNG + SVG with a caption line
  claims         confirmed / refuted / inconclusive verdicts with evidence and fixed decision rules
  report         artefact header (scale + stand-ins), metadata JSON, the reports/README.md index
  paper_fadamgt  the FAdamGT paper's printed Table 1 values, settings and captions (data)
  fadamgt        the FAdamGT artefacts: run grids, builders and writers used by notebooks/fadamgt_*.ipynb
"""
