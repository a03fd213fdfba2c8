"""One package per replicated paper: `fedlib/papers/<paper>/`.

    __init__.py     PAPER (title, authors, venue, docs/papers/<paper>.md) and ARTEFACTS (names in report order)
    reference.py    the paper's printed numbers, settings and captions (data only, transcribed exactly)
    <artefact>.py   one table or figure: PARAMS (its params.yaml keys), DESC and what its DVC stage needs
                    (fedlib/reporting/artefact.py), cells(settings) (its labelled run configurations,
                    fedlib/reporting/grid.py) and configs(settings) (their distinct configurations),
                    build(records, settings) (each record carrying its cell's labels: record["labels"]),
                    write(result, settings, out_dir) ending in report.write_artefact, and the paper's claims checked
                    on the reproduced numbers

The generic machinery (config builder and labels, accuracy tables, tables, figures, claims engine, report headers,
params schema, notebook steps) is in fedlib/reporting/. docs/extending.md (section 3, `fedlib scaffold`) is the recipe.
"""
