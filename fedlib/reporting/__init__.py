"""Generic reporting machinery of the reproduction pipeline; each paper's artefacts live in fedlib/papers/<paper>/.

Modules:
  artefact   who an artefact is (paper, name, params section, DVC stage, notebook, report and run-cache folders)
  schema     the keys an artefact's params.yaml block may hold, checked before anything runs
  profiles   read an artefact's block from params.yaml (profile + overrides), check notebook parameters
  grid       the generic config builder: RunConfig dicts from a block (run < hparams < dataset entry < swept keys)
  describe   words for report headers: dataset stand-ins and settings phrases
  tables     rounds/communication-to-target aggregation over seeds, "> cap" cells, markdown tables
  figures    seaborn style, curve and cost plots, PNG + SVG with a caption line
  claims     confirmed / refuted / inconclusive verdicts with evidence and fixed decision rules
  report     artefact header (scale + stand-ins), metadata JSON, the reports/README.md index
  notebook   the shared notebook steps (start, runs, artefact, claims) and the notebook template
  atomic_files  an artefact's files all together or not at all: staging folder, checks, one commit, renames
  index      `python -m fedlib.reporting.index reports` writes reports/README.md
  stages     `python -m fedlib.reporting.stages > dvc.yaml`: one stage per artefact
  dvc_metrics  each stage's DVC metrics file: verdict counts, checks, paired seeds (derived from the artefact json)
  readme_table  README's artefact table, generated from params.yaml (`--write README.md`)
  performance  docs/performance.md's stage-time table, from dvc.lock and the run records (`--write`)
"""
